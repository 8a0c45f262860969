"""One decision, said once: the checks that an answer's sentences agree with its own table.

``contradictions(answer)`` lists every place where what the answer says and what its table shows
disagree (issue 25: "the headline names one strategy and the bullets another", "'nothing fits'
stands above a table row that fits", "a configuration the user reports out of memory is called a
fit"). It reads the structured answer only (``recommendation``, ``sections``, ``numbers``), so it
holds for both languages and for every surface, which all render the same sections.

Used by the property test over generated setups (tests/unit/test_answer_consistency.py) and by
``python -m evals.bench_answers``, which counts contradictions over the gold files.
"""

from __future__ import annotations

from typing import Any

from bot.strategies import label

_YES = ("Yes:", "够：", "是的：")
_NO_FIT = ("No: nothing fits", "不够：", "Verdict: nothing fits", "结论：按现在的配置哪种策略都放不下")


def _names(strategy: str) -> tuple[str, str]:
    return label(strategy, "en"), label(strategy, "zh")


def _accumulates(answer: Any, row: Any) -> bool:
    """The pick runs at the largest micro-batch that fits, with gradient accumulation for the
    asked one: its row does not fit as asked, and says the micro-batch it runs at."""
    asked = answer.setup.get("micro_batch") or 1
    return 1 <= row.max_micro_batch < asked and str(row.max_micro_batch) in row.label


def contradictions(answer: Any) -> list[str]:
    """Every disagreement between the answer's sentences and its table (empty when consistent)."""
    out: list[str] = []
    sec = answer.sections
    rec = answer.recommendation.strategy
    rows = list(sec.table or [])
    chosen = [r for r in rows if r.chosen]
    fitting = [r for r in rows if r.fits]
    if rows and rec not in ("none", "out_of_scope"):
        if len(chosen) != 1:
            out.append(f"{len(chosen)} rows are marked as the pick")
        elif chosen[0].strategy != rec:
            out.append(f"the table picks {chosen[0].strategy}, the recommendation is {rec}")
        elif not chosen[0].fits and not _accumulates(answer, chosen[0]):
            out.append(f"the recommended row {chosen[0].label} does not fit")
        headline = sec.headline or ""
        if not any(n in headline for n in _names(rec)):
            out.append(f"the headline does not name the recommendation {rec}: {headline[:80]!r}")
    if rec == "none" and answer.status == "ok":
        gpu_resident = [r for r in fitting if r.strategy != "fsdp_full_shard_offload"]
        if gpu_resident:
            out.append(f"'nothing fits' above a fitting row: {gpu_resident[0].label}")
    first = (sec.direct_answer or sec.headline or "").strip()
    if rows and first.startswith(_YES) and not fitting:
        out.append("the answer says yes but no row fits")
    if rows and first.startswith(_NO_FIT) and [r for r in fitting if r.strategy != "fsdp_full_shard_offload"]:
        out.append("the answer says nothing fits but a row fits")
    # a strategy the user reports running out of memory is never presented as the plain pick
    oom = answer.numbers.get("observed.oom_strategy") if hasattr(answer, "numbers") else None
    if isinstance(oom, str) and chosen and chosen[0].strategy == oom and chosen[0].variant == "base":
        out.append(f"the configuration that ran out of memory ({oom}) is recommended unchanged")
    return out
