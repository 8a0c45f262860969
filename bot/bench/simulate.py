"""Simulate one training step's exact per-GPU peak memory, on CPU, without allocating it.

How: the catalog architecture (``bot.bench.model``) is built inside ``FakeTensorMode`` (tensors
have shapes and dtypes but no storage), with a fake process group whose world size is the user's
GPU count, wrapped the way the strategy says (FSDP2 ``fully_shard`` per block and at the root,
DDP), and trained for two iterations (forward, backward, optimizer step) under the memory
trackers of ``torch.distributed._tools``. The tracker counts every tensor storage alive at each
op and keeps the breakdown at the peak.

Strategy mapping (DESIGN.md ids):
- ``fsdp_full_shard``: ``fully_shard(reshard_after_forward=True)`` on each block and the root.
- ``fsdp_shard_grad_op``: the same with ``reshard_after_forward=False`` (ZeRO-2-like).
- ``fsdp_hybrid_shard``: a 2-D DeviceMesh (replicate across nodes, shard within a node).
- ``fsdp_full_shard_offload``: full shard plus ``CPUOffloadPolicy``; sharded params, grads and
  optimizer state live in host RAM, so the GPU peak leaves them out (reported as ``host_gib``).
- ``ddp``: ``DistributedDataParallel`` over the fake group. Its C++ reducer allocates one flat
  bucket buffer per bucket; those allocations go through the dispatcher, so the tracker sees them
  as fake tensors (they land in ``buffers_gib``). Mixed precision for DDP is ``torch.autocast``,
  which is what a DDP user writes.

Everything runs in a spawned child process (``simulate``): the fake process group, the default
dtype and torch's dispatch modes never touch the caller, and a crash cannot take a server down.
Simulation runs on the CPU device because fake CUDA tensors need a CUDA build; the byte counts
are the same (the CUDA caching allocator's 512-byte rounding is below 0.01 GiB).

These torch APIs are private; ``tests/test_bench_simulate.py`` pins their behaviour.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from bot.catalog import UnknownNameError, lookup_model
from bot.core.errors import UserError

GIB = 2**30
# Bump when simulate's method changes so stored results from the old method are not served.
SIM_METHOD_VERSION = 1

STRATEGIES = ("ddp", "fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard", "fsdp_full_shard_offload")
PRECISIONS = ("bf16-mixed", "fp16-mixed", "bf16", "fp32")
OPTIMIZERS = ("adamw", "sgd")
OPTIMIZER_IMPLS = ("foreach", "fused", "forloop")
RUN_OPTION_DEFAULTS = {"optimizer_impl": "foreach", "ddp_bucket_view": False, "checkpointing_policy": "full",
                       "checkpoint_every": 1, "loss_impl": "standard", "fsdp_root": "resharded",
                       "reshard_after_forward": 0}
FSDP_ROOTS = ("resharded", "kept", "split")
LOSS_IMPLS = ("standard", "chunked", "fused")
# Row blocks the fused cross-entropy emulation works through (its fp32 scratch is one block's).
FUSED_LOSS_BLOCKS = 32
# A fake world beyond this is legal but takes long; nobody asks for 100k-GPU per-rank numbers.
MAX_SIM_WORLD = 65_536
MAX_TOKENS = 4_194_304  # micro_batch * seq_len per GPU; beyond this the answer is "no" anyway

ProgressFn = Callable[[str, float], None]


class SimError(UserError, ValueError):
    """A configuration simulate refuses, or a failure inside the simulation; the message says why."""


@dataclass(frozen=True)
class SimConfig:
    model: str
    gpu_count: int
    strategy: str
    gpus_per_node: int | None = None  # for HSDP: shard within a node of this many GPUs
    seq_len: int = 2048
    micro_batch: int = 1
    precision: str = "bf16-mixed"
    activation_checkpointing: bool = False
    optimizer: str = "adamw"
    # A Hugging Face config.json (canonical JSON text) to build with transformers instead of a
    # catalog entry; ``model`` is then only its label. Part of the cache key.
    hf_config: str | None = None
    # Run options (issue 14, calc engineer): torch.optim implementation and DDP's
    # gradient_as_bucket_view. At their defaults they stay out of the cache key (older entries hold).
    optimizer_impl: str = "foreach"
    ddp_bucket_view: bool = False
    checkpointing_policy: str = "full"  # with activation_checkpointing: full | every_k | selective_op
    checkpoint_every: int = 1
    # standard | chunked (torchtune's 8-chunk cross-entropy) | fused (a compiled / Liger-style
    # cross-entropy kernel, emulated by ``fused_loss_fn``)
    loss_impl: str = "standard"
    # FSDP layout (calc engineer 3; bot.calc's ``fsdp_root`` and ``reshard_after_forward``): the root
    # unit resharded after forward (``fully_shard(model, reshard_after_forward=True)``), kept gathered
    # (``False`` on the root) or split (the embeddings and the LM head wrapped as units of their
    # own); and the group size the blocks are resharded to after forward (0: the strategy's own;
    # any other value is refused by ``normalized``: it cannot run on fake tensors).
    fsdp_root: str = "resharded"
    reshard_after_forward: int = 0

    @classmethod
    def from_hf_config(cls, source, **kwargs) -> SimConfig:
        """A config for a model given by its Hugging Face config (dict, JSON text, file or folder
        path, Hub id); raises ``SimError`` when it cannot be read."""
        from bot.catalog.hf_config import ConfigError, read_hf_config

        try:
            spec, data = read_hf_config(source, name=kwargs.pop("model", None))
        except ConfigError as err:
            raise SimError(str(err)) from None
        if spec.declared_params is not None:
            raise SimError(f"{spec.name}: no architecture to build (approximate entry)")
        return cls(model=spec.name, hf_config=json.dumps(data, sort_keys=True), **kwargs)

    def spec(self):
        """The ``ModelSpec`` this config simulates (from its HF config, else the catalog)."""
        if self.hf_config:
            from bot.catalog.hf_config import ConfigError, model_from_hf_config

            try:
                return model_from_hf_config(json.loads(self.hf_config), name=self.model)
            except (ConfigError, json.JSONDecodeError) as err:
                raise SimError(f"hf_config: {err}") from None
        try:
            return lookup_model(self.model)
        except UnknownNameError as err:
            raise SimError(str(err)) from None

    @classmethod
    def from_resolved(cls, resolved, strategy: str) -> SimConfig:
        """From a ``bot.core.setup.ResolvedSetup``; generic (size-only) models simulate by ``params_b``."""
        s = resolved.setup
        if s.finetune not in (None, "full"):
            # Simulating full training for a LoRA question would present a wrong number as fact.
            raise SimError(f"simulate covers full fine-tuning only, not {s.finetune}")
        model = resolved.model.name
        if resolved.model.approximate:
            model = f"{resolved.model.params_b:.4g}b"
        return cls(model=model, gpu_count=resolved.gpu_count, strategy=strategy,
                   gpus_per_node=resolved.gpus_per_node, seq_len=s.seq_len, micro_batch=s.micro_batch,
                   precision=s.precision, activation_checkpointing=bool(s.activation_checkpointing),
                   optimizer=s.optimizer, optimizer_impl=getattr(s, "optimizer_impl", None) or "foreach",
                   ddp_bucket_view=bool(getattr(s, "ddp_bucket_view", False)),
                   checkpointing_policy=getattr(s, "checkpointing_policy", None) or "full",
                   checkpoint_every=getattr(s, "checkpoint_every", None) or 1,
                   loss_impl=getattr(s, "loss_impl", None) or "standard",
                   fsdp_root=getattr(s, "fsdp_root", None) or "resharded",
                   reshard_after_forward=_group_size(getattr(s, "reshard_after_forward", None)))

    @classmethod
    def from_dict(cls, data: dict) -> SimConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise SimError(f"unknown config fields: {', '.join(sorted(unknown))}")
        return cls(**data)

    def normalized(self) -> SimConfig:
        """Validated, with the catalog name and the HSDP node size filled in; raises ``SimError``."""
        problems = []
        spec = self.spec()
        if self.hf_config:
            name = self.model
        else:
            name = spec.name if not spec.approximate else self.model.lower().replace(" ", "")
            if spec.declared_params is not None:
                raise SimError(f"{spec.name} is an approximate catalog entry (parameter count only): "
                               "pass its config.json (--config) to simulate its real architecture")
        if self.strategy not in STRATEGIES:
            problems.append(f"unknown strategy {self.strategy!r}; one of {', '.join(STRATEGIES)}")
        if self.precision not in PRECISIONS:
            problems.append(f"unknown precision {self.precision!r}; one of {', '.join(PRECISIONS)}")
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"optimizer {self.optimizer!r} is not simulated; one of {', '.join(OPTIMIZERS)}")
        if self.optimizer_impl not in OPTIMIZER_IMPLS:
            problems.append(f"optimizer_impl {self.optimizer_impl!r} is not one of {', '.join(OPTIMIZER_IMPLS)}")
        if self.checkpointing_policy not in ("full", "every_k", "selective_op"):
            problems.append(f"checkpointing_policy {self.checkpointing_policy!r} is not full, every_k or selective_op")
        if self.loss_impl not in LOSS_IMPLS:
            problems.append(f"loss_impl {self.loss_impl!r} is not simulated; one of {', '.join(LOSS_IMPLS)}")
        if self.fsdp_root not in FSDP_ROOTS:
            problems.append(f"fsdp_root {self.fsdp_root!r} is not one of {', '.join(FSDP_ROOTS)}")
        elif self.fsdp_root == "split" and (self.hf_config or spec.tied_embeddings):
            problems.append("fsdp_root 'split' is simulated for catalog models with untied embeddings only")
        k = self.reshard_after_forward
        if not isinstance(k, int) or isinstance(k, bool) or k < 0 or k == 1:
            problems.append(f"reshard_after_forward must be 0 (the strategy's) or a group size >= 2, got {k!r}")
        for key, high in (("gpu_count", MAX_SIM_WORLD), ("seq_len", MAX_TOKENS), ("micro_batch", MAX_TOKENS)):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1 or value > high:
                problems.append(f"{key} must be an integer in 1..{high}, got {value!r}")
        per_node = self.gpus_per_node
        if per_node is not None and (not isinstance(per_node, int) or per_node < 1):
            problems.append(f"gpus_per_node must be a positive integer, got {per_node!r}")
        if problems:
            raise SimError("; ".join(problems))
        if self.seq_len * self.micro_batch > MAX_TOKENS:
            raise SimError(f"micro_batch x seq_len = {self.seq_len * self.micro_batch} tokens per GPU "
                           f"is over {MAX_TOKENS}")
        if spec.positions and self.seq_len > spec.max_positions:
            raise SimError(f"{spec.name} has learned positions up to {spec.max_positions}; "
                           f"seq_len {self.seq_len} is longer")
        if self.strategy == "fsdp_hybrid_shard":
            per_node = per_node or min(8, self.gpu_count)
            if self.gpu_count % per_node:
                raise SimError(f"HSDP needs gpu_count ({self.gpu_count}) to be a multiple of "
                               f"gpus_per_node ({per_node})")
        else:
            per_node = None  # only HSDP's mesh depends on it; keep the cache key independent of it
        layout_applies = self.strategy in ("fsdp_full_shard", "fsdp_hybrid_shard", "fsdp_full_shard_offload")
        group = self.reshard_after_forward if layout_applies else 0
        if group:
            # Tried (torch 2.13): FSDP2's resharding to a group size reads a tensor value
            # (aten._local_scalar_dense) that fake tensors do not have, so the step cannot run here.
            raise SimError(f"reshard_after_forward={group} is not simulated: FSDP2's resharding to a group size "
                           "reads tensor values, which the simulator's fake tensors do not have")
        return SimConfig(name, self.gpu_count, self.strategy, per_node, self.seq_len, self.micro_batch,
                         self.precision, bool(self.activation_checkpointing), self.optimizer, self.hf_config,
                         optimizer_impl=self.optimizer_impl,
                         ddp_bucket_view=bool(self.ddp_bucket_view) and self.strategy == "ddp",
                         checkpointing_policy=self.checkpointing_policy if self.activation_checkpointing else "full",
                         checkpoint_every=(self.checkpoint_every if self.activation_checkpointing
                                           and self.checkpointing_policy == "every_k" else 1),
                         loss_impl=self.loss_impl,
                         fsdp_root=self.fsdp_root if layout_applies else "resharded",
                         reshard_after_forward=group)

    def key(self, torch_version: str) -> str:
        """Hash of the normalized config, the torch version and the method version (cache key)."""
        config = asdict(self.normalized())
        for name, default in RUN_OPTION_DEFAULTS.items():
            if config.get(name) == default:
                del config[name]  # the key a config had before these options existed
        method: int | str = SIM_METHOD_VERSION
        if config.get("hf_config") is None:
            config.pop("hf_config", None)  # catalog configs keep the key they had before issue 13
        from bot.bench.archs import HF_SIM_METHOD_VERSION, supports

        if "hf_config" in config or supports(self.spec()) is not None:
            method = f"{SIM_METHOD_VERSION}-hf{HF_SIM_METHOD_VERSION}"  # built with transformers
        payload = json.dumps({"config": config, "torch": torch_version,
                              "method": method}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class SimResult:
    """Per-GPU peak and its breakdown at the peak moment, GiB (2^30 bytes).

    ``params``: sharded (or replicated) parameters; ``grads``: sharded (or full) gradients;
    ``optimizer``: optimizer state; ``activations``: saved activations plus inputs;
    ``buffers``: temporaries: all-gathered (unsharded) params and grads, collective buffers,
    DDP buckets, backward temporaries. They sum to ``peak_gib``. ``host_gib``: what CPU offload
    keeps in host RAM (not in the peak). ``categories``: the tracker's raw bytes at the peak.
    """

    peak_gib: float
    params_gib: float
    grads_gib: float
    optimizer_gib: float
    activations_gib: float
    buffers_gib: float
    seconds: float
    torch_version: str
    config: SimConfig
    host_gib: float = 0.0
    categories: dict[str, int] = field(default_factory=dict)
    run_id: str | None = None  # set when the result comes from (or went into) the store

    def to_dict(self) -> dict:
        data = asdict(self)
        data["config"] = asdict(self.config)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> SimResult:
        data = dict(data)
        data["config"] = SimConfig.from_dict(data["config"])
        return cls(**data)


# Tracker categories -> breakdown field. FSDPMemTracker names first, then MemTracker's.
_CATEGORY_FIELD = {
    "Sharded Param": "params_gib", "Parameter": "params_gib", "Buffer": "params_gib",
    "Sharded Grad": "grads_gib", "Gradient": "grads_gib",
    "OptState": "optimizer_gib", "Optstate": "optimizer_gib",
    "Activation": "activations_gib", "Inputs": "activations_gib", "Other": "activations_gib",
    "Unsharded Param": "buffers_gib", "Unsharded Grad": "buffers_gib", "All Gather": "buffers_gib",
    "Reduce Scatter": "buffers_gib", "Temp": "buffers_gib",
}
# With CPUOffloadPolicy these live in host memory, not on the GPU.
_HOST_CATEGORIES = ("Sharded Param", "Sharded Grad", "OptState")


def breakdown(categories: dict[str, int], host: tuple[str, ...] = ()) -> dict[str, float]:
    """Tracker bytes per category -> the GiB breakdown fields (host categories left out)."""
    out = dict.fromkeys(("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib"), 0.0)
    for name, nbytes in categories.items():
        if name == "Total" or name in host:
            continue
        if name not in _CATEGORY_FIELD:
            raise SimError(f"memory tracker reported an unknown category {name!r} (torch changed?)")
        out[_CATEGORY_FIELD[name]] += nbytes / GIB
    return out


# --------------------------------------------------------------------------------------------
# The simulation itself (runs in the child process)
# --------------------------------------------------------------------------------------------


def _make_tracker(model, optimizer, fsdp: bool, host: tuple[str, ...]):
    """A memory tracker that also records the peak of device-resident memory (host ones excluded)."""
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed._tools.mem_tracker import MemTracker

    base: Any = FSDPMemTracker if fsdp else MemTracker

    class DevicePeakTracker(base):
        # Replaces the per-op peak update: we need the peak of device memory only (CPU offload
        # moves some categories to the host), and module-wise peaks are not used.
        device_peak: int
        device_peak_snap: dict[str, int]

        def _update_peak_stats(self, peak_state) -> None:
            for snap in self._curr_mem_snap.values():
                total = snap["Total"] - sum(snap.get(k, 0) for k in host)
                if total > self.device_peak:
                    self.device_peak = total
                    self.device_peak_snap = {getattr(k, "value", k): int(v) for k, v in snap.items()}

    tracker = DevicePeakTracker(model, optimizer) if fsdp else DevicePeakTracker()
    tracker.device_peak, tracker.device_peak_snap = 0, {}
    return tracker


class _NoBucketRebuild:
    """DDP's C++ reducer with ``_rebuild_buckets`` turned off (see run_simulation)."""

    def __init__(self, reducer):
        self._reducer = reducer

    def _rebuild_buckets(self) -> bool:
        return False

    def __getattr__(self, name):
        return getattr(self._reducer, name)


