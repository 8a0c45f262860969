"""The advisor's old entry point, kept for callers of ``advise(resolved, est)``.

The decision now lives in ``bot.decide`` (the ladder: docs/decision.md) and takes the evidence
record of ``bot.evidence``; this shim builds that record for an already resolved setup and maps
the ``Decision`` onto the older ``Advice`` shape (strategy, alternatives, confidence, reasons,
changes). The margin and the slow-link threshold are imported from ``bot.decide``, never restated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.decide import COMFORT, DDP_MARGIN, MARGIN, SLOW_LINK_GBPS, Reason, decide
from bot.evidence import evidence_for_resolved
from bot.setup import ResolvedSetup

__all__ = ["COMFORT", "DDP_MARGIN", "MARGIN", "SLOW_LINK_GBPS", "Advice", "Reason", "advise"]


@dataclass
class Advice:
    strategy: str
    alternatives: list[str]
    confidence: str  # high | medium | low
    reasons: list[Reason]
    changes: list[Reason]  # what would change the decision
    variant: str = ""  # the chosen configuration's variant ("ckpt", "bucket_fused", ...)


def advise(resolved: ResolvedSetup, est: Any = None) -> Advice:
    """The decision for ``resolved`` (``est``: its estimate, when already computed)."""
    d = decide(evidence_for_resolved(resolved, est))
    return Advice(d.strategy, list(d.alternatives), d.confidence, list(d.reasons), list(d.what_ifs), d.variant)
