"""The LLM path's guard: what a model's phrasing of an answer may say (issue 28: pipeline, not surface).

``check_llm_text(text, answer, user_turns)`` lists why ``text`` may not replace ``answer.text``:
every number must trace to the answer's numbers, setup, cited quotes or the user's turns
(``bot.render.untraceable_numbers``), in digits or spelled out (``bot.numwords``), under its unit's
kind when it has one (``bot.figure_units``: "8 GiB" must be a memory figure, not the GPU count); it
may not recommend another strategy or state a fits verdict the calculator contradicts
(``recommended_in_text``, ``fits_claims``); every ``[n]`` must resolve; no configured secret may
appear. The LLM surface (``bot.surfaces.llm``) calls it and keeps the deterministic answer when the
list is not empty.
"""

from __future__ import annotations

import os
import re

from bot.answer import Answer
from bot.figure_units import wrong_unit_figures
from bot.numwords import candidate_values, spelled_numbers
from bot.render import dangling_markers, fmt, prose, untraceable_numbers
from bot.strategies import TRAINING_STRATEGIES


def _secrets() -> list[str]:
    return [v for k, v in os.environ.items()
            if v and len(v) >= 8 and any(s in k.upper() for s in ("KEY", "TOKEN", "SECRET", "PASSWORD"))]


# --------------------------------------------------------------------------------------------
# The guard: the LLM may phrase the answer, never contradict it (strategy, fits verdicts, figures)
# --------------------------------------------------------------------------------------------
# Every way an answer names a strategy, longest first so "fully sharded data parallel" is not
# read as "data parallel". "fsdp" alone is the family: any FSDP variant.
_STRATEGY_ALIASES: tuple[tuple[str, str], ...] = tuple(sorted((
    ("fully sharded data parallel", "fsdp"), ("fullyshardeddataparallel", "fsdp"), ("fully_shard", "fsdp"),
    ("完全分片数据并行", "fsdp"), ("fsdp2", "fsdp"), ("fsdp1", "fsdp"), ("fsdp", "fsdp"),
    ("distributeddataparallel", "ddp"), ("distributed data parallel", "ddp"), ("ddp", "ddp"),
    ("分布式数据并行", "ddp"), ("数据并行", "ddp"),
    ("full_shard", "fsdp_full_shard"), ("full shard", "fsdp_full_shard"), ("full-shard", "fsdp_full_shard"),
    ("fully shard", "fsdp_full_shard"), ("zero-3", "fsdp_full_shard"), ("zero 3", "fsdp_full_shard"),
    ("zero3", "fsdp_full_shard"), ("zero stage 3", "fsdp_full_shard"), ("全分片", "fsdp_full_shard"),
    ("完全分片", "fsdp_full_shard"),
    ("shard_grad_op", "fsdp_shard_grad_op"), ("shard grad-op", "fsdp_shard_grad_op"),
    ("shard grad op", "fsdp_shard_grad_op"), ("zero-2", "fsdp_shard_grad_op"), ("zero 2", "fsdp_shard_grad_op"),
    ("zero2", "fsdp_shard_grad_op"), ("zero stage 2", "fsdp_shard_grad_op"), ("梯度+优化器分片", "fsdp_shard_grad_op"),
    ("梯度分片", "fsdp_shard_grad_op"),
    ("hsdp", "fsdp_hybrid_shard"), ("hybrid_shard", "fsdp_hybrid_shard"), ("hybrid shard", "fsdp_hybrid_shard"),
    ("hybrid sharding", "fsdp_hybrid_shard"), ("混合分片", "fsdp_hybrid_shard"),
    ("cpu offload", "fsdp_full_shard_offload"), ("cpu_offload", "fsdp_full_shard_offload"),
    ("offload", "fsdp_full_shard_offload"), ("offloading", "fsdp_full_shard_offload"),
    ("cpu 卸载", "fsdp_full_shard_offload"), ("cpu卸载", "fsdp_full_shard_offload"), ("卸载", "fsdp_full_shard_offload"),
), key=lambda pair: len(pair[0]), reverse=True))
_ALIAS_ID = dict(_STRATEGY_ALIASES)
_STRATEGY_RE = re.compile("|".join(
    (r"(?<![a-z0-9_])" + re.escape(a) + r"(?![a-z0-9_])") if a.isascii() else re.escape(a)
    for a, _ in _STRATEGY_ALIASES))
# Words that state a choice. Negated ("don't use", "不建议") or conditional ("if you use", "如果用")
# cues are skipped: they do not recommend.
_CUE_RE = re.compile(
    r"(?<![a-z])(?:use|using|recommend(?:ed|s)?|go with|choose|pick|switch to|stick with|prefer|opt for|"
    r"best (?:choice|option) is|answer is|verdict:)(?![a-z])|推荐|建议|选择|选用|采用|改用|换成|就用|请用|最好用|还是用|应该用|应当用|应使用|用")
