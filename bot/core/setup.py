"""TrainingSetup: the one description of a training run that parser, tools, UI and evals share.

Field names and units follow DESIGN.md. Every field may be unknown (``None``) because a question
rarely states everything; ``check_setup`` reports bad values one clear line per field, and
``resolve_setup`` fills what the calculator needs from the catalogs and stated defaults.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from bot.catalog import GPUSpec, ModelSpec, UnknownNameError, lookup_gpu, lookup_model
from bot.catalog.accelerators import dgx_node_nic_gbps, memory_variant
from bot.catalog.kernel_defaults import default_attn_implementation, default_norm_impl, sdpa_supported
from bot.core.errors import UserError

Precision = Literal["bf16-mixed", "fp16-mixed", "bf16", "fp32"]
Optimizer = Literal["adamw", "sgd", "adam8bit"]
Finetune = Literal["full", "lora", "qlora"]
IntraLink = Literal["nvlink", "pcie"]
InterLink = Literal["infiniband", "ethernet", "none"]

# Sane bounds: beyond these a value is a typo or a joke, and we say so instead of computing.
LIMITS: dict[str, tuple[float, float]] = {
    "params_b": (0.001, 100_000),  # 1M .. 100T parameters
    "gpu_memory_gb": (1, 1024),
    "gpu_count": (1, 100_000),
    "gpus_per_node": (1, 64),
    "nodes": (1, 20_000),
    "inter_node_gbps": (0.1, 10_000),
    "seq_len": (1, 2_097_152),
    "micro_batch": (1, 65_536),
    "cpu_ram_gb": (1, 1_000_000),
    "lora_rank": (1, 4096),
    "checkpoint_every": (1, 1000),
    "grad_accum_steps": (1, 65_536),
    "mfu": (0.01, 1.0),
    "tensor_parallel": (1, 4096),
    "pipeline_parallel": (1, 4096),
    "context_parallel": (1, 4096),
}


class TrainingSetup(BaseModel):
    """A (possibly partial) training setup. ``None`` means "not stated"."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    model: str | None = None
    params_b: float | None = None
    gpu: str | None = None
    gpu_memory_gb: float | None = None
    gpu_count: int | None = None
    gpus_per_node: int | None = None
    nodes: int | None = None
    intra_node_link: IntraLink | None = None
    inter_node_link: InterLink | None = None
    inter_node_gbps: float | None = None
    precision: Precision | None = None
    optimizer: Optimizer | None = None
    finetune: Finetune | None = None
    seq_len: int | None = None
    micro_batch: int | None = None
    activation_checkpointing: bool | None = None
    cpu_ram_gb: float | None = None
    lora_rank: int | None = None
    # The options real runs use (issue 14); None means PyTorch's default, stated as assumed.
    optimizer_impl: Literal["foreach", "fused", "forloop"] | None = None  # torch.optim AdamW impl
    ddp_bucket_view: bool | None = None  # DDP gradient_as_bucket_view (PyTorch default False)
    checkpointing_policy: Literal["full", "every_k", "selective_op"] | None = None
    checkpoint_every: int | None = None  # k for "every_k": checkpoint every k-th block
    torch_compile: bool | None = None
    loss_impl: Literal["standard", "fused", "chunked"] | None = None  # cross-entropy over logits
    grad_accum_steps: int | None = None
    lora_targets: Literal["attention", "all_linear", "all_linear_but_o"] | None = None
    base_dtype: Literal["fp32", "bf16", "nf4"] | None = None  # frozen base weights under LoRA
    float8: bool | None = None  # torchao float8 linears and all-gathers
    mfu: float | None = None  # model FLOPs utilisation the user asserts (0..1)
    # fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32 = True or
    # torch.set_float32_matmul_precision("high")). None: PyTorch's default, off, so fp32 runs at the
    # CUDA-core fp32 rate (bot.catalog.accelerators.fp32_tflops); listed in ``assumed`` for fp32 runs.
    tf32: bool | None = None
    # FSDP2 gradient sync under gradient accumulation: "every_micro_step" (FSDP2's default, a
    # reduce-scatter per micro-batch into the sharded gradients) or "last_micro_step"
    # (``set_requires_gradient_sync(False)`` before the last micro-batch, as verl does: every
    # parameter keeps an unsharded gradient in the reduce dtype until the sync). Listed in
    # ``assumed`` when accumulating.
    grad_sync: Literal["every_micro_step", "last_micro_step"] | None = None
    # Attention kernel: "eager" (the s x s probabilities are kept for backward), "sdpa" or
    # "flash_attention_2" (a logsumexp only). None: transformers' default for the architecture
    # (bot/catalog/kernel_defaults.py: sdpa where supported; eager for Gemma-2 and BLOOM), listed in
    # ``assumed`` where that default is eager. A config's ``attn_implementation`` fills it.
    attn_implementation: Literal["eager", "sdpa", "flash_attention_2"] | None = None
    # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (torchtitan's launcher sets it): the caching
    # allocator grows segments in place and keeps fewer transient bytes reserved. None: off, PyTorch's
    # default (bot/calc/memory.py reserved_fraction).
    expandable_segments: bool | None = None
    # Whose modelling code runs a Llama-family block: "pytorch" (torch.nn.RMSNorm / F.rms_norm, as
    # bot/bench/model.py and torchtitan build it; the default) or "transformers" (Hugging Face's
    # LlamaDecoderLayer: its RMSNorm keeps the normalised tensor in the compute dtype, fewer bytes).
    model_code: Literal["pytorch", "transformers"] | None = None
    # PEFT's LoraConfig(lora_dropout=p), 0 <= p < 1: above 0 each adapter keeps a dropped copy of its
    # input and a 1-byte mask for backward (bot/calc/activations.py lora_dropout_bytes_per_token).
    # None: 0, PEFT's default.
    lora_dropout: float | None = None
    # The training loop keeps the model's output (its logits) alive through backward: "fp32" (a
    # transformers causal LM before v4.46 returns fp32-upcast logits), "16bit". None: the output is
    # dropped before backward, as HF Trainer does (bot/calc/activations.py kept_logits_bytes_per_logit).
    logits_kept: Literal["fp32", "16bit"] | None = None
    # RMSNorm/LayerNorm kernel: "eager" (PyTorch ops, fp32 internals saved) or "fused" (one kernel
    # saving only its input and rstd, e.g. torchtitan's fused_rmsnorm, Apex/Liger); calc-only option
    norm_impl: Literal["eager", "fused"] | None = None
    # The PyTorch release the run uses ("2.5", "2.13.0+cu130"): on CUDA from 2.10, F.rms_norm runs the
    # fused kernel, which sets the default norm_impl for blocks stated PyTorch-native (model_code "pytorch")
    # (bot/catalog/kernel_defaults.py default_norm_impl). None: the calculator's own (CALCULATOR_TORCH).
    torch_version: str | None = None
    # FSDP2 layout beyond one unit per block (calc-only options; None: the calculator's layout,
    # ``fully_shard(reshard_after_forward=True)`` on every block and on the root, as the simulator
    # runs). fsdp_root: "resharded" (that layout), "kept" (the root stays gathered from forward to
    # the end of backward: reshard_after_forward=None, and every root in 2024 PyTorch releases) or
    # "split" (embeddings and LM head are FSDP units of their own: torchtune's
    # custom_sharded_layers). reshard_after_forward for the blocks: True, False, or an int k, the
    # group size the blocks are resharded to after forward (a divisor of the shard group).
    fsdp_root: Literal["resharded", "kept", "split"] | None = None
    reshard_after_forward: bool | int | None = None
    # The optimizer steps each parameter inside backward, freeing its gradient at once
    # (torchtune optimizer_in_bwd; register_post_accumulate_grad_hook); default False.
    optimizer_in_backward: bool | None = None
    # Optimizer state in CUDA managed memory, paged to host RAM under pressure (bitsandbytes
    # PagedAdamW / PagedAdamW8bit); default False.
    paged_optimizer: bool | None = None
    # Whose sharding code runs the sharded strategies: PyTorch FSDP (None, the default) or
    # DeepSpeed ZeRO; SHARD_GRAD_OP then has ZeRO-2's memory layout (bot/calc/memory.py
    # ``deepspeed_layout``).
    engine: Literal["pytorch", "deepspeed"] | None = None
    # Parallelism the calculator does not model: a stated degree > 1 is named in the estimate's
    # ``not_modelled`` notices (figures then assume pure data parallelism), never silently dropped.
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    context_parallel: int | None = None

    def merged(self, newer: TrainingSetup) -> TrainingSetup:
        """This setup updated with every field ``newer`` states (for follow-up questions)."""
        data = self.model_dump()
        data.update({k: v for k, v in newer.model_dump().items() if v is not None})
        return TrainingSetup(**data)


