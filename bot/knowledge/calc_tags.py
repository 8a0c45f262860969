"""Figures in the docs that the calculator can compute, tagged so a test recomputes them.

A doc states a figure and, right after the sentence, tags it:

    ... AdamW in mixed precision needs 16 bytes per parameter. <!-- calc: bytes_per_param precision=bf16-mixed optimizer=adamw = 16 -->

The tag names a key (below), its arguments and the value as the text states it. :func:`check_doc`
finds every tag, recomputes the value with ``bot.calc``'s public functions and reports tags whose
value differs from the calculator (after rounding to the decimals the doc wrote) or does not
appear in the text before the tag. A doc that drifts from the code then fails the test suite.

Keys (arguments in brackets have defaults):

| key | arguments | value |
|---|---|---|
| ``bytes_per_param`` | precision, optimizer | params + grads + optimizer state, bytes per parameter |
| ``optimizer_bytes_per_param`` | precision, optimizer | optimizer state alone |
| ``states_gib`` | params_b, precision, optimizer, [shards=1] | model states per GPU, GiB |
| ``weights_gib`` | params_b, precision | parameters alone in the compute dtype, GiB |
| ``ddp_bucket_bytes_per_param`` | precision | DDP's gradient-bucket copy (``gradient_as_bucket_view=False``) |
| ``optimizer_temp_bytes_per_param`` | precision, optimizer, [impl=foreach] | optimizer-step temporaries |
| ``ddp_default_bytes_per_param`` | precision, optimizer | states + bucket copy + foreach temporaries |
| ``ddp_default_gib`` | params_b, precision, optimizer | the same for a model, GiB (before activations) |
| ``comm_ratio`` | strategy, precision, [accum=1], [gpus=8] | bytes per optimizer step vs DDP's |
| ``comm_gb`` | strategy, precision, params_b, [accum=1], [gpus=8] | bus bytes per GPU per optimizer step, GB |
| ``hsdp_cross_node_gb`` | precision, params_b, nodes, gpus_per_node | HSDP's cross-node bus bytes per GPU, GB |
| ``ddp_buckets`` | precision, params_b, [bucket_mib=25] | number of DDP all-reduce buckets |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TAG = re.compile(r"<!--\s*calc:\s*(?P<key>[a-z_]+)(?P<args>(?:\s+[a-z_]+=[^\s=]+)*)\s*=\s*(?P<value>[-\d.,]+)\s*-->")
GIB = 2**30


@dataclass(frozen=True)
class TagResult:
    doc_id: str
    line: int
    key: str
    args: dict[str, str]
    stated: float
    computed: float | None
    problem: str  # "" when the tag holds


def _args(text: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in text.split())


def _prec(name: str):
    from bot.calc.memory import PRECISIONS

    return PRECISIONS[name]


def _model(params_b: float):
    from bot.catalog import generic_model

    return generic_model(params_b)


def _comm_inputs(precision: str, gpus: int, nodes: int = 1, accum: int = 1, params_b: float = 7.0):
    from bot.calc.comm import CommInputs
    from bot.core.setup import DEFAULT_INTER_NODE_GBPS

    # Several nodes: resolve_setup's default link (InfiniBand at its default speed).
    gbps = DEFAULT_INTER_NODE_GBPS["infiniband"] if nodes > 1 else 0.0
    return CommInputs(model=_model(params_b), gpu=None, gpu_count=gpus, gpus_per_node=gpus // nodes,
                      nodes=nodes, intra_node_link="nvlink", inter_node_gbps=gbps,
                      precision=precision, finetune="full", lora_rank=16, seq_len=2048, micro_batch=1,
                      activation_checkpointing=False, grad_accum_steps=accum)


def _comm_per_step(inputs, strategy: str) -> float:
    """Bus bytes per GPU per optimizer step, with the calculator's accumulation rule."""
    from bot.calc.comm import comm_estimate

    return comm_estimate(inputs, strategy, 0.0).gb_per_step * 1e9