_NEGATION_BEFORE = re.compile(r"(?:n't|\bnot|\bnever|\bavoid|\bno|\bif|\bwhen|\bwith|\bwithout|\brather than|"
                              r"\binstead of|不|别|勿|如果|若|要是|假如|的话|而非|而不是)\s*$")
# Fits verdicts, negatives first ("does not fit" contains "fit").
_FITS_RE = re.compile(
    r"(?P<no>(?:does not|doesn't|do not|don't|won't|will not|cannot|can't|wouldn't|would not|never|not) "
    r"(?:\w+ ){0,2}fit|out of memory|\booms?\b|too (?:large|big)|exceeds?|over (?:the )?budget|"
    r"放不下|装不下|不够|不足|超出|超过|爆显存|塞不下|跑不起来|跑不了)|"
    r"(?P<yes>\bfits?\b|fits? (?:comfortably|easily|well)|within (?:the )?(?:memory|budget)|"
    r"放得下|能放下|可以放下|装得下|能装下|够用|跑得起来|可以跑)", re.I)
_SENTENCE_SPLIT = re.compile(r"(?<!\d)[.](?!\d)|[;；。！!？?\n]")
_TOOL_CALL_FAMILY = "fsdp"


_QUOTED = re.compile(r'"[^"\n]{0,400}"|“[^”\n]{0,400}”|「[^」\n]{0,400}」|‘[^’\n]{0,400}’')


def _mentions(clause: str) -> list[tuple[int, int, str]]:
    """(start, end, strategy id) of each strategy name in ``clause`` (lower-cased), adjacent names
    merged: "FSDP (FULL_SHARD)" is full shard, "FSDP full shard + CPU offload" is offload."""
    found: list[tuple[int, int, str]] = []
    for m in _STRATEGY_RE.finditer(clause):
        sid = _ALIAS_ID[m.group(0)]
        if found and m.start() - found[-1][1] <= 4 and re.fullmatch(r"[\s(（+＋/:：]*", clause[found[-1][1]:m.start()]):
            start, _, prev = found[-1]
            merged = sid if prev in ("fsdp", sid) else (
                "fsdp_full_shard_offload" if "fsdp_full_shard_offload" in (prev, sid) else
                prev if sid == "fsdp" else sid)
            found[-1] = (start, m.end(), merged)
            continue
        found.append((m.start(), m.end(), sid))
    return found


def _same(named: str, strategy: str) -> bool:
    return named == strategy or (named == _TOOL_CALL_FAMILY and strategy.startswith("fsdp"))


def recommended_in_text(text: str) -> list[str]:
    """Strategy ids the text recommends ("Use DDP", "推荐 FSDP 全分片"), in order."""
    out = []
    lowered = _QUOTED.sub(" ", prose(text).lower())  # a quoted forum answer is not our advice
    for sentence in _SENTENCE_SPLIT.split(lowered):
        mentions = _mentions(sentence)
        for cue in _CUE_RE.finditer(sentence):
            if _NEGATION_BEFORE.search(sentence[max(0, cue.start() - 14):cue.start()]):
                continue
            after = [m for m in mentions if m[0] >= cue.end() and m[0] - cue.end() <= 24]
            if after and re.fullmatch(r"[\s:：,，*_\-\"'“”「」]*(?:the |a |plain |pure |with )?",
                                      sentence[cue.end():after[0][0]]):
                out.append(after[0][2])
    return out


# A verdict in a conditional or hypothetical sentence ("with LoRA, DDP would fit", "如果显存够用")
# is a what-if, not a claim about the setup as asked.
_CONDITIONAL = re.compile(r"(?<![a-z])(?:if|would|could|might|unless|with lora|instead|once|after|then|twice|"
                          r"more gpus|turn on|turning on|switch|switching)(?![a-z])|"
                          r"如果|的话|若|假如|要是|除非|改成|换成|之后")
_YES_CELL = {"yes", "是", "能", "✓", "✅", "y", "true"}
_NO_CELL = {"no", "否", "不能", "✗", "❌", "n", "false"}


# Words that make a verdict about a variant of the setup (the answer's ``<variant>.memory.*`` keys):
# "FSDP full shard + checkpointing fits", "开了重计算后放得下".
_VARIANT_WORDS = re.compile(r"checkpointing|checkpoint|lora|qlora|bucket|fused|offload|重计算|检查点|梯度检查|卸载")


def _table_claims(lines: list[str]) -> list[tuple[str, bool, bool]]:
    """(strategy, fits, variant row?) from markdown table rows whose header has a "fits" column."""
    out, column = [], None
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if column is None:
            for i, cell in enumerate(cells):
                if cell in ("fits", "fit", "fits?", "放得下", "能否放下", "放得下?", "放得下？"):
                    column = i
            continue
        if column >= len(cells):
            continue
        mentions = _mentions(cells[0])
        if mentions and cells[column] in _YES_CELL | _NO_CELL:
            out.append((mentions[0][2], cells[column] in _YES_CELL, bool(_VARIANT_WORDS.search(cells[0]))))
    return out