# Every problem ``check_setup`` and ``resolve_setup`` (and the readers and the calculator's CLI) report:
# its code -> the figures and names it carries. The wording is data: ``problem.<code>`` in
# bot/answer/messages/{en,zh}.yaml, whose placeholders are exactly these slots (and ``words``, the
# value-in-words helper), so a missing figure fails where the Problem is built, not in an answer.
PROBLEM_SLOTS: dict[str, tuple[str, ...]] = {
    # a number the computation cannot use (LIMITS)
    "not_a_number": (),
    "not_finite": ("value",),
    "not_positive": ("value",),
    "out_of_range": ("value", "low", "high"),
    # names the catalogs do not have
    "unknown_model": ("name", "suggestions", "family", "sizes"),
    "unknown_gpu": ("name", "suggestions"),
    # contradictions within the setup
    "sdpa_unsupported": ("model",),
    "params_contradict": ("stated", "model", "catalog"),
    "memory_contradict": ("stated", "gpu", "catalog"),
    "no_bf16": ("gpu",),
    "count_contradict": ("count", "nodes", "per_node", "product"),
    "nodes_over_count": ("nodes", "count"),
    "no_inter_link": ("nodes",),
    # run options (issue 14)
    "policy_without_checkpointing": ("policy",),
    "every_not_every_k": ("every", "policy"),
    "every_without_checkpointing": (),
    "impl_with_8bit": ("impl",),
    "torch_version": ("version",),
    "lora_dropout": ("value",),
    "lora_option_full": ("option",),
    "qlora_base": ("base",),
    "in_backward_accum": (),
    "paged_impl": ("impl",),
    "reshard_group_small": ("group",),
    "reshard_not_divisor": ("group", "gpus"),
    "float8_fp32": (),
    "float8_gpu": ("gpu",),
    # what a computation cannot do without (resolve_setup)
    "size_unknown": (),
    "memory_unknown": (),
    "count_unknown": (),
    "uneven_per_node": ("count", "per_node"),
    "uneven_nodes": ("count", "nodes"),
    # a value the setup's own validation refused (pydantic's sentence, the figure's type)
    "invalid_value": ("detail",),
    # the reader and the question
    "said_both": ("shown",),
    "long_number": ("digits",),
    # the calculator's command line (bot/calc/cli.py)
    "cli_not_a_link": ("text",),
    "cli_not_a_speed": ("text",),
    "cli_config_and_model": (),
    "cli_reshard_value": ("text",),
    "cli_setup": ("detail",),
    "cli_plan_impossible": (),
    "cli_plan": ("detail",),
    "cli_config": ("detail",),
    "cli_config_unreadable": ("source", "detail"),
}