def compute(key: str, args: dict[str, str]) -> float:
    """The calculator's value for a tag (KeyError/ValueError for an unknown key or argument)."""
    from bot.calc.memory import optimizer_bytes_per_param, optimizer_step_temp_bytes_per_param

    a = dict(args)
    precision = a.get("precision", "bf16-mixed")
    if key in ("bytes_per_param", "optimizer_bytes_per_param", "states_gib", "ddp_default_bytes_per_param",
               "ddp_default_gib"):
        prec = _prec(precision)
        opt = optimizer_bytes_per_param(a["optimizer"], prec)
        states = prec.param + prec.grad + opt
        if key == "optimizer_bytes_per_param":
            return opt
        if key == "bytes_per_param":
            return states
        if key == "states_gib":
            return float(a["params_b"]) * 1e9 * states / int(a.get("shards", 1)) / GIB
        default = states + prec.grad + optimizer_step_temp_bytes_per_param(a["optimizer"], prec, "foreach")
        if key == "ddp_default_bytes_per_param":
            return default
        return float(a["params_b"]) * 1e9 * default / GIB
    if key == "weights_gib":
        return float(a["params_b"]) * 1e9 * _prec(precision).compute / GIB
    if key == "ddp_bucket_bytes_per_param":
        return float(_prec(precision).grad)
    if key == "optimizer_temp_bytes_per_param":
        return optimizer_step_temp_bytes_per_param(a["optimizer"], _prec(precision), a.get("impl", "foreach"))
    if key in ("comm_ratio", "comm_gb"):
        gpus, accum = int(a.get("gpus", 8)), int(a.get("accum", 1))
        inputs = _comm_inputs(precision, gpus, accum=accum)
        mine = _comm_per_step(inputs, a["strategy"])
        if key == "comm_ratio":
            return mine / _comm_per_step(inputs, "ddp")
        # bus bytes scale with the parameter count: rescale the generic shape to params_b exactly
        return mine / inputs.model.params * float(a["params_b"]) * 1e9 / 1e9
    if key == "hsdp_cross_node_gb":
        from bot.calc.comm import comm_bytes_and_seconds

        nodes, per_node = int(a["nodes"]), int(a["gpus_per_node"])
        multi = _comm_inputs(precision, nodes * per_node, nodes=nodes)
        single = _comm_inputs(precision, per_node)
        inter = comm_bytes_and_seconds(multi, "fsdp_hybrid_shard")[0] - comm_bytes_and_seconds(single, "fsdp_full_shard")[0]
        return inter / multi.model.params * float(a["params_b"]) * 1e9 / 1e9
    if key == "ddp_buckets":
        from bot.calc.memory import DDP_BUCKET_CAP_MB

        grad_bytes = float(a["params_b"]) * 1e9 * _prec(precision).grad
        return grad_bytes / (float(a.get("bucket_mib", DDP_BUCKET_CAP_MB)) * 2**20)
    raise KeyError(f"unknown calc tag key {key!r}")


def _stated(value: str) -> float:
    return float(value.replace(",", ""))


def _decimals(value: str) -> int:
    return len(value.split(".", 1)[1]) if "." in value else 0


def check_text(doc_id: str, text: str) -> list[TagResult]:
    """Every tag of a doc body, recomputed."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for match in TAG.finditer(line):
            key, args, value = match.group("key"), _args(match.group("args")), match.group("value")
            stated = _stated(value)
            problem = ""
            try:
                computed = compute(key, args)
            except Exception as err:  # a tag the calculator cannot evaluate is itself a defect
                computed, problem = None, f"cannot compute: {type(err).__name__}: {err}"
            if computed is not None:
                places = _decimals(value)
                if round(computed, places) != round(stated, places) and abs(computed - stated) > 0.5 * 10**-places:
                    problem = f"calculator gives {computed:.4g}, the doc says {value}"
            before = line[: match.start()]
            if not problem and not _figure_in(value, before):
                problem = f"the figure {value} is not in the text before the tag"
            out.append(TagResult(doc_id, lineno, key, args, stated, computed, problem))
    return out


def _figure_in(value: str, text: str) -> bool:
    """The stated figure appears as a number in ``text`` (not as part of a longer number)."""
    plain = value.replace(",", "")
    for number in re.findall(r"(?<![A-Za-z0-9_.])\d[\d,]*(?:\.\d+)?(?![0-9])", text):
        if number.replace(",", "") == plain:
            return True
    return False


def check_docs(root=None) -> list[TagResult]:
    from bot.knowledge.corpus import load_docs

    return [r for doc in load_docs(root) for r in check_text(doc.id, doc.text)]
