"""How to run the recommendation: code snippets for a strategy, in the user's framework.

``snippets(spec)`` returns ``HowTo`` items: the PyTorch snippet (DDP, or FSDP2 ``fully_shard``),
the ``torchrun`` command, and — for DeepSpeed users — a DeepSpeed JSON config and an accelerate
FSDP config beside it. Every Python snippet parses (tests/test_howto.py ``ast.parse``s each
strategy x precision x checkpointing x HSDP combination and runs the tiny-model variant under
torchrun with gloo). The only numbers are the setup's own (nodes, GPUs per node). The items'
titles are wording (``howto.*`` in the message catalogs); the code, its comments and the command
lines are code, written here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from bot.answer import HowTo
from bot.answer.catalog import wording
from bot.strategies import TRAINING_STRATEGIES

_DTYPES = {"bf16-mixed": "torch.bfloat16", "fp16-mixed": "torch.float16"}
# DeepSpeed ZeRO stage and offload for each strategy (docs/decision.md, "DeepSpeed vocabulary").
ZERO_STAGE = {"ddp": 0, "fsdp_shard_grad_op": 2, "fsdp_full_shard": 3, "fsdp_hybrid_shard": 3,
              "fsdp_full_shard_offload": 3}
# accelerate's fsdp_sharding_strategy names (accelerate FSDP plugin)
_ACCELERATE = {"fsdp_full_shard": "FULL_SHARD", "fsdp_shard_grad_op": "SHARD_GRAD_OP",
               "fsdp_hybrid_shard": "HYBRID_SHARD", "fsdp_full_shard_offload": "FULL_SHARD"}


@dataclass(frozen=True)
class SnippetSpec:
    strategy: str
    nodes: int = 1
    gpus_per_node: int = 8
    precision: str | None = "bf16-mixed"
    checkpointing: bool = False
    bucket_view: bool = False  # DDP gradient_as_bucket_view=True + fused AdamW
    # torch.optim AdamW implementation the figures assumed (the setup's optimizer_impl); None: the
    # calculator's default, foreach (torch.optim's CUDA default), or fused for the bucket-view variant.
    optimizer_impl: str | None = None
    device: str = "cuda"  # "cpu" for the runnable test variant (gloo); "cuda" means the accelerator
    # The card's torch device and torch.distributed backend (bot.catalog GPUSpec.device_type/.backend):
    # cuda + nccl for NVIDIA and AMD (ROCm builds keep the cuda API, RCCL behind "nccl"), npu + hccl
    # for Ascend (torch_npu), hpu + hccl for Gaudi (habana_frameworks).
    device_type: str = "cuda"
    backend: str = "nccl"


# Imports that register a non-CUDA device and its collective backend with torch.
# Ascend: https://github.com/Ascend/pytorch (torch_npu); Gaudi: https://docs.habana.ai/en/latest/PyTorch/
_DEVICE_IMPORTS = {
    "npu": ["import torch_npu  # noqa: F401  (Ascend: the npu device and the hccl backend)"],
    "hpu": ["import habana_frameworks.torch.core  # noqa: F401  (Gaudi: the hpu device)",
            "import habana_frameworks.torch.distributed.hccl  # noqa: F401  (the hccl backend)"],
}


def python_snippet(spec: SnippetSpec) -> str:
    """The training-script part: process group, wrapping, optimizer. Valid Python."""
    s = spec.strategy
    accel = spec.device == "cuda"  # an accelerator (CUDA/ROCm, Ascend or Gaudi), not the CPU test variant
    dev = spec.device_type if accel else "cpu"
    cuda = accel and dev == "cuda"
    backend = spec.backend if accel else "gloo"
    dtype = _DTYPES.get(spec.precision or "")
    lines = ["import os", "", "import torch", "import torch.distributed as dist"]
    if accel:
        lines += _DEVICE_IMPORTS.get(dev, [])
    if s == "ddp":
        lines.append("from torch.nn.parallel import DistributedDataParallel as DDP")
    else:
        imports = ["fully_shard", "MixedPrecisionPolicy"]
        if s == "fsdp_full_shard_offload":
            imports.append("CPUOffloadPolicy")
        lines.append(f"from torch.distributed.fsdp import {', '.join(imports)}")
        if s == "fsdp_hybrid_shard":
            lines.append("from torch.distributed.device_mesh import init_device_mesh")
    if spec.checkpointing:
        lines.append("from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper")
    lines += ["", f'dist.init_process_group("{backend}")', 'local_rank = int(os.environ["LOCAL_RANK"])']
    if cuda or dev == "npu":
        lines.append(f"torch.{dev}.set_device(local_rank)")
    lines.append("model = build_model()  # your model; blocks in model.layers")
    if spec.checkpointing:
        lines += ["for i, block in enumerate(model.layers):  # recompute each block's activations in backward",
                  "    model.layers[i] = checkpoint_wrapper(block)"]
    if s == "ddp":
        device = {"cuda": "model.cuda()", "npu": "model.npu()", "hpu": 'model.to("hpu")'}.get(dev, "model")
        ids = ", device_ids=[local_rank]" if cuda or dev == "npu" else ""
        bucket = ", gradient_as_bucket_view=True" if spec.bucket_view else ""
        lines.append(f"model = DDP({device}{ids}{bucket})")
        if dtype:
            lines.append(f'# run forward under torch.autocast("{dev}", dtype={dtype})')
    else:
        kwargs = []
        if dtype:
            lines.append(f"mp = MixedPrecisionPolicy(param_dtype={dtype}, reduce_dtype=torch.float32)")
            kwargs.append("mp_policy=mp")
        if s == "fsdp_hybrid_shard":
            mesh_device = dev
            lines.append("# replicate across nodes, shard inside a node")
            lines.append(f'mesh = init_device_mesh("{mesh_device}", ({spec.nodes}, {spec.gpus_per_node}), '
                         'mesh_dim_names=("replicate", "shard"))')
            kwargs.append("mesh=mesh")
        if s == "fsdp_shard_grad_op":
            lines.append("# SHARD_GRAD_OP: keep parameters gathered between forward and backward")
            kwargs.append("reshard_after_forward=False")
        if s == "fsdp_full_shard_offload":
            kwargs.append("offload_policy=CPUOffloadPolicy()")
        joined = "".join(", " + k for k in kwargs)
        lines += ["for block in model.layers:  # one FSDP unit per transformer block",
                  f"    fully_shard(block{joined})",
                  f"fully_shard(model{joined})"]
    # The implementation the memory figures assumed (bot/calc/memory.py: foreach keeps a
    # parameter-sized temporary, fused none); fused kernels exist for CUDA tensors only.
    impl = spec.optimizer_impl or ("fused" if spec.bucket_view else "foreach")
    if impl == "fused" and not cuda:
        impl = "foreach"
    flag = {"fused": "fused=True", "foreach": "foreach=True", "forloop": "foreach=False"}[impl]
    lines.append(f"optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, {flag})")
    if spec.precision == "fp16-mixed":
        lines.append("scaler = torch.amp.GradScaler()  # fp16 needs loss scaling")
    return "\n".join(lines)


def torchrun_command(spec: SnippetSpec) -> str:
    if spec.nodes > 1:
        return (f"torchrun --nnodes {spec.nodes} --nproc_per_node {spec.gpus_per_node} --rdzv_backend c10d "
                "--rdzv_endpoint $MASTER_ADDR:$MASTER_PORT train.py")
    return f"torchrun --standalone --nproc_per_node {spec.gpus_per_node} train.py"


def deepspeed_config(spec: SnippetSpec) -> str:
    """The DeepSpeed JSON for the same strategy: ZeRO stage (and offload) per ``ZERO_STAGE``."""
    zero: dict[str, object] = {"stage": ZERO_STAGE.get(spec.strategy, 0), "overlap_comm": True}
    if spec.strategy == "fsdp_full_shard_offload":
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    config: dict[str, object] = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                                 "zero_optimization": zero}
    if spec.precision in ("bf16-mixed", "bf16"):
        config["bf16"] = {"enabled": True}
    elif spec.precision == "fp16-mixed":
        config["fp16"] = {"enabled": True}
    if spec.checkpointing:
        config["activation_checkpointing"] = {"partition_activations": False}
    return json.dumps(config, indent=2)


def accelerate_config(spec: SnippetSpec) -> str:
    """An accelerate config (YAML) for the FSDP strategy; DDP is accelerate's MULTI_GPU."""
    lines = [f"num_machines: {spec.nodes}", f"num_processes: {spec.nodes * spec.gpus_per_node}"]
    mixed = {"bf16-mixed": "bf16", "fp16-mixed": "fp16"}.get(spec.precision or "", "no")
    lines.append(f"mixed_precision: {mixed}")
    if spec.strategy == "ddp":
        return "\n".join(["distributed_type: MULTI_GPU", *lines])
    return "\n".join([
        "distributed_type: FSDP", *lines, "fsdp_config:",
        "  fsdp_version: 2",
        f"  fsdp_reshard_after_forward: {'false' if spec.strategy == 'fsdp_shard_grad_op' else 'true'}",
        f"  fsdp_offload_params: {'true' if spec.strategy == 'fsdp_full_shard_offload' else 'false'}",
        "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP",
        f"  fsdp_activation_checkpointing: {'true' if spec.checkpointing else 'false'}",
        f"  # sharding strategy in FSDP1 terms: {_ACCELERATE.get(spec.strategy, 'FULL_SHARD')}",
    ])


