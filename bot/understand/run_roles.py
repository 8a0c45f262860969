"""Run roles: which GPU count a message's run failed with and which one worked, and a one-GPU
symptom that is not a count.

"works on 2 GPUs but OOMs on 4", "单卡能跑，四卡就报错": the failing run is the setup the question is
about; the working one is an observation (first-contact batches c and d). An earlier run that worked beside the run
asked about ("I ran a 3B on one H100 fine, now I want a 7B on 4 A100s") is a reference for models and
cards too: ``reference_run`` blanks its model, size and card where the run asked about names its own
(first-contact batch j). "it only uses one GPU",
"只有一张卡在跑" say what a run does, not how many GPUs there are (batch b). ``bot.understand.prose``
reads counts through these rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.understand.counts import COUNT, GPU, MODEL, G, to_int

# "it uses only one GPU", "only use single GPU training", "only GPU 0 is busy", "只用了一张卡",
# "只有一张卡在跑": what the run does (a symptom), not how many GPUs there are (first-contact batch b)
_ONE_GPU_SYMPTOM_BEFORE = re.compile(
    r"(?:\b(?:only|just)\s+(?:uses?|used|using|runs?|running|trains?|training|utili[sz]es?|utili[sz]ing|sees?|"
    r"occupies|concentrates?\s+on|on)\b[^.,;。，；\n]{0,16}|\b(?:uses?|used|using|runs?|running|utili[sz]es?|trains?)\s+"
    r"(?:on\s+)?(?:only|just)\s+[^.,;。，；\n]{0,8}|concentrates?\s+on\s+|(?:只|仅)(?:用了?|使用了?|在|跑了?|跑在)[^，。；\n]{0,6})$",
    re.I)
_ONE_GPU_SYMPTOM_AFTER = re.compile(r"^\s*(?:is|was|gets?)\s+(?:being\s+)?(?:used|busy|utili[sz]ed|working|occupied)|"
                                    r"^\s*(?:[张块]?(?:卡|显卡|gpu))?\s*(?:在跑|在用|在工作|在训练|有负载|有占用|被占用|被使用)", re.I)


def one_gpu_symptom(text: str, start: int, end: int) -> bool:
    """The one GPU at ``text[start:end]`` is what the run does ("uses only one GPU"), not a count."""
    return bool(_ONE_GPU_SYMPTOM_BEFORE.search(text[max(0, start - 40): start])
                or _ONE_GPU_SYMPTOM_AFTER.search(text[end: end + 16]))


# The run that failed and the one that worked, by GPU count: "works on 2 GPUs but OOMs on 4",
# "单卡能跑，四卡就报错", "fine on one card, fails with DDP on 8". The failing run is the setup; the
# working one is an observation (first-contact batches c and d).
_RUN_CLAUSE = re.compile(r"[,，;；。!?！？\n]|(?<!\d)\.(?!\d)|\bbut\b|\bhowever\b|\bwhereas\b|\bwhile\b|但是?|可是|然而|却", re.I | re.A)
_RUN_FAILS = re.compile(r"oom\w*|out of memory|fail\w*|crash\w*|\bkilled\b|\berrors?\b|\bhang\w*|\bstuck\b|\btime[ds]? ?out\b|"
                        r"超时|卡死|hang住|"
                        r"does(?:n'?t| not) (?:fit|work|run)|won'?t (?:fit|run)|runs? out|爆显存|爆了|炸|显存不够|溢出|"
                        r"跑不(?:起来|动|了)|报错|不行|失败|卡住|挂了|not enough (?:gpu |cuda )?(?:memory|vram)|insufficient (?:gpu )?memory|"
                        r"(?:显存|内存)\s*(?:不足|不够)", re.I | re.A)
_RUN_WORKS = re.compile(r"\bworks?\b|\bworked\b|\bworking\b|(?:runs?|ran|trains?|trained|is|was|it'?s|goes|went)\s+(?:fine|ok|okay|well)\b|"
                        r"\bfine (?:on|with)\b|no problems?\b|能跑|可以跑|跑得(?:起来|动)|(?<!不)正常|没(?:有)?问题|成功|跑通|"
                        # a run that reports the memory it took ran: "with 1 GPU it takes up 12.5g", "单卡占用20G"
                        r"(?:\buses?|\bused|\btakes?(?: up)?|\btook(?: up)?|occup\w*|consum\w*|\busage\s*(?:is|was|of)?|占用了?|用了|占了)\s*"
                        r"(?:only|just|about|around|~|约|大约|只有|仅|才)?\s*"
                        r"\d+(?:\.\d+)?\s*(?:gib|gb|g)(?![a-z])", re.I | re.A)
_RUN_COUNT = re.compile(COUNT + r"\s*(?:张|块|个)?\s*(?:卡|显卡|gpus?\b|cards?\b|" + G + r"s?)|"
                        r"(单卡|单张卡?|一张卡|一块卡|\b(?:a )?single (?:gpu|card)\b|\bone (?:gpu|card)\b)|"
                        r"(多卡|多张卡|multi-?gpu|multiple gpus|several gpus|\bmore gpus)", re.I | re.A)
# "OOMs on 4": the unit said once, in the other clause
_RUN_BARE = re.compile(r"(?:\bon|\bwith|\bto|用|到|上)\s*(\d{1,3})(?![\d.]|\s*(?:gb|g|b|k|steps?|epochs?)\b)\s*$", re.I | re.A)


def _run_state(clause: str) -> str | None:
    fails, works = bool(_RUN_FAILS.search(clause)), bool(_RUN_WORKS.search(clause))
    return "failed" if fails and not works else "worked" if works and not fails else None


@dataclass
class _RunClause:
    """One clause of a message about runs: whether it says a run failed or worked, and the GPU
    counts it names (value, span, the words)."""

    state: str | None
    mentions: list[tuple[int, tuple[int, int], str]]
    text: str
    start: int


def count_roles(text: str) -> tuple[int | None, int, list[tuple[int, int]], str, str] | None:
    """(failed count or None for "several", worked count, spans of the worked count, failed span,
    worked span) when one clause says a run with one count failed and another that a run with a
    different count worked; else None."""
    bounds = [0, *(x for m in _RUN_CLAUSE.finditer(text) for x in (m.start(), m.end())), len(text)]
    clauses: list[_RunClause] = []
    for start, end in zip(bounds[::2], bounds[1::2], strict=False):
        chunk = text[start:end]
        mentions = []
        for m in _RUN_COUNT.finditer(chunk):
            value = to_int(m.group(1)) if m.group(1) else 1 if m.group(2) else 0
            if value is not None and not one_gpu_symptom(text, start + m.start(), start + m.end()):
                mentions.append((value, (start + m.start(), start + m.end()), m.group(0)))
        clauses.append(_RunClause(_run_state(chunk), mentions, chunk, start))
    for i, clause in enumerate(clauses):  # "when I use 4 GPUs, the job is killed": the next clause says
        if clause.state is None and clause.mentions and i + 1 < len(clauses) and not clauses[i + 1].mentions:
            clause.state = clauses[i + 1].state
    if not any(c.state == "worked" and c.mentions for c in clauses):
        return None
    for clause in clauses:  # "... but OOMs on 4": the count alone, its unit said in the other clause
        if clause.state and not clause.mentions and (bare := _RUN_BARE.search(clause.text)):
            at = clause.start + bare.start(1)
            clause.mentions = [(int(bare.group(1)), (at, at + len(bare.group(1))), bare.group(0).strip())]
    failed = {v for c in clauses if c.state == "failed" for v, _, _ in c.mentions}
    worked = {v for c in clauses if c.state == "worked" for v, _, _ in c.mentions}
    if len(failed) != 1 or len(worked) != 1 or failed == worked or worked == {0}:
        return None
    fail_value, work_value = failed.pop(), worked.pop()
    fail_span = next(sp for c in clauses if c.state == "failed" for v, _, sp in c.mentions if v == fail_value)
    work_span = next(sp for c in clauses if c.state == "worked" for v, _, sp in c.mentions if v == work_value)
    # every mention of the working count is the working run (it may come again in another clause)
    spans = [span for c in clauses for v, span, _ in c.mentions if v == work_value and c.state != "failed"]
    return (fail_value or None), work_value, spans, fail_span, work_span


# The method that failed and the one that worked: "full fine-tuning OOMs, LoRA runs", "全参爆显存，LoRA能跑".
LORA_WORD = r"(q[-_ ]?lora|lora)"
FULL_WORD = r"(全参(?:数)?(?:微调)?|全量(?:微调)?|full[- ]?(?:parameter|param)s?(?:\s*fine-?tun\w*)?|full\s*-?\s*fine-?tun\w*|full\s*ft\b)"
_METHOD_FAILS = r"(?:oom\w*|out of memory|fail\w*|crash\w*|does(?:n'?t| not) (?:fit|work|run)|won'?t (?:fit|run)|爆显存|显存不够|跑不(?:起来|动|了)|报错|不行|失败)"
_METHOD_WORKS = r"(?:works?(?: fine| well)?|worked|runs? (?:fine|ok|well)|ran (?:fine|ok)|is fine|fits|跑得(?:起来|动)|能跑|可以跑|没问题|正常|可以)"


def method_roles(text: str) -> tuple[str, str, str] | None:
    """(failed method, working method, span) when one method is said to fail and the other to work."""
    methods = [(m.start(), "lora" if "lora" in m.group(0).lower() else "full", m.group(0))
               for m in re.finditer(FULL_WORD + "|" + LORA_WORD, text, re.I | re.A)]
    kinds = {k for _, k, _ in methods}
    if kinds != {"lora", "full"}:
        return None
    fail_of: dict[str, str] = {}
    for start, kind, span in methods:
        after = text[start: start + 60]
        clause = re.split(r"[,，;；。.!?？\n]|\bbut\b|但是?|而", after[len(span):], maxsplit=1)[0]
        if re.search(_METHOD_FAILS, clause, re.I | re.A):
            fail_of.setdefault(kind, "failed")
        elif re.search(_METHOD_WORKS, clause, re.I | re.A):
            fail_of.setdefault(kind, "worked")
    failed = [k for k, v in fail_of.items() if v == "failed"]
    worked = [k for k, v in fail_of.items() if v == "worked"]
    if len(failed) == 1 and worked and worked[0] != failed[0]:
        span = next(sp for _, k, sp in methods if k == failed[0])
        return failed[0], worked[0], span
    return None


def grid_roles(text: str, grids: list[tuple[int, int, tuple[int, int], str]]) -> tuple[int, list[int]] | None:
    """(index of the failing grid, indexes of the working ones) when runs are written as machines x
    GPUs and one clause says a run failed, another that a run with other machines worked: "works on
    2 nodes x 8 GPUs, hangs on 4 nodes x 8", "2机x8卡正常，4机x8卡卡住" (first-contact batch f).
    ``grids`` are (nodes, GPUs per node, span, words) in text order; None when the roles are unclear."""
    if len({(n, p) for n, p, _, _ in grids}) < 2:
        return None
    bounds = [0, *(x for m in _RUN_CLAUSE.finditer(text) for x in (m.start(), m.end())), len(text)]
    clauses = list(zip(bounds[::2], bounds[1::2], strict=False))
    states = [_run_state(text[s:e]) for s, e in clauses]
    for i in range(len(states) - 1):  # "with 6 machines x 8, the job": the next clause says how it went
        if states[i] is None and states[i + 1] is not None and not any(
                clauses[i + 1][0] <= g[2][0] < clauses[i + 1][1] for g in grids):
            states[i] = states[i + 1]

    def state_of(span: tuple[int, int]) -> str | None:
        return next((st for (s, e), st in zip(clauses, states, strict=False) if s <= span[0] < e), None)

    failed = [i for i, g in enumerate(grids) if state_of(g[2]) == "failed"]
    worked = [i for i, g in enumerate(grids) if state_of(g[2]) == "worked"]
    if len({grids[i][:2] for i in failed}) != 1 or not worked or {grids[i][:2] for i in worked} & {grids[failed[0]][:2]}:
        return None
    return failed[0], worked


# --- an earlier run beside the one asked about -----------------------------------------------------
# "I ran a 3B on a single 80GB H100 fine, now I want a 7B on 4 A100s", "Qwen2.5-7B trains on my 4090 without
# trouble but Qwen2.5-14B runs out of memory", "之前在一张A100上微调3B没问题，现在想在4张4090上微调7B"
# (first-contact batch j): a run that worked, beside a run that failed or one the asker wants or asks about,
# is history. Its model, size and card are a reference, not the setup, wherever the run asked about names
# its own (a model or size; a card, with the count and memory written with it); what the asked run does
# not name again is kept (the same card, a bigger model). Never a contradiction between the two.
_REF_CLAUSE = re.compile(r"[,，;；。!?！？\n()（）]|(?<!\d)\.(?!\d)|\bbut\b|\bhowever\b|\bwhereas\b|\bwhile\b|但是?|可是|然而|不过|"
                         r"(?=\b(?:now|next)\b|现在|如今|接下来)", re.I | re.A)
_REF_WORKS = re.compile(_RUN_WORKS.pattern + r"|\bno (?:issues?|trouble|errors?|oom)\b|\bwithout (?:any )?(?:issues?|problems?|"
                        r"trouble|errors?|oom)\b|\bsuccessfully\b|\b(?:was|were) able to\b|\bmanaged to\b|\bjust fine\b|"
                        r"\bcould (?:do|train|run|fine-?tune|finetune|fit)\b|\b(?:fine|ok|okay|well)\s*$|很顺利|顺利", re.I | re.A)
# the run asked about: one the asker wants, plans or tries now, or asks about
_REF_WANTS = re.compile(r"\b(?:want|wants|wanted|would like|'d like|plan|planning|going|hope|hoping|trying|try|need)\s+to\b|"
                        r"\b(?:now|next|this time)\b|\bwould\b|\bwill\b|\bcan i\b|\bshould\b|想|打算|准备|计划|现在|如今|接下来|要不要|能不能|"
                        r"可以吗|行吗|吗|呢", re.I | re.A)
_SIZE = re.compile(r"(?<![\w.])\d{1,4}(?:\.\d{1,3})?\s*[bB](?![a-zA-Z])", re.A)
_CARD_WORDS = re.compile(r"(?:(?:\d{1,3}|a single|single|one|an?|[一两二三四五六七八九十单]+)\s*(?:x|×|\*|张|块|个)?\s*)?"
                         r"(?:\d{1,3}\s*(?:gi?b|g)\s*)?" + G + r"(?:\s*\d{1,3}\s*(?:gi?b|g)(?![a-z]))?s?"
                         r"(?:\s*(?:gpus?|cards?|显卡|卡)\b)?", re.I)


def _kind_spans(chunk: str, start: int, kind: str) -> list[tuple[int, int]]:
    """The spans (in the whole text) of a clause's model names and sizes, or of its cards with the
    count and memory written with them."""
    if kind == "model":
        return [(start + m.start(), start + m.end()) for m in re.finditer(MODEL + "+", chunk)] + \
            [(start + m.start(), start + m.end()) for m in _SIZE.finditer(chunk)]
    return [(start + m.start(), start + m.end()) for m in _CARD_WORDS.finditer(chunk) if GPU in m.group(0)]


def _said(original: str, spans: list[tuple[int, int]], kind: str) -> set[str]:
    """What the spans say, as words to compare (a card without its count)."""
    out = set()
    for s, e in spans:
        words = original[s:e].lower()
        if kind == "card":
            words = re.sub(r"^(?:\d{1,3}|a single|single|one|an?|[一两二三四五六七八九十单]+)\s*(?:x|×|\*|张|块|个)?\s*", "", words)
            words = re.sub(r"s?(?:\s*(?:gpus?|cards?|显卡|卡))?$", "", words)
        out.add(re.sub(r"[\s_\-]+", "", words))
    return out


def reference_run(marked: str, original: str) -> tuple[str, list[tuple[int, int]], list[str]]:
    """(``marked`` with an earlier run's model, size and card blanked, the blanked spans, the earlier
    run's clauses in the person's words) where a run that worked stands beside the run asked about
    and the two name different models or cards; else (``marked``, [], [])."""
    bounds = [0, *(x for m in _REF_CLAUSE.finditer(marked) for x in (m.start(), m.end())), len(marked)]
    clauses = [(s, e) for s, e in zip(bounds[::2], bounds[1::2], strict=False) if marked[s:e].strip()]
    states: list[str | None] = []
    for s, e in clauses:
        chunk = marked[s:e]
        rest = marked[e: e + 3]
        if _RUN_FAILS.search(chunk) or _REF_WANTS.search(chunk) or rest.lstrip()[:1] in ("?", "？"):
            states.append("asked")
        elif _REF_WORKS.search(chunk):
            states.append("worked")
        else:
            states.append(None)
    figures = [bool(_kind_spans(marked[s:e], s, "model") or _kind_spans(marked[s:e], s, "card")) for s, e in clauses]
    for i in range(len(clauses) - 1):  # "I tried Llama 7B on 8 A100s" + "but hit an OOM": the next clause says how it went
        if states[i] is None and figures[i] and not figures[i + 1] and states[i + 1] is not None:
            states[i] = states[i + 1]
    worked = [i for i, st in enumerate(states) if st == "worked" and figures[i]]
    asked = [i for i, st in enumerate(states) if st == "asked" and figures[i]]
    if not worked or not asked:
        return marked, [], []
    blanked: list[tuple[int, int]] = []
    for kind in ("model", "card"):
        asked_spans = [sp for i in asked for sp in _kind_spans(marked[clauses[i][0]: clauses[i][1]], clauses[i][0], kind)]
        if not asked_spans:
            continue
        asked_said = _said(original, asked_spans, kind)
        for i in worked:
            spans = _kind_spans(marked[clauses[i][0]: clauses[i][1]], clauses[i][0], kind)
            if spans and not _said(original, spans, kind) <= asked_said:
                blanked += spans
    if not blanked:
        return marked, [], []
    chars = list(marked)
    for s, e in blanked:
        chars[s:e] = " " * (e - s)
    words = [original[clauses[i][0]: clauses[i][1]].strip() for i in worked
             if any(clauses[i][0] <= s < clauses[i][1] for s, _ in blanked)]
    return "".join(chars), blanked, words