@dataclass(frozen=True)
class Problem:
    """One invalid or contradictory field: its code (``PROBLEM_SLOTS``) and the figures and names
    the code carries. Its sentence is the message catalogs' ``problem.<code>``: ``worded(lang)``
    says it in an answer's language, ``message`` in English (errors, logs, the CLI)."""

    field: str
    code: str
    values: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        slots = PROBLEM_SLOTS.get(self.code)
        if slots is None:
            raise ValueError(f"no problem code {self.code!r}")
        given = tuple(k for k, _ in self.values)
        if sorted(given) != sorted(slots):
            raise ValueError(f"problem {self.code!r} carries {slots}, got {given}")

    @classmethod
    def of(cls, field_name: str, code: str, **values: Any) -> Problem:
        """The problem ``code`` about ``field_name``, carrying ``values`` (its slots)."""
        return cls(field_name, code, tuple(values.items()))

    def worded(self, lang: str) -> str:
        """The sentence ``problem.<code>`` in ``lang``, its figures filled in (numbers in words)."""
        from bot.answer.catalog import render  # a leaf: the wording is data (YAML + Jinja), both languages
        from bot.figures import value_words

        return render(lang, f"problem.{self.code}",
                      {**dict(self.values), "words": lambda v: value_words(v, "zh" if lang == "zh" else "en")})

    @property
    def message(self) -> str:
        """The English sentence (errors, logs, the CLI)."""
        return self.worded("en")

    def value(self, slot: str) -> Any:
        return dict(self.values)[slot]

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def unknown_name_problem(field_name: str, err: UnknownNameError) -> Problem:
    """An unknown model or GPU name, with the closest catalog names (and a family's sizes)."""
    if err.kind == "model":
        family = err.family
        return Problem.of(field_name, "unknown_model", name=err.name, suggestions=tuple(err.suggestions),
                          family=family.name if family else "", sizes=tuple(family.sizes) if family else ())
    return Problem.of(field_name, "unknown_gpu", name=err.name, suggestions=tuple(err.suggestions))


