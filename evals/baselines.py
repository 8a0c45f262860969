"""Baselines: what a team would get without shardwise, scored on the same cases as the bot.

- ``always_ddp``: the default everyone starts with.
- ``always_fsdp``: "just use FSDP" (full shard), the other folk answer.
- ``forum_majority``: what most answers in the seed thread recommend for the case's setup. Each
  forum answer votes ``ddp`` or ``fsdp`` (its ``stance``); an answer whose stance is conditional
  votes only when its ``stance_condition`` can be evaluated for the setup (rules below), and
  otherwise abstains. The majority wins; a tie goes to FSDP, the thread's overall lean. FSDP maps
  to ``fsdp_full_shard``: that is what the thread means by "FSDP".

A baseline only picks a strategy, so it is scored on the ``strategy`` expectation alone; the
report shows N/A for the metrics it cannot have. Baselines see the setup the bot parsed
(``answer.setup``), so the comparison isolates the decision, not the parsing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

BASELINES = ("always_ddp", "always_fsdp", "forum_majority")
LABELS = {
    "always_ddp": "always DDP",
    "always_fsdp": "always FSDP full shard",
    "forum_majority": "forum's majority",
}

_GB_THRESHOLD = re.compile(r"(?:>=|≥|at least)\s*(\d+(?:\.\d+)?)\s*GB", re.I)
# Conditions about a full replica fitting, running out of memory or memory being the bottleneck:
# "ddp if a full replica fits", "fsdp if ddp runs out of memory", "ddp if memory suffices".
_MEMORY_CONDITION = re.compile(r"fits|suffices|out of memory|\boom\b|memory[- ]bound|memory is the bottleneck"
                               r"|tight memory|memory is tight|memory limits", re.I)


def ddp_fits(setup: dict[str, Any]) -> bool | None:
    """Does a DDP replica fit for this setup? From the calculator; None when it cannot say."""
    try:
        from bot.calc import estimate_setup
        from bot.core.setup import TrainingSetup

        known = {k: v for k, v in setup.items() if k in TrainingSetup.model_fields and v is not None}
        return bool(estimate_setup(TrainingSetup(**known)).memory["ddp"].fits)
    except Exception:  # unknown model size, GPU or count: the condition is not evaluable
        return None


def forum_vote(stance: str, condition: str, setup: dict[str, Any],
               fits: Callable[[], bool | None]) -> str | None:
    """One forum answer's vote ('ddp' | 'fsdp') for this setup, or None when it abstains.

    Evaluable conditions, in this order:
    1. an explicit card-size threshold ("ddp if a full replica fits (claims >=40 GB cards)"): the
       poster's own rule, applied as written to ``gpu_memory_gb``;
    2. a memory condition ("fits", "runs out of memory", "memory-bound"): DDP if the calculator
       says a replica fits, else FSDP, which is what following that advice ends with.
    An unconditional ddp/fsdp stance keeps its vote; anything else abstains.
    """
    threshold = _GB_THRESHOLD.search(condition or "")
    memory = setup.get("gpu_memory_gb")
    if threshold and memory:
        return "ddp" if float(memory) >= float(threshold.group(1)) else "fsdp"
    if _MEMORY_CONDITION.search(condition or ""):
        verdict = fits()
        if verdict is not None:
            return "ddp" if verdict else "fsdp"
    return stance if stance in ("ddp", "fsdp") else None


@lru_cache(maxsize=1)
def _forum_stances() -> tuple[tuple[str, str, str], ...]:
    from bot.knowledge.corpus import load_forum

    return tuple((a.id, a.stance, a.stance_condition) for a in load_forum())


def forum_majority(setup: dict[str, Any]) -> str:
    cached: list[bool | None] = []

    def fits() -> bool | None:  # computed at most once per setup
        if not cached:
            cached.append(ddp_fits(setup))
        return cached[0]

    votes = [forum_vote(stance, condition, setup, fits) for _, stance, condition in _forum_stances()]
    ddp, fsdp = votes.count("ddp"), votes.count("fsdp")
    return "ddp" if ddp > fsdp else "fsdp_full_shard"


def baseline_strategies(setup: dict[str, Any] | None) -> dict[str, str]:
    """The strategy each baseline picks for a setup (the bot's parsed ``answer.setup``)."""
    setup = setup or {}
    return {
        "always_ddp": "ddp",
        "always_fsdp": "fsdp_full_shard",
        "forum_majority": forum_majority(setup),
    }
