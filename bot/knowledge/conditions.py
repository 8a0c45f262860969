"""Structured conditions on a training setup: when a forum claim's verdict applies.

A forum claim is often right for one setup and wrong for another ("DDP is fine on a 40 GB card"
holds for LoRA, not for full fine-tuning with fp32 Adam states). Each claim in the corpus carries
a ``condition``: a small JSON object over setup facts, checked here against the user's setup at
answer time, and written out in either language.

Condition keys (all optional; an object means *all* of them; ``any_of`` holds alternatives):

| key | value | fact it reads |
|---|---|---|
| ``finetune`` | "full" / "lora" / "qlora" or a list | ``setup.finetune`` |
| ``optimizer_state`` | "fp32_adam" / "reduced" | AdamW with fp32 master weights + moments, or smaller states (8-bit, pure bf16, SGD) |
| ``precision`` | a ``Precision`` value or a list | ``setup.precision`` |
| ``min_params_b`` / ``max_params_b`` | number | ``setup.params_b`` (or the model's) |
| ``min_gpu_count`` / ``max_gpu_count`` | int | GPUs in the job |
| ``min_gpu_memory_gb`` / ``max_gpu_memory_gb`` | number | memory per GPU |
| ``multi_node`` | bool | more than one node |
| ``grad_accum`` | bool | ``grad_accum_steps > 1`` |
| ``inter_node_link`` / ``intra_node_link`` | a link name or a list | links |
| ``activation_checkpointing`` | bool | checkpointing on |
| ``ddp_bucket_view`` | bool | DDP ``gradient_as_bucket_view`` |
| ``optimizer_impl`` | "foreach" / "fused" / "forloop" or a list | AdamW implementation |
| ``any_of`` | list of conditions | at least one holds |

:func:`evaluate` answers True (met), False (not met) or None (the setup does not say: the
answer should say "depends on ..."), plus the facts it could not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_ENUMS: dict[str, tuple[str, ...]] = {
    "finetune": ("full", "lora", "qlora"),
    "optimizer_state": ("fp32_adam", "reduced"),
    "precision": ("bf16-mixed", "fp16-mixed", "bf16", "fp32", "fp16"),
    "inter_node_link": ("infiniband", "ethernet", "none"),
    "intra_node_link": ("nvlink", "pcie"),
    "optimizer_impl": ("foreach", "fused", "forloop"),
}
_BOUNDS = ("min_params_b", "max_params_b", "min_gpu_count", "max_gpu_count",
           "min_gpu_memory_gb", "max_gpu_memory_gb")
_BOOLS = ("multi_node", "grad_accum", "activation_checkpointing", "ddp_bucket_view")
KEYS = (*_ENUMS, *_BOUNDS, *_BOOLS, "any_of")


@dataclass(frozen=True)
class Outcome:
    met: bool | None  # None: the setup does not state what the condition needs
    unknown: tuple[str, ...] = ()  # condition keys whose facts the setup lacks
    assumed: tuple[str, ...] = ()  # condition keys decided by an assumed (default) value


def validate(condition: Any) -> list[str]:
    """What is wrong with a condition object (empty list: valid)."""
    if not isinstance(condition, dict):
        return ["condition must be a JSON object"]
    errors = []
    for key, value in condition.items():
        if key not in KEYS:
            errors.append(f"unknown condition key {key!r} (use one of {', '.join(KEYS)})")
        elif key == "any_of":
            if not isinstance(value, list) or len(value) < 2:
                errors.append("any_of must list at least two conditions")
            else:
                errors += [e for sub in value for e in validate(sub)]
                if any(isinstance(sub, dict) and not sub for sub in value):
                    errors.append("any_of holds an empty condition")
        elif key in _ENUMS:
            values = value if isinstance(value, list) else [value]
            bad = [v for v in values if v not in _ENUMS[key]]
            if bad or not values:
                errors.append(f"{key}: {bad or value!r} not in {_ENUMS[key]}")
        elif key in _BOUNDS:
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                errors.append(f"{key} must be a positive number")
        elif not isinstance(value, bool):
            errors.append(f"{key} must be true or false")
    return errors


# --------------------------------------------------------------------------------------------
# Facts of a setup
# --------------------------------------------------------------------------------------------


def facts(setup: Any) -> tuple[dict[str, Any], set[str]]:
    """(fact -> value or None, names of facts that come from assumed defaults).

    ``setup`` is a ``TrainingSetup`` (None fields are unknown), a ``ResolvedSetup`` (defaults
    filled; those it names in ``assumed`` are marked), a plain dict of setup fields, or None."""
    if setup is None:
        return {}, set()
    assumed: set[str] = set()
    nodes = None
    if hasattr(setup, "setup") and hasattr(setup, "assumed"):  # ResolvedSetup
        assumed = set(setup.assumed)
        nodes, gpu_count, memory = setup.nodes, setup.gpu_count, setup.gpu_memory_gb
        params_b = setup.setup.params_b or getattr(setup.model, "params_b", None)
        data = setup.setup.model_dump()
    else:
        data = setup.model_dump() if hasattr(setup, "model_dump") else dict(setup)
        params_b, memory = data.get("params_b"), data.get("gpu_memory_gb")
        gpu_count, nodes = data.get("gpu_count"), data.get("nodes")
        if gpu_count is None and nodes and data.get("gpus_per_node"):
            gpu_count = nodes * data["gpus_per_node"]
    if nodes is None and gpu_count is not None:
        nodes = 1 if gpu_count <= 8 else None  # "8 GPUs" is one node; "64 GPUs" says nothing
    precision, optimizer = data.get("precision"), data.get("optimizer")
    state = None
    if optimizer == "adam8bit" or optimizer == "sgd" or precision == "bf16":
        state = "reduced"
    elif optimizer == "adamw":
        state = "fp32_adam" if precision in (None, "bf16-mixed", "fp16-mixed", "fp32") else "reduced"
    steps = data.get("grad_accum_steps")
    out = {
        "finetune": data.get("finetune"), "optimizer_state": state, "precision": precision,
        "params_b": params_b, "gpu_count": gpu_count, "gpu_memory_gb": memory,
        "multi_node": None if nodes is None else nodes > 1,
        "grad_accum": None if steps is None else steps > 1,
        "inter_node_link": data.get("inter_node_link"), "intra_node_link": data.get("intra_node_link"),
        "activation_checkpointing": data.get("activation_checkpointing"),
        "ddp_bucket_view": data.get("ddp_bucket_view"), "optimizer_impl": data.get("optimizer_impl"),
    }
    marked = {"finetune", "precision", "optimizer_impl", "ddp_bucket_view", "activation_checkpointing",
              "inter_node_link", "intra_node_link", "grad_accum_steps", "gpu_count", "gpu_memory_gb"}
    assumed_facts = {f for f in marked & assumed}
    if {"optimizer", "precision"} & assumed:
        assumed_facts.add("optimizer_state")
    if "grad_accum_steps" in assumed:
        assumed_facts.add("grad_accum")
    if {"gpu", "gpu_memory_gb"} & assumed:
        assumed_facts.add("gpu_memory_gb")
    if {"gpu_count", "nodes"} & assumed:
        assumed_facts |= {"gpu_count", "multi_node"}
    return out, assumed_facts


_FACT_OF = {"min_params_b": "params_b", "max_params_b": "params_b", "min_gpu_count": "gpu_count",
            "max_gpu_count": "gpu_count", "min_gpu_memory_gb": "gpu_memory_gb",
            "max_gpu_memory_gb": "gpu_memory_gb"}


def evaluate(condition: dict[str, Any] | None, setup: Any) -> Outcome:
    """Whether ``setup`` meets ``condition`` (an empty condition is always met)."""
    known, assumed = facts(setup)
    return _evaluate(condition or {}, known, assumed)


def _evaluate(condition: dict[str, Any], known: dict[str, Any], assumed: set[str]) -> Outcome:
    results: list[Outcome] = []
    for key, want in condition.items():
        if key == "any_of":
            subs = [_evaluate(sub, known, assumed) for sub in want]
            if any(s.met for s in subs):
                hit = next(s for s in subs if s.met)
                results.append(Outcome(True, (), hit.assumed))
            elif all(s.met is False for s in subs):
                results.append(Outcome(False, (), tuple(a for s in subs for a in s.assumed)))
            else:
                results.append(Outcome(None, tuple(u for s in subs for u in s.unknown)))
            continue
        fact = _FACT_OF.get(key, key)
        value = known.get(fact)
        if value is None:
            results.append(Outcome(None, (key,)))
            continue
        if key.startswith("min_"):
            met = float(value) >= float(want)
        elif key.startswith("max_"):
            met = float(value) <= float(want)
        elif isinstance(want, list):
            met = value in want
        else:
            met = value == want
        results.append(Outcome(met, (), (key,) if fact in assumed else ()))
    if any(r.met is False for r in results):
        return Outcome(False, (), tuple(a for r in results if r.met is False for a in r.assumed))
    if any(r.met is None for r in results):
        return Outcome(None, tuple(u for r in results for u in r.unknown))
    return Outcome(True, (), tuple(a for r in results for a in r.assumed))


# --------------------------------------------------------------------------------------------
# Wording
# --------------------------------------------------------------------------------------------

# The words are data: ``forum.claim_*`` in bot/answer/messages/{en,zh}.yaml (one key per condition
# kind; a list of values is joined by the catalog's separators).
_BOOLS = ("multi_node", "grad_accum", "activation_checkpointing", "ddp_bucket_view")
_BOUNDS = ("min_params_b", "max_params_b", "min_gpu_count", "max_gpu_count", "min_gpu_memory_gb", "max_gpu_memory_gb")


def _num(value: float) -> str:
    return f"{value:g}"


def _w(lang: str, key: str, /, **context: Any) -> str:
    from bot.answer.catalog import render  # a leaf (YAML + Jinja): the wording is data

    return render(lang, f"forum.claim_{key}", context)


def _one(key: str, value: Any, lang: str) -> str:
    values = value if isinstance(value, list) else [value]
    if key == "finetune":
        return _w(lang, "or").join(_w(lang, f"finetune.{v}") for v in values)
    if key == "optimizer_state":
        return _w(lang, f"state.{value}")
    if key in ("precision", "optimizer_impl"):
        return _w(lang, key, values="/".join(values))
    if key in ("inter_node_link", "intra_node_link"):
        return _w(lang, key, names="/".join(_w(lang, f"link.{v}") for v in values))
    if key in _BOOLS:
        return _w(lang, f"flag.{key}.{'on' if value else 'off'}")
    if key in _BOUNDS:
        return _w(lang, f"bound.{key}", n=_num(float(value)))
    raise KeyError(key)


def describe(condition: dict[str, Any] | None, language: str = "en") -> str:
    """The condition in words ("" for an empty condition)."""
    lang = "zh" if language == "zh" else "en"
    parts = []
    for key, value in (condition or {}).items():
        if key == "any_of":
            parts.append(_w(lang, "any_of", alts=[describe(sub, language) for sub in value]))
        else:
            parts.append(_one(key, value, lang))
    return _w(lang, "and").join(parts) if len(parts) > 1 else (parts[0] if parts else "")


def depends_text(condition: dict[str, Any] | None, language: str = "en") -> str:
    """"depends on X" for an answer with no (or too little) setup to judge the claim."""
    return _w("zh" if language == "zh" else "en", "depends", what=describe(condition, language))
