"""Simulate one training step under tensor parallelism x FSDP2 on fake tensors: the cross-check
of ``bot/calc/parallel.py``'s TP formulas.

How: ``bot.bench.model``'s decoder is built inside ``FakeTensorMode`` in the target dtype on a
2-D DeviceMesh ("dp", "tp") over a fake process group (the mesh built outside the fake mode),
parallelised the way torchtitan's Llama plan does it (``parallelize_module``: ColwiseParallel on
q/k/v/gate/up, RowwiseParallel on o/down, SequenceParallel on the norms with PrepareModuleInput
gathering the sequence before attention and the MLP, the embedding row-wise with a
sequence-sharded output, the LM head column-wise with a vocabulary-sharded output and a
cross-entropy over the local shard standing for loss parallelism), then ``fully_shard`` on the "dp" mesh per block and at the root, and trained for
two iterations under ``FSDPMemTracker`` (``reset_mod_stats`` between them). Device "cpu": fake
CUDA tensors need a CUDA build; the byte counts are the same.

Runs in a spawned child (``simulate_tp``) so the fake group and dispatch modes never touch the
caller. The attention module's head counts are set to the local (per-TP-rank) counts after
parallelisation, as torchtitan's model does with ``-1`` in its views.
"""

from __future__ import annotations

import multiprocessing
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any

from bot.bench.simulate import SimError, _make_tracker, breakdown

GIB = 2**30