def snippets(spec: SnippetSpec, *, deepspeed: bool = False, language: str = "en") -> list[HowTo]:
    """The how-to items for ``spec`` (empty for ``none``/``out_of_scope``)."""
    if spec.strategy not in TRAINING_STRATEGIES:
        return []
    # (the PyTorch snippet's title is the API's name, the same in either language)
    out = [HowTo(title="PyTorch (FSDP2)" if spec.strategy != "ddp" else "PyTorch (DDP)", language="python",
                 code=python_snippet(spec)),
           HowTo(title=wording(language, "howto.launch"), language="bash", code=torchrun_command(spec))]
    if deepspeed:
        out.append(HowTo(title=wording(language, "howto.deepspeed"), language="json", code=deepspeed_config(spec)))
        out.append(HowTo(title=wording(language, "howto.accelerate"), language="yaml", code=accelerate_config(spec)))
    return out


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))  # a TOML basic string: double quotes, JSON escapes


def torchtitan_toml_text(sections: dict[str, dict[str, object]]) -> str:
    """torchtitan's job config sections as TOML text (``[parallelism]``, ``[activation_checkpoint]``;
    field names of torchtitan/config/job_config.py, values from bot.calc.parallel_ladder)."""
    blocks = []
    for name, fields in sections.items():
        blocks.append("\n".join([f"[{name}]", *(f"{key} = {_toml_value(v)}" for key, v in fields.items())]))
    return "\n\n".join(blocks)


def torchtitan_items(sections: dict[str, dict[str, object]], launch: tuple[str, ...], *,
                     language: str = "en") -> list[HowTo]:
    """How to run a TP/CP/PP plan with torchtitan: the TOML sections to put in the job config and
    the torchrun line (the degrees also as command-line overrides)."""
    if not sections or not launch:
        return []
    return [HowTo(title=wording(language, "howto.torchtitan"), language="toml", code=torchtitan_toml_text(sections)),
            HowTo(title=wording(language, "howto.torchtitan_launch"), language="bash",
                  code=" \\\n    ".join(launch))]


def markdown(items: list[HowTo]) -> str:
    return "\n\n".join(f"```{h.language}\n{h.code}\n```" for h in items)
