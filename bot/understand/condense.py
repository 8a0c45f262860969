"""A long paste compressed to its facts, so the whole text is read and the question is kept.

The reader's cost is bounded by reading at most ``MAX_CHARS`` per turn. A pasted log is mostly
repetition: the same line once per rank or per step, traceback frames, progress bars. ``condense``
keeps every line once (lines equal up to their digits count once: "[rank3] CUDA out of memory"
is "[rank0] ..." again), drops frames and progress bars, and, when that is still too long, keeps
the beginning, the lines that carry facts (memory figures, cards, flags, errors) and the end: a
question on the first or the last line of a long paste is always read.
"""

from __future__ import annotations

import re

_NOISE = re.compile(r"^\s*(?:File \"[^\"]*\", line \d+|\^+\s*$|~+\s*$|at [\w.$]+\(|\d+%\|[^|]*\||[\s|#=>-]*\d+/\d+ \[\d)",
                    re.A)
_FACT = re.compile(r"out of memory|\boom\b|error|gib|\d\s*(?:gb|g|mib)\b|gpu|cuda|nccl|--\w|\bmodel|world[_ ]size|nproc|"
                   r"rank|node|batch|seq|zero|fsdp|ddp|deepspeed|lora|bf16|fp16|显存|卡|节点|[A-Z]\d{3,4}", re.I | re.A)
_QUESTION = re.compile(r"[?？]|吗|呢|怎么|如何|为什么|\b(?:how|why|what|which|should|can|could)\b", re.I)


def condense(text: str, limit: int) -> tuple[str, bool]:
    """(text of at most ``limit`` characters, whether anything was left out)."""
    if len(text) <= limit:
        return text, False
    kept: list[str] = []
    seen: set[str] = set()
    for line in text.splitlines():
        key = re.sub(r"\d+", "#", line.strip())
        if not key or key in seen or _NOISE.match(line):
            continue
        seen.add(key)
        kept.append(line[:600])
    out = "\n".join(kept)
    if len(out) <= limit:
        return out, True
    head_budget, tail_budget = int(limit * 0.3), int(limit * 0.35)
    head: list[int] = []
    used = 0
    for i, line in enumerate(kept):
        if used + len(line) + 1 > head_budget:
            break
        head.append(i)
        used += len(line) + 1
    tail: list[int] = []
    used = 0
    for i in range(len(kept) - 1, head[-1] if head else -1, -1):
        if used + len(kept[i]) + 1 > tail_budget and tail:
            break
        tail.append(i)
        used += len(kept[i]) + 1
    chosen = set(head) | set(tail)
    budget = limit - sum(len(kept[i]) + 1 for i in chosen)
    for i, line in enumerate(kept):  # the middle: questions first, then lines that carry facts
        if i not in chosen and _QUESTION.search(line) and len(line) + 1 <= budget:
            chosen.add(i)
            budget -= len(line) + 1
    for i, line in enumerate(kept):
        if i not in chosen and _FACT.search(line) and len(line) + 1 <= budget:
            chosen.add(i)
            budget -= len(line) + 1
    return "\n".join(kept[i] for i in sorted(chosen))[:limit], True