@dataclass(frozen=True)
class TPSimConfig:
    model: str  # a catalog name bot.bench.model builds
    dp: int
    tp: int
    seq_len: int = 2048
    micro_batch: int = 1
    precision: str = "bf16-mixed"
    activation_checkpointing: bool = False
    sequence_parallel: bool = True

    def check(self) -> None:
        from bot.catalog import UnknownNameError, lookup_model

        try:
            spec = lookup_model(self.model)
        except UnknownNameError as err:
            raise SimError(str(err)) from None
        problems = []
        for name in ("dp", "tp", "seq_len", "micro_batch"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                problems.append(f"{name} must be a whole number >= 1, got {value!r}")
        if self.precision not in ("bf16-mixed", "bf16", "fp32"):
            problems.append(f"precision {self.precision!r} is not simulated under TP")
        if spec.arch != "llama" or spec.is_moe or spec.tied_embeddings:
            problems.append(f"{spec.name}: the TP simulator covers dense Llama-family models with untied embeddings")
        if not problems and (spec.n_heads % self.tp or spec.n_kv_heads % self.tp):
            problems.append(f"tp {self.tp} must divide the heads ({spec.n_heads}) and key/value heads ({spec.n_kv_heads})")
        if not problems and self.seq_len % self.tp:
            problems.append(f"seq_len {self.seq_len} must be divisible by tp {self.tp} (sequence parallelism)")
        if problems:
            raise SimError("; ".join(problems))


@dataclass
class TPSimResult:
    peak_gib: float
    params_gib: float
    grads_gib: float
    optimizer_gib: float
    activations_gib: float
    buffers_gib: float
    seconds: float
    config: TPSimConfig


def _tp_plan(sp: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(per-block plan, top-level plan) in torchtitan's Llama layout for bot.bench.model's names."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
    )

    seq = Shard(1) if sp else Replicate()
    block = {
        "attn": PrepareModuleInput(input_layouts=(seq,), desired_input_layouts=(Replicate(),)),
        "attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
        "attn.o": RowwiseParallel(output_layouts=seq),
        "mlp": PrepareModuleInput(input_layouts=(seq,), desired_input_layouts=(Replicate(),)),
        "mlp.gate": ColwiseParallel(), "mlp.up": ColwiseParallel(),
        "mlp.down": RowwiseParallel(output_layouts=seq),
    }
    if sp:
        block["attn_norm"] = SequenceParallel()
        block["mlp_norm"] = SequenceParallel()
    top = {
        "embed": RowwiseParallel(input_layouts=Replicate(), output_layouts=seq),
        # vocabulary-sharded logits, handed on as the local shard (see run_tp_simulation's loss)
        "head": ColwiseParallel(input_layouts=seq, output_layouts=Shard(-1), use_local_output=True),
    }
    if sp:
        top["norm"] = SequenceParallel()
    return block, top


def run_tp_simulation(cfg: TPSimConfig) -> TPSimResult:
    """The simulation in *this* process; use ``simulate_tp`` unless you are the child."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.parallel import parallelize_module
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from bot.bench.model import build_model
    from bot.catalog import lookup_model

    cfg.check()
    spec = lookup_model(cfg.model)
    start = time.perf_counter()
    world = cfg.dp * cfg.tp
    low = torch.bfloat16 if cfg.precision == "bf16-mixed" else None
    param_dtype = torch.bfloat16 if cfg.precision == "bf16" else torch.float32
    if dist.is_initialized():
        raise SimError("a process group is already initialised in this process")
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    old_dtype = torch.get_default_dtype()
    # FSDP2 over TP-sharded parameters concatenates the dp and tp meshes (FSDPParam
    # ``_init_sharding_spec_tp``); a DeviceMesh computes its coordinates with real tensor ops,
    # which fake tensors cannot answer, so that one constructor runs with the fake mode lifted.
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.distributed.device_mesh import DeviceMesh

    original_concatenate = DeviceMesh._concatenate

    def concatenate_outside_fake(meshes):
        with unset_fake_temporarily():
            return original_concatenate(meshes)

    setattr(DeviceMesh, "_concatenate", staticmethod(concatenate_outside_fake))  # noqa: B010
    try:
        mesh = init_device_mesh("cpu", (cfg.dp, cfg.tp), mesh_dim_names=("dp", "tp"))
        with FakeTensorMode(allow_non_fake_inputs=True):
            torch.set_default_dtype(param_dtype)  # build in the target dtype: no second copy
            model: Any = build_model(spec, checkpoint_blocks=cfg.activation_checkpointing)
            block_plan, top_plan = _tp_plan(cfg.sequence_parallel)
            for block in model.layers:
                parallelize_module(block, mesh["tp"], block_plan)
                # local heads per TP rank (the model's views use the head counts)
                block.attn.n_heads //= cfg.tp
                block.attn.n_kv_heads //= cfg.tp
            parallelize_module(model, mesh["tp"], top_plan)
            if cfg.dp > 1:
                kwargs: dict[str, Any] = {"mesh": mesh["dp"], "reshard_after_forward": True}
                if low is not None:
                    kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=low, reduce_dtype=torch.float32)
                for block in model.layers:
                    fully_shard(block, **kwargs)
                fully_shard(model, **kwargs)
            # The optimizer steps each rank's local shard (see simulate.py: stepping DTensors on
            # fake tensors would materialise full-size tensors in sharding propagation).
            pairs = [(p, p._local_tensor if isinstance(p, DTensor) else p) for p in model.parameters()]
            optimizer = torch.optim.AdamW([local for _, local in pairs], lr=1e-4, foreach=True)
            tokens = torch.randint(0, spec.vocab, (cfg.micro_batch, cfg.seq_len + 1))
            inputs, labels = tokens[:, :-1], tokens[:, 1:]
            tracker = _make_tracker(model, optimizer, cfg.dp > 1, ())
            if cfg.dp > 1:
                tracker.track_inputs((inputs, labels))
            else:
                tracker.track_external(model, optimizer, inputs, labels)
            with tracker:
                for _ in range(2):
                    logits = model(inputs)  # this rank's vocabulary shard
                    # Loss parallelism's per-rank tensors (the local shard upcast, its log-softmax,
                    # their gradients) are those of a cross-entropy over the local shard; the
                    # max/sum all-reduces add scalars per row. DTensor's own ``loss_parallel`` is
                    # not run: on fake tensors it counts 36 B per local logit at its backward
                    # (12 for the local cross-entropy), more than torchtitan's 70B FSDP 32 x TP 8
                    # row leaves room for (71.9 GiB in all with 2.1e9 local logits). Whether the
                    # surplus is the fake-tensor path's or a GPU's too is not settled here.
                    local_vocab = logits.shape[-1]
                    loss = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten() % local_vocab)
                    del logits
                    loss.backward()
                    del loss
                    for param, local in pairs:
                        grad = param.grad
                        local.grad = None if grad is None else (grad._local_tensor if isinstance(grad, DTensor) else grad)
                    optimizer.step()
                    for param, local in pairs:
                        param.grad = local.grad = None
                    tracker.reset_mod_stats()
            categories = tracker.device_peak_snap
    finally:
        setattr(DeviceMesh, "_concatenate", staticmethod(original_concatenate))  # noqa: B010
        torch.set_default_dtype(old_dtype)
        dist.destroy_process_group()
    parts = breakdown(categories)
    return TPSimResult(peak_gib=tracker.device_peak / GIB, seconds=time.perf_counter() - start, config=cfg, **parts)


def _child(cfg_dicts: list[dict], conn) -> None:
    import torch

    torch.set_num_threads(1)
    for cfg_dict in cfg_dicts:
        try:
            result = run_tp_simulation(TPSimConfig(**cfg_dict))
            data = asdict(result)
            conn.send(("result", data))
        except SimError as err:
            conn.send(("error", str(err)))
        except Exception as err:  # noqa: BLE001  (reported to the parent)
            conn.send(("error", f"{type(err).__name__}: {err}\n{traceback.format_exc()[-3000:]}"))
    conn.close()


def simulate_tp(cfgs: list[TPSimConfig], timeout: float = 900.0) -> list[TPSimResult | SimError]:
    """Run each config in one spawned child; one ``TPSimResult`` or ``SimError`` per config."""
    for cfg in cfgs:
        cfg.check()
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=([asdict(c) for c in cfgs], child), daemon=True,
                       name="shardwise-simulate-tp")
    proc.start()
    child.close()
    out: list[TPSimResult | SimError] = []
    try:
        for cfg in cfgs:
            if not parent.poll(timeout):
                raise SimError(f"TP simulation timed out after {timeout:.0f} s")
            try:
                kind, payload = parent.recv()
            except EOFError:
                raise SimError(f"TP simulation process died (exit code {proc.exitcode})") from None
            if kind == "result":
                payload["config"] = cfg
                out.append(TPSimResult(**payload))
            else:
                out.append(SimError(f"TP simulation failed: {payload}"))
    finally:
        parent.close()
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
    return out