def fits_claims(text: str) -> list[tuple[str, bool, bool]]:
    """(strategy id, fits?, about a variant?) for each fits verdict the text states: a table's
    fits column, or a verdict whose subject is the strategy named before it in the same sentence.
    Quotes, conditional sentences and verdicts with no strategy before them are not claims."""
    out: list[tuple[str, bool, bool]] = []
    lowered = _QUOTED.sub(" ", prose(text).lower())
    rows: list[str] = []
    body: list[str] = []
    for line in lowered.splitlines():
        (rows if line.lstrip().startswith("|") else body).append(line)
    out += _table_claims(rows)
    for sentence in _SENTENCE_SPLIT.split("\n".join(body)):
        mentions = _mentions(sentence)
        if not mentions or _CONDITIONAL.search(sentence):
            continue
        variant = bool(_VARIANT_WORDS.search(sentence))
        for verdict in _FITS_RE.finditer(sentence):
            before = [m for m in mentions if m[1] <= verdict.start()]
            if before:
                out.append((before[-1][2], verdict.group("yes") is not None, variant))
    return out


def _strategy_problems(text: str, answer: Answer) -> list[str]:
    problems = []
    for c in answer.citations:  # a quoted doc or forum sentence is its source's claim, not the answer's
        if c.kind in ("doc", "forum") and c.quote:
            text = text.replace(c.quote, " ")
    chosen = answer.recommendation.strategy
    allowed = [chosen, *answer.recommendation.alternatives]
    for named in recommended_in_text(text):
        if not any(_same(named, s) for s in allowed):
            problems.append(f"recommends {named} but the answer recommends {chosen}")
            break
    if chosen in TRAINING_STRATEGIES:
        said = {m[2] for m in _mentions(prose(text).lower())}
        if not any(_same(named, chosen) for named in said):
            problems.append(f"never names the recommended strategy {chosen}")
    # The setup as asked is ``memory.<s>.fits``; the configuration the answer chose may be a
    # variant of it (``ckpt.memory.<s>.fits``); a sentence naming a variant (checkpointing, LoRA,
    # ...) may state any variant's verdict. Any other verdict contradicts the calculator.
    chosen = next((row.variant for row in answer.sections.table if row.chosen and row.variant), "")
    plain_prefixes = ("memory.", f"{chosen}.memory.") if chosen else ("memory.",)
    for named, fits, variant in fits_claims(text):
        verdicts = [v for k, v in answer.numbers.items() if k.endswith(".fits")
                    and (k.startswith(plain_prefixes) or (variant and ".memory." in k))
                    and _same(named, k.split(".")[-2])]
        if verdicts and fits not in verdicts:
            problems.append(f"says {named} {'fits' if fits else 'does not fit'}, the calculator says otherwise")
            break
    return problems


def _spelled_problems(text: str, answer: Answer, quotes: list[str]) -> list[str]:
    bad = []
    for item in spelled_numbers(prose(text)):
        traced = any(not untraceable_numbers(fmt(v), answer.numbers, answer.setup, quotes)
                     for v in candidate_values(item))
        if not traced:
            bad.append(item.text)
    return [f"untraceable spelled-out numbers {bad[:8]}"] if bad else []


def check_llm_text(text: str, answer: Answer, user_turns: list[str]) -> list[str]:
    """Why ``text`` may not replace ``answer.text`` (empty when it passes the guard): a figure (in
    digits or words, English or Chinese) that is not the answer's, a figure written with a unit
    that no value of that kind equals (``bot.figure_units``), a recommendation or a fits
    verdict that contradicts the computed one, a dangling ``[n]``, a secret, or nothing at all."""
    problems = []
    quotes = [f"{c.quote or ''} {c.title}" for c in answer.citations] + list(user_turns)
    bad = untraceable_numbers(text, answer.numbers, answer.setup, quotes)
    if bad:
        problems.append(f"untraceable numbers {bad[:8]}")
    wrong_unit = wrong_unit_figures(prose(text), answer.numbers, answer.setup, quotes)
    if wrong_unit:  # the value is the answer's, but not of this kind ("8 GiB" where 8 is the GPU count)
        problems.append(f"numbers under the wrong unit {wrong_unit[:8]}")
    problems += _spelled_problems(text, answer, quotes)
    problems += _strategy_problems(text, answer)
    dangling = dangling_markers(text, answer.citations)
    if dangling:
        problems.append(f"citation markers without a source {dangling}")
    if any(secret in text for secret in _secrets()):
        problems.append("a configured secret appears in the text")
    if not text.strip():
        problems.append("empty text")
    return problems