def _in_place_allreduce_hook(state, bucket):
    import torch

    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def _local_shard(tensor):
    """This rank's shard of an FSDP2 DTensor (a plain tensor sharing its storage), or the tensor."""
    from torch.distributed.tensor import DTensor

    return tensor._local_tensor if isinstance(tensor, DTensor) else tensor


def _group_size(value: bool | int | None) -> int:
    """A setup's ``reshard_after_forward`` as the simulator's group size (0: not an int)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 0


def _row_blocks(rows: int, blocks: int) -> list[tuple[int, int]]:
    """[lo, hi) bounds of ``blocks`` near-equal row blocks (plain ints: fake tensors have no values)."""
    step = max(1, -(-rows // blocks))
    return [(lo, min(rows, lo + step)) for lo in range(0, rows, step)]


def fused_loss_fn(logits, labels, blocks: int = FUSED_LOSS_BLOCKS):
    """Next-token cross-entropy with the memory of a fused kernel (a torch.compile'd
    ``F.cross_entropy(logits.float(), labels)``, Liger's fused CrossEntropy): forward keeps the
    16-bit logits and one fp32 logsumexp per row; backward writes the logits' 16-bit gradient
    directly. Inductor compiled code cannot run on the simulator's fake tensors, so this
    autograd Function reproduces what the compiled loss holds, working through ``blocks`` row
    blocks whose fp32 upcast is the only scratch (the kernel keeps it in registers). What the
    compiled loss holds was measured on CPU Inductor (docs/calc.md: 0 B/logit after forward, the
    2 B/logit gradient at backward; the eager loss 4 and 12)."""
    import torch

    class FusedCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, labels):
            flat, flat_labels = logits.flatten(0, 1), labels.flatten()
            lse = torch.empty(flat.shape[0], dtype=torch.float32, device=flat.device)
            picked = flat.gather(1, flat_labels[:, None]).squeeze(1).to(torch.float32)
            for lo, hi in _row_blocks(flat.shape[0], blocks):
                lse[lo:hi] = torch.logsumexp(flat[lo:hi].to(torch.float32), dim=-1)
            ctx.save_for_backward(logits, labels, lse)
            return (lse - picked).mean()

        @staticmethod
        def backward(ctx, grad_out):
            logits, labels = ctx.saved_tensors[:2]
            lse = ctx.saved_tensors[2]
            flat, flat_labels = logits.flatten(0, 1), labels.flatten()
            grad = torch.empty_like(flat)
            scale = grad_out / flat.shape[0]
            for lo, hi in _row_blocks(flat.shape[0], blocks):
                block = flat[lo:hi].to(torch.float32, copy=True)
                block.sub_(lse[lo:hi, None]).exp_()
                block.scatter_add_(1, flat_labels[lo:hi, None],
                                   torch.full((hi - lo, 1), -1.0, dtype=torch.float32, device=flat.device))
                grad[lo:hi] = block.mul_(scale)
                del block
            return grad.view_as(logits), None

    return FusedCrossEntropy.apply(logits, labels)


def run_simulation(cfg: SimConfig, progress: ProgressFn | None = None) -> SimResult:
    """The simulation in *this* process. Use ``simulate`` instead unless you are the child."""
    import torch
    import torch.distributed as dist
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard
    from torch.nn.parallel import DistributedDataParallel
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from bot.bench.archs import supports
    from bot.bench.model import build_model, chunked_loss_fn, loss_fn

    cfg = cfg.normalized()
    spec = cfg.spec()
    # The plain-torch model where it is exact (the calculator is checked against it); the real
    # transformers model for a user's config and for what it does not build.
    hf_config = json.loads(cfg.hf_config) if cfg.hf_config else None
    if hf_config is None and supports(spec):
        from bot.catalog.hf_config import hf_config_for

        hf_config = hf_config_for(spec)
    say = progress or (lambda message, fraction: None)
    start = time.perf_counter()
    fsdp = cfg.strategy != "ddp"
    low = {"bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}.get(cfg.precision)
    param_dtype = torch.bfloat16 if cfg.precision == "bf16" else torch.float32
    host = _HOST_CATEGORIES if cfg.strategy == "fsdp_full_shard_offload" else ()

    if dist.is_initialized():
        raise SimError("a process group is already initialised in this process; call simulate() instead")
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=cfg.gpu_count)
    old_dtype = torch.get_default_dtype()
    try:
        # The mesh must exist outside FakeTensorMode (it holds real rank tensors).
        if cfg.strategy == "fsdp_hybrid_shard":
            per_node = cfg.gpus_per_node
            if per_node is None:  # normalized() sets it for HSDP
                raise SimError("HSDP needs gpus_per_node")
            mesh = init_device_mesh("cpu", (cfg.gpu_count // per_node, per_node),
                                    mesh_dim_names=("replicate", "shard"))
        elif fsdp:
            mesh = init_device_mesh("cpu", (cfg.gpu_count,), mesh_dim_names=("shard",))
        say("building the model", 0.05)
        with FakeTensorMode(allow_non_fake_inputs=True):
            # Build in the target dtype: .to() after construction would briefly hold both copies.
            torch.set_default_dtype(param_dtype)
            if hf_config is not None:
                from bot.bench.hf_model import build_hf_model

                model: Any = build_hf_model(hf_config, checkpoint_blocks=cfg.activation_checkpointing)
            else:
                model = build_model(spec, checkpoint_blocks=cfg.activation_checkpointing,
                                    checkpoint_policy=cfg.checkpointing_policy,
                                    checkpoint_every=cfg.checkpoint_every)
            if fsdp:
                kwargs: dict[str, Any] = {"mesh": mesh, "reshard_after_forward": cfg.strategy != "fsdp_shard_grad_op"}
                if low is not None:
                    # Mixed precision: fp32 master params, low-precision compute, fp32 gradient
                    # reduction (https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html).
                    kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=low, reduce_dtype=torch.float32)
                if host:
                    kwargs["offload_policy"] = CPUOffloadPolicy(pin_memory=False)
                for block in model.layers:
                    fully_shard(block, **kwargs)
                if cfg.fsdp_root == "split":
                    fully_shard(model.embed, **kwargs)
                    fully_shard(model.head, **kwargs)
                root_kwargs = dict(kwargs, reshard_after_forward=False) if cfg.fsdp_root == "kept" else kwargs
                fully_shard(model, **root_kwargs)
            else:
                # init_sync=False: the start-up shape check and broadcast read tensor data, which
                # fake tensors do not have; they allocate nothing that lasts.
                model = DistributedDataParallel(model, init_sync=False,
                                                gradient_as_bucket_view=cfg.ddp_bucket_view)
                # The fake group's all-reduce completes with no value; DDP's reducer wants the
                # reduced bucket back. NCCL all-reduces in place, so hand back the bucket itself.
                model.register_comm_hook(None, _in_place_allreduce_hook)
                # After the first step DDP rebuilds its buckets in gradient-ready order, syncing the
                # order with a broadcast that reads data. Same bucket bytes either way: skip it.
                model.reducer = _NoBucketRebuild(model.reducer)
            # The optimizer steps the local shards. Stepping FSDP2's DTensors directly gives the
            # same kernels on a GPU, but under FakeTensorMode DTensor's sharding propagation
            # creates full-size (unsharded) fake tensors that the tracker would count as memory.
            pairs = [(p, _local_shard(p)) for p in model.parameters()]
            locals_ = [local for _, local in pairs]
            if cfg.optimizer == "adamw":
                # foreach=True is the CUDA default (what GPU users get); it allocates param-sized
                # temporaries in the step, which are counted.
                # optimizer_impl: foreach (the default above), fused (one kernel, no temporaries)
                # or the for-loop (one parameter's temporaries at a time).
                impl: dict[str, Any] = {"foreach": {"foreach": True}, "fused": {"fused": True},
                                        "forloop": {"foreach": False}}[cfg.optimizer_impl]
                optimizer: torch.optim.Optimizer = torch.optim.AdamW(locals_, lr=1e-4, **impl)
            else:
                impl = {"fused": {"fused": True}, "forloop": {"foreach": False}}.get(cfg.optimizer_impl,
                                                                                    {"foreach": True})
                optimizer = torch.optim.SGD(locals_, lr=1e-2, momentum=0.9, **impl)
            tokens = torch.randint(0, spec.vocab, (cfg.micro_batch, cfg.seq_len + 1))
            inputs, labels = tokens[:, :-1], tokens[:, 1:]
            tracker = _make_tracker(model, optimizer, fsdp, host)
            if fsdp:
                tracker.track_inputs((inputs, labels))
            else:
                tracker.track_external(model, optimizer, inputs, labels)
            with tracker:
                # Two iterations: optimizer state exists from the first step on, so the second
                # forward/backward runs with everything resident (the steady-state peak).
                for step in range(2):
                    say(f"iteration {step + 1}/2: forward", 0.2 + 0.4 * step)
                    with torch.autocast("cpu", dtype=low, enabled=(low is not None and not fsdp)):
                        logits = model(inputs)
                    loss_of = {"chunked": chunked_loss_fn, "fused": fused_loss_fn}.get(cfg.loss_impl, loss_fn)
                    loss = loss_of(logits, labels)
                    del logits
                    say(f"iteration {step + 1}/2: backward", 0.3 + 0.4 * step)
                    loss.backward()
                    del loss
                    say(f"iteration {step + 1}/2: optimizer step", 0.5 + 0.4 * step)
                    for param, local in pairs:
                        local.grad = None if param.grad is None else _local_shard(param.grad)
                    optimizer.step()
                    for param, local in pairs:
                        param.grad = local.grad = None  # zero_grad(set_to_none=True)
                    tracker.reset_mod_stats()  # module stats grow per call otherwise
            categories = tracker.device_peak_snap
            host_bytes = 0
            if host:
                # Host RAM for offload: what those categories hold at the end of a step.
                end: dict[Any, Any] = next(iter(tracker.get_tracker_snapshot("current").values()), {})
                host_bytes = sum(int(end.get(k, 0)) for k in host)
    finally:
        torch.set_default_dtype(old_dtype)
        dist.destroy_process_group()
    parts: dict[str, Any] = breakdown(categories, host)
    return SimResult(peak_gib=tracker.device_peak / GIB, seconds=time.perf_counter() - start,
                     torch_version=torch.__version__, config=cfg, host_gib=host_bytes / GIB,
                     categories=categories, **parts)


# --------------------------------------------------------------------------------------------
# The public entry: a spawned child per simulation
# --------------------------------------------------------------------------------------------


def _exit_when_orphaned(parent_pid: int) -> None:
    # The child must not outlive whoever asked for it (an MCP server killed with SIGKILL runs no
    # cleanup): when the parent is gone the child is re-parented, and getppid() changes.
    import threading

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _child(cfg_dicts: list[dict], conn, parent_pid: int | None = None) -> None:
    if parent_pid is not None:
        _exit_when_orphaned(parent_pid)
    import torch

    torch.set_num_threads(1)
    for index, cfg_dict in enumerate(cfg_dicts):
        def report(message: str, fraction: float, index: int = index) -> None:
            conn.send(("progress", index, message, fraction))

        try:
            result = run_simulation(SimConfig(**cfg_dict), report)
            conn.send(("result", index, result.to_dict()))
        except SimError as err:
            conn.send(("error", index, str(err), ""))
        except Exception as err:  # noqa: BLE001  (report to the parent, go on with the next)
            conn.send(("error", index, f"{type(err).__name__}: {err}", traceback.format_exc()[-4000:]))
    conn.close()


def simulate_batch(cfgs: list[SimConfig], progress: ProgressFn | None = None,
                   timeout: float = 1800.0,
                   on_result: Callable[[int, SimResult], None] | None = None,
                   should_stop: Callable[[], bool] | None = None) -> list[SimResult | SimError]:
    """Simulate several configs in one spawned child (torch is imported once); one entry per
    config, in order: its ``SimResult`` or the ``SimError`` saying why it failed. Invalid configs
    are refused before the child starts. ``on_result(index, result)`` is called as each finishes
    (so a long batch that is interrupted keeps what it finished). ``timeout`` is per config.
    ``should_stop()`` is asked twice a second; when it returns True the child is stopped and
    ``SimError("simulation cancelled")`` raised. The child exits by itself if this process dies."""
    cfgs = [cfg.normalized() for cfg in cfgs]
    outcomes: list[SimResult | SimError | None] = [None] * len(cfgs)
    if not cfgs:
        return []
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=([asdict(c) for c in cfgs], child, os.getpid()), daemon=True,
                       name="shardwise-simulate")
    proc.start()
    child.close()
    deadline = time.monotonic() + timeout * len(cfgs)
    total = len(cfgs)
    try:
        while any(o is None for o in outcomes):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SimError(f"simulation timed out after {timeout:.0f} s")
            if should_stop is not None and should_stop():
                raise SimError("simulation cancelled")
            if parent.poll(min(remaining, 0.5)):
                try:
                    message = parent.recv()
                except EOFError:
                    raise SimError(f"simulation process died (exit code {proc.exitcode})") from None
                kind, index = message[0], message[1]
                if kind == "progress" and progress:
                    label = f"[{index + 1}/{total}] {message[2]}" if total > 1 else message[2]
                    progress(label, (index + message[3]) / total)
                elif kind == "result":
                    outcomes[index] = SimResult.from_dict(message[2])
                    if on_result:
                        on_result(index, outcomes[index])
                elif kind == "error":
                    detail = f"\n{message[3]}" if message[3] else ""
                    outcomes[index] = SimError(f"simulation failed: {message[2]}{detail}")
            elif not proc.is_alive():
                raise SimError(f"simulation process died (exit code {proc.exitcode}); "
                               "running out of memory is the usual cause")
    finally:
        parent.close()
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
            if proc.is_alive():
                proc.kill()
        proc.join(5)
    return outcomes  # type: ignore[return-value]


def simulate(cfg: SimConfig, progress: ProgressFn | None = None, timeout: float = 1800.0) -> SimResult:
    """Simulate ``cfg`` in a spawned child process; raises ``SimError`` with the reason on failure.

    ``progress(message, fraction)`` is called in this process as the child reports.
    """
    outcome = simulate_batch([cfg], progress=progress, timeout=timeout)[0]
    if isinstance(outcome, SimError):
        raise outcome
    return outcome


def simulate_cached(cfg: SimConfig, store=None, force: bool = False,
                    progress: ProgressFn | None = None,
                    should_stop: Callable[[], bool] | None = None) -> tuple[str, SimResult]:
    """``(run_id, result)``: from the store when this config (and torch version) was simulated
    before, otherwise simulated now and stored. ``force`` re-simulates."""
    return simulate_many_cached([cfg], store=store, force=force, progress=progress, should_stop=should_stop)[0]


def simulate_many_cached(cfgs: list[SimConfig], store=None, force: bool = False,
                         progress: ProgressFn | None = None,
                         should_stop: Callable[[], bool] | None = None) -> list[tuple[str, SimResult]]:
    """``simulate_cached`` for several configs; the ones not in the store run in one child.
    Raises ``SimError`` for the first config that fails (the others are stored)."""
    from bot.bench.store import ResultStore

    store = store or ResultStore()
    cfgs = [cfg.normalized() for cfg in cfgs]
    found = [None if force else store.find_simulation(cfg) for cfg in cfgs]
    missing = [n for n, hit in enumerate(found) if hit is None]

    def keep(index: int, result: SimResult) -> None:
        result.run_id = store.add_simulation(result)
        found[missing[index]] = result

    outcomes = simulate_batch([cfgs[n] for n in missing], progress=progress, on_result=keep,
                              should_stop=should_stop)
    first_error = next((o for o in outcomes if isinstance(o, SimError)), None)
    if first_error is not None:
        raise first_error
    out: list[tuple[str, SimResult]] = []
    for hit in found:
        if hit is None or hit.run_id is None:  # each config was found in the store or simulated and stored
            raise SimError("a simulation neither came from the store nor was stored")
        out.append((hit.run_id, hit))
    return out