class SetupError(UserError, ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def bad_values(setup: TrainingSetup) -> dict[str, float]:
    """The numeric fields of ``setup`` no computation can use: not a number, infinite, or not
    positive (each is reported by ``check_setup``)."""
    bad = {}
    for name in LIMITS:
        value = getattr(setup, name)
        if value is not None and not isinstance(value, bool) and (not math.isfinite(value) or value <= 0):
            bad[name] = value
    return bad


def usable_setup(setup: TrainingSetup) -> TrainingSetup:
    """``setup`` without the fields ``bad_values`` names: what an answer may show as read (an
    invalid answer says what was wrong in words and keeps no negative or non-finite value)."""
    bad = bad_values(setup)
    return setup.model_copy(update=dict.fromkeys(bad)) if bad else setup


def check_setup(setup: TrainingSetup) -> list[Problem]:
    """Every bad value and contradiction in ``setup``; empty when it is usable."""
    problems: list[Problem] = []
    for name, (low, high) in LIMITS.items():
        value = getattr(setup, name)
        if value is None:
            continue
        if value != value:  # NaN compares false with everything, so it would slip past the range check
            problems.append(Problem.of(name, "not_a_number"))
        elif value in (math.inf, -math.inf):
            problems.append(Problem.of(name, "not_finite", value=value))
        elif value <= 0:
            problems.append(Problem.of(name, "not_positive", value=value))
        elif value < low or value > high:
            problems.append(Problem.of(name, "out_of_range", value=value, low=low, high=high))
    # The checks below compare and print values: only with the ones that passed the range check
    # (a model size of 10^30 is out of range, not "1e+30B contradicts Llama-2-7B").
    setup = setup.model_copy(update={p.field: None for p in problems if p.field in LIMITS})

    model = gpu = None
    if setup.model:
        try:
            model = lookup_model(setup.model)
        except UnknownNameError as err:
            problems.append(unknown_name_problem("model", err))
    if setup.gpu:
        try:
            gpu = lookup_gpu(setup.gpu)
        except UnknownNameError as err:
            if not setup.gpu_memory_gb:  # a card the catalog lacks is fine when its memory is stated
                problems.append(unknown_name_problem("gpu", err))

    if model and setup.attn_implementation == "sdpa" and not sdpa_supported(model):
        problems.append(Problem.of("attn_implementation", "sdpa_unsupported", model=model.name))
    if model and setup.params_b and not model.approximate:
        if abs(model.params_b - setup.params_b) / model.params_b > 0.25:
            problems.append(Problem.of("params_b", "params_contradict", stated=setup.params_b, model=model.name,
                                       catalog=model.params_b))
    if (gpu and setup.gpu_memory_gb and abs(gpu.memory_gb - setup.gpu_memory_gb) > 1
            and memory_variant(gpu, setup.gpu_memory_gb) is None):  # H100 94/96 GB are H100s
        problems.append(Problem.of("gpu_memory_gb", "memory_contradict", stated=setup.gpu_memory_gb, gpu=gpu.name,
                                   catalog=gpu.memory_gb))
    if gpu and setup.precision in ("bf16-mixed", "bf16") and not gpu.supports_bf16:
        problems.append(Problem.of("precision", "no_bf16", gpu=gpu.name))

    n, g, c = setup.nodes, setup.gpus_per_node, setup.gpu_count
    if n and g and c and n * g != c and all(p.field not in ("nodes", "gpus_per_node", "gpu_count")
                                            for p in problems):
        problems.append(Problem.of("gpu_count", "count_contradict", count=c, nodes=n, per_node=g, product=n * g))
    if n and c and c < n and n > 0:
        problems.append(Problem.of("nodes", "nodes_over_count", nodes=n, count=c))
    if n == 1 and setup.inter_node_link not in (None, "none"):
        pass  # a single node ignores the inter-node link; not an error
    m = n or ((c // g) if c and g else None)
    if m and m > 1 and setup.inter_node_link == "none":
        problems.append(Problem.of("inter_node_link", "no_inter_link", nodes=m))
    problems += _check_run_options(setup, gpu)
    return problems


# GPUs whose tensor cores run float8 matmuls (Ada sm_89 and Hopper sm_90); torchao's float8
# training needs one (https://github.com/pytorch/ao/tree/main/torchao/float8).
FLOAT8_GPU_PREFIXES = ("H100", "H200", "H800", "H20", "B200", "L40S", "L4 ", "RTX 4090", "RTX 5090", "MI300X",
                       "Gaudi")


def _check_run_options(setup: TrainingSetup, gpu: GPUSpec | None) -> list[Problem]:
    """Contradictions among the run options (issue 14) and with the rest of the setup."""
    problems: list[Problem] = []
    policy, every = setup.checkpointing_policy, setup.checkpoint_every
    if setup.activation_checkpointing is False and policy is not None:
        problems.append(Problem.of("checkpointing_policy", "policy_without_checkpointing", policy=policy))
    if every is not None and policy not in (None, "every_k"):
        problems.append(Problem.of("checkpoint_every", "every_not_every_k", every=every, policy=policy))
    if every is not None and setup.activation_checkpointing is False:
        problems.append(Problem.of("checkpoint_every", "every_without_checkpointing"))
    if setup.optimizer == "adam8bit" and setup.optimizer_impl in ("fused", "forloop"):
        problems.append(Problem.of("optimizer_impl", "impl_with_8bit", impl=setup.optimizer_impl))
    if setup.torch_version is not None and not re.match(r"\d+\.\d+", str(setup.torch_version)):
        problems.append(Problem.of("torch_version", "torch_version", version=setup.torch_version))
    dropout = setup.lora_dropout
    if dropout is not None and (dropout != dropout or not 0 <= dropout < 1):
        problems.append(Problem.of("lora_dropout", "lora_dropout", value=dropout))
    lora_only = [name for name in ("lora_targets", "base_dtype", "lora_dropout") if getattr(setup, name) is not None]
    if setup.finetune == "full" and lora_only:
        problems.append(Problem.of(lora_only[0], "lora_option_full", option=lora_only[0]))
    if setup.finetune == "qlora" and setup.base_dtype not in (None, "nf4"):
        problems.append(Problem.of("base_dtype", "qlora_base", base=setup.base_dtype))
    if setup.optimizer_in_backward and (setup.grad_accum_steps or 1) > 1:
        problems.append(Problem.of("optimizer_in_backward", "in_backward_accum"))
    if setup.paged_optimizer and setup.optimizer_impl in ("fused", "forloop"):
        problems.append(Problem.of("paged_optimizer", "paged_impl", impl=setup.optimizer_impl))
    rak = setup.reshard_after_forward
    if isinstance(rak, int) and not isinstance(rak, bool):
        # FSDP2: "a non-trivial divisor of the mesh shard dim size (excluding 1 and the dim size)"
        # (https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html)
        group = setup.gpu_count
        if rak < 2:
            problems.append(Problem.of("reshard_after_forward", "reshard_group_small", group=rak))
        elif group is not None and (group % rak or rak >= group):
            problems.append(Problem.of("reshard_after_forward", "reshard_not_divisor", group=rak, gpus=group))
    if setup.float8:
        if setup.precision == "fp32":
            problems.append(Problem.of("float8", "float8_fp32"))
        if gpu is not None and not gpu.name.startswith(FLOAT8_GPU_PREFIXES):
            problems.append(Problem.of("float8", "float8_gpu", gpu=gpu.name))
    return problems


def validate_setup(data: dict[str, Any]) -> TrainingSetup:
    """Build and check a setup from a plain dict; raises ``SetupError`` with every problem."""
    from pydantic import ValidationError

    try:
        setup = TrainingSetup(**data)
    except ValidationError as err:
        problems = [Problem.of(".".join(str(x) for x in e["loc"]) or "setup", "invalid_value", detail=e["msg"])
                    for e in err.errors()]
        raise SetupError(problems) from None
    problems = check_setup(setup)
    if problems:
        raise SetupError(problems)
    return setup


# inter_node_gbps is one node's total NIC bandwidth. Defaults when only the link kind is known are
# conservative single-NIC builds: one 200 Gb/s InfiniBand HDR port, or 25 Gb/s Ethernet (state
# yours to refine). The one home of these figures: the advisor's what-ifs and the knowledge tags
# import them.
DEFAULT_INTER_NODE_GBPS: dict[str, float] = {"infiniband": 200.0, "ethernet": 25.0, "none": 0.0}

# More GPUs than this with no node layout stated are assumed to span nodes of (up to) 8 GPUs.
MAX_GPUS_PER_NODE_ASSUMED = 8

# Defaults used when a field is not stated; the answer lists each one it used.
DEFAULTS = {
    "precision": "bf16-mixed",
    "optimizer": "adamw",
    "finetune": "full",
    "seq_len": 2048,
    "micro_batch": 1,
    "activation_checkpointing": False,
    "lora_rank": 16,
}

# The run options' defaults are PyTorch's own (issue 14); each one used is listed in ``assumed``.
# optimizer_impl: torch.optim picks foreach on CUDA when neither foreach nor fused is given
#   (https://pytorch.org/docs/stable/optim.html#algorithms, "foreach ... default on CUDA");
# ddp_bucket_view: DistributedDataParallel(gradient_as_bucket_view=False);
# torch_compile: eager; loss_impl: one F.cross_entropy over the whole logits tensor;
# grad_accum_steps: 1; lora_targets: q,k,v,o (the attention projections);
# float8: off (bf16 matmuls); norm_impl: eager, except for blocks stated to be PyTorch-native on torch >= 2.10
#   (the stated or the calculator's release), which run F.rms_norm fused (bot.catalog.kernel_defaults.default_norm_impl).
RUN_OPTION_DEFAULTS = {
    "optimizer_impl": "foreach",
    "ddp_bucket_view": False,
    "torch_compile": False,
    "loss_impl": "standard",
    "grad_accum_steps": 1,
    "float8": False,
    "norm_impl": "eager",
}
# Per-block checkpointing when only "activation checkpointing on" is said; every 2nd block when
# "every_k" comes without k (fms-fsdp's ac_handler default p=0.5 is every other block).
DEFAULT_CHECKPOINT_EVERY = 2


def _resolve_run_options(data: dict[str, Any], assumed: list[str]) -> None:
    """Fill the run options with PyTorch's defaults (see RUN_OPTION_DEFAULTS), in place."""
    for key, value in RUN_OPTION_DEFAULTS.items():
        if data[key] is None:
            if key == "optimizer_impl" and data["optimizer"] == "adam8bit":
                continue  # bitsandbytes' 8-bit Adam is one kernel; no torch.optim implementation
            if key == "norm_impl":
                value = default_norm_impl(data["torch_version"], data["model_code"])
            data[key] = value
            assumed.append(key)
    if data["activation_checkpointing"]:
        if data["checkpointing_policy"] is None:
            data["checkpointing_policy"] = "every_k" if data["checkpoint_every"] else "full"
            assumed.append("checkpointing_policy")
        if data["checkpointing_policy"] == "every_k" and data["checkpoint_every"] is None:
            data["checkpoint_every"] = DEFAULT_CHECKPOINT_EVERY
            assumed.append("checkpoint_every")
    if (data["grad_accum_steps"] or 1) > 1 and data["grad_sync"] is None:
        data["grad_sync"] = "every_micro_step"  # FSDP2's default: requires_gradient_sync stays True
        assumed.append("grad_sync")
    if data["finetune"] in ("lora", "qlora"):
        if data["lora_targets"] is None:
            data["lora_targets"] = "attention"
            assumed.append("lora_targets")
        if data["base_dtype"] is None:
            # The frozen base is loaded in the compute dtype (PEFT/torchtune load bf16 weights);
            # QLoRA's is NF4 by definition.
            data["base_dtype"] = "nf4" if data["finetune"] == "qlora" else (
                "fp32" if data["precision"] == "fp32" else "bf16")
            assumed.append("base_dtype")


@dataclass(frozen=True)
class ResolvedSetup:
    """A complete setup the calculator can use: catalog entries looked up, defaults filled.

    ``assumed`` names the fields that were filled from defaults rather than stated.
    """

    setup: TrainingSetup
    model: ModelSpec
    gpu: GPUSpec | None
    gpu_memory_gb: float
    gpu_count: int
    gpus_per_node: int
    nodes: int
    intra_node_link: str
    inter_node_link: str
    inter_node_gbps: float
    assumed: tuple[str, ...]

    # The fields ``resolve_setup`` always fills, typed without ``None`` for the calculator.
    @property
    def precision(self) -> Precision:
        return _filled(self.setup.precision, "precision")

    @property
    def optimizer(self) -> Optimizer:
        return _filled(self.setup.optimizer, "optimizer")

    @property
    def finetune(self) -> Finetune:
        return _filled(self.setup.finetune, "finetune")

    @property
    def lora_rank(self) -> int:
        return _filled(self.setup.lora_rank, "lora_rank")

    @property
    def seq_len(self) -> int:
        return _filled(self.setup.seq_len, "seq_len")

    @property
    def micro_batch(self) -> int:
        return _filled(self.setup.micro_batch, "micro_batch")


_T = TypeVar("_T")


def _filled(value: _T | None, name: str) -> _T:
    """A field ``resolve_setup`` fills from DEFAULTS; ``None`` means the setup was not resolved."""
    if value is None:
        raise ValueError(f"{name} is unset: the setup was not filled by resolve_setup")
    return value


def resolve_setup(setup: TrainingSetup, *, default_gpu: str | None = None,
                  default_gpu_count: int | None = None) -> ResolvedSetup:
    """Fill a checked setup for computation. Raises ``SetupError`` when it cannot be computed:
    invalid values, or no model size / GPU memory / GPU count and no default given for them."""
    problems = check_setup(setup)
    if problems:
        raise SetupError(problems)
    assumed: list[str] = []
    data = setup.model_dump()
    if data["activation_checkpointing"] is None and (data["checkpointing_policy"] or data["checkpoint_every"]):
        data["activation_checkpointing"] = True  # naming a policy says checkpointing is on
    for key, value in DEFAULTS.items():
        if data[key] is None:
            data[key] = value
            assumed.append(key)
    _resolve_run_options(data, assumed)

    if setup.model:
        model = lookup_model(setup.model)
        if model.approximate and setup.params_b:
            from bot.catalog import generic_model

            model = generic_model(setup.params_b)
    elif setup.params_b:
        from bot.catalog import generic_model

        model = generic_model(setup.params_b)
    else:
        raise SetupError([Problem.of("params_b", "size_unknown")])
    data["params_b"] = round(model.params_b, 3) if data["params_b"] is None else data["params_b"]
    if data["attn_implementation"] is None and default_attn_implementation(model) == "eager":
        assumed.append("attn_implementation")  # transformers runs this architecture eagerly
    if "seq_len" in assumed and model.arch != "llama" and data["seq_len"] > model.max_positions:
        # An assumed length must fit the model: GPT-2's learned position table holds 1024 tokens.
        data["seq_len"] = model.max_positions

    gpu_name = setup.gpu or (default_gpu if setup.gpu_memory_gb is None else None)
    try:
        gpu = lookup_gpu(gpu_name) if gpu_name else None
    except UnknownNameError:
        # Not in the catalog but its memory is stated (check_setup let it through): a custom
        # card, marked approximate (issue 13).
        from bot.catalog import custom_gpu

        if setup.gpu_memory_gb is None:
            raise  # a default GPU name the catalog lacks, with no memory to build a custom card from
        gpu = custom_gpu(setup.gpu_memory_gb, setup.gpu)
    if gpu is not None and setup.gpu_memory_gb and abs(gpu.memory_gb - setup.gpu_memory_gb) > 1:
        gpu = memory_variant(gpu, setup.gpu_memory_gb) or gpu  # an H100 sold with 94/96 GB
    if data["precision"] == "fp32" and data["tf32"] is None:
        data["tf32"] = False  # PyTorch's default: allow_tf32 off for matmuls
        assumed.append("tf32")
    if "precision" in assumed and gpu is not None and not gpu.supports_bf16:
        # No bf16 on this card (V100, T4): the default is fp16 autocast with a loss scaler.
        data["precision"] = gpu.default_precision
    if setup.gpu is None and gpu is not None:
        assumed.append("gpu")
        data["gpu"] = gpu.name
    memory = setup.gpu_memory_gb or (gpu.memory_gb if gpu else None)
    if memory is None:
        raise SetupError([Problem.of("gpu_memory_gb", "memory_unknown")])
    if setup.gpu_memory_gb is None and gpu is not None:
        data["gpu_memory_gb"] = gpu.memory_gb

    nodes, per_node, count = setup.nodes, setup.gpus_per_node, setup.gpu_count
    if count is None:
        if nodes and per_node:
            count = nodes * per_node
        elif default_gpu_count:
            count = default_gpu_count * (nodes or 1) if nodes and not per_node else default_gpu_count
            assumed.append("gpu_count")
        else:
            raise SetupError([Problem.of("gpu_count", "count_unknown")])
    if nodes is None and per_node is None and count > MAX_GPUS_PER_NODE_ASSUMED:
        # "64 GPUs" means several nodes: a single node holds at most 8 data-center GPUs (DGX/HGX).
        per_node = max(d for d in range(1, MAX_GPUS_PER_NODE_ASSUMED + 1) if count % d == 0)
        assumed += ["nodes", "gpus_per_node"]
    if nodes is None:
        nodes = max(1, count // per_node) if per_node else 1
    if per_node is None:
        per_node = max(1, count // nodes)
    if nodes * per_node != count:
        raise SetupError([Problem.of("gpu_count", "uneven_per_node", count=count, per_node=per_node)
                          if setup.gpus_per_node else Problem.of("gpu_count", "uneven_nodes", count=count, nodes=nodes)])
    data.update(gpu_count=count, nodes=nodes, gpus_per_node=per_node)

    intra = setup.intra_node_link or (gpu.intra_link if gpu else "pcie")
    if setup.intra_node_link is None:
        assumed.append("intra_node_link")
    inter = setup.inter_node_link or ("none" if nodes == 1 else "infiniband")
    if nodes > 1 and inter == "none":
        # e.g. "16 GPUs, no inter-node link": 16 GPUs span 2 nodes of 8, which need a link
        raise SetupError([Problem.of("inter_node_link", "no_inter_link", nodes=nodes)])
    if setup.inter_node_link is None and nodes > 1:
        assumed.append("inter_node_link")
    default_gbps = DEFAULT_INTER_NODE_GBPS[inter]
    if inter == "infiniband":
        # a DGX/HGX-class node of 8 SXM GPUs has one NIC per GPU (bot.catalog.accelerators)
        default_gbps = dgx_node_nic_gbps(gpu, per_node) or default_gbps
    gbps = setup.inter_node_gbps or default_gbps
    if setup.inter_node_gbps is None and nodes > 1:
        assumed.append("inter_node_gbps")
    data.update(intra_node_link=intra, inter_node_link=inter,
                inter_node_gbps=gbps if nodes > 1 else setup.inter_node_gbps)

    return ResolvedSetup(
        setup=TrainingSetup(**data), model=model, gpu=gpu, gpu_memory_gb=float(memory),
        gpu_count=count, gpus_per_node=per_node, nodes=nodes, intra_node_link=intra,
        inter_node_link=inter, inter_node_gbps=float(gbps), assumed=tuple(assumed),
    )
