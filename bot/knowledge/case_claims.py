"""Claims about another thread's setup, and whether one may open an answer (first-contact batch j,
failure class 5).

A retrieved passage is a *case claim* when it reports what happened to someone else rather than
stating a general fact: a doc sentence that cites a thread (a GitHub issue, pull request or
discussion, a forum or Q&A page) and names a setup of its own (a model size such as "70B", a count
of cards such as "8张A100" or "2 GPUs"), or a forum post, whose setup is the forum thread's where
its words name none (a 7B model, DDP or FSDP). "LlamaFactory里8张A100 80GB … 70B LoRA连模型都加载不进去"
is one; "NCCL spreads its flows over every NIC (NCCL issue 412)" is not (no setup).

Such a claim may open an answer only where it speaks to the asker (:func:`may_lead`): the same
model size class (within :data:`SIZE_CLASS_RATIO`), a strategy or fine-tuning mode both name
(DDP, FSDP, a ZeRO stage, offload, LoRA, QLoRA, full fine-tuning), the same kind of failure (out
of GPU memory, out of host RAM, slow), or a topic of its corpus entry that the reader found in the
question or that a playbook entry matched on the question's symptoms carries (the evidence stage
builds the asker from what it has read: :func:`asker_facts`). Otherwise it may
support an answer lower down but never open it; :func:`bot.knowledge.answering.select_passages`
applies this. Pure and fast: regexes over the quote and the question, no search index.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

# Two model sizes are one class when the larger is at most this many times the smaller: 7B and 8B
# are one class, 7B and 13B are not (the memory a claim reports for one does not hold for the other).
SIZE_CLASS_RATIO = 1.6

# A link to a thread: what makes a doc sentence a report of someone's case rather than a fact.
_THREAD_LINK = re.compile(
    r"\]\(https?://(?:github\.com/[^)\s]+/(?:issues|pull|discussions)/\d+|[^)\s]*stackoverflow\.com/[^)\s]*|"
    r"[^)\s]*reddit\.com/[^)\s]*|discuss\.[^)\s]+|forums?\.[^)\s]+|huggingface\.co/[^)\s]+/discussions/\d+)[^)\s]*\)",
    re.I)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
# A model size ("70B", "7 B", "1.5B"), not bytes per parameter ("16 B/param"), a rate per billion
# ("每1B参数", "per 1B") nor a storage size ("1 TB"). (ASCII neighbours only: "做70B模型" is a size
# between two Chinese characters.)
_SIZE = re.compile(r"(?<![A-Za-z0-9_.])(?<!每)(?<!per )(\d+(?:\.\d+)?)\s?[bB](?![A-Za-z0-9_/])(?!\s?(?:/|per\b|每))")
# A count of cards: "8张A100", "两张卡", "8 × A100", "2 GPUs", "4x H100".
_CARDS = (r"(?:a100|h100|h800|a800|v100|a10g?|a6000|l40s?|4090|3090|2080\s?ti|t4|gpus?|cards?|卡|显卡|gpu)")
_COUNT = re.compile(r"(?<![A-Za-z0-9_.])(\d{1,4}|[两二三四五六七八十])\s?(?:张|块|个|台)?\s?(?:[x×*]\s?)?" + _CARDS + r"(?![a-z])", re.I)
# Strategies and fine-tuning modes, read the same way from a claim and from a question.
_STRATEGIES: dict[str, re.Pattern[str]] = {
    "ddp": re.compile(r"(?<![a-z])ddp(?![a-z])|distributeddataparallel", re.I),
    "fsdp": re.compile(r"(?<![a-z])fsdp\d?(?![a-z])|fully_shard|full_shard|shard_grad_op", re.I),
    "zero3": re.compile(r"zero[-_ ]?3|zero stage 3|stage[-_ ]?3", re.I),
    "zero2": re.compile(r"zero[-_ ]?2|zero stage 2|stage[-_ ]?2", re.I),
    "zero1": re.compile(r"zero[-_ ]?1(?!\d)|zero stage 1", re.I),
    "offload": re.compile(r"offload|卸载", re.I),
    "lora": re.compile(r"(?<![a-z])lora(?![a-z])", re.I),
    "qlora": re.compile(r"qlora", re.I),
    "full": re.compile(r"全参|全量微调|full[- ](?:parameter|fine-?tun)", re.I),
}
# The failures a case and a question can share (a bare error or hang says too little to match on).
_FAILURE_KINDS = frozenset({"oom", "host_ram", "slow"})


@dataclass(frozen=True)
class CaseSetup:
    """What a claim says about the setup it reports (empty where it names nothing)."""

    sizes: tuple[float, ...] = ()
    gpu_counts: tuple[int, ...] = ()
    strategies: frozenset[str] = frozenset()
    failure: str | None = None  # "oom" | "host_ram" | "slow" | None
    topics: frozenset[str] = frozenset()  # its corpus entry's topics (underscored)


@dataclass(frozen=True)
class Asker:
    """What the question says about the asker's own setup and trouble, as a claim is compared."""

    params_b: float | None = None
    strategies: frozenset[str] = frozenset()
    failure: str | None = None
    topics: frozenset[str] = frozenset()  # the reader's topics and the matched playbook entries' topics


def _numbers(text: str) -> str:
    return _LINK_TARGET.sub("", text or "")


def strategies_named(text: str) -> frozenset[str]:
    """The strategies and fine-tuning modes a text names (see ``_STRATEGIES``)."""
    words = {name for name, pattern in _STRATEGIES.items() if pattern.search(text or "")}
    if "qlora" in words:
        words.add("lora")  # QLoRA is LoRA over a quantized base: a LoRA claim speaks to it
    return frozenset(words)


def _failure(text: str) -> str | None:
    from bot.knowledge.playbook import failure_kind

    try:
        kind = failure_kind(text)
    except Exception:  # the signals are data in the repo: a broken file must not stop selection
        return None
    return kind if kind in _FAILURE_KINDS else None


@lru_cache(maxsize=4096)  # the same corpus sentences come back question after question
def case_setup(entry_id: str, kind: str, quote: str) -> CaseSetup | None:
    """The setup a passage's quote reports when it is a case claim, None for a general statement:
    a doc sentence citing a thread that names a model size or a count of cards, or any forum post
    (it answers the forum thread's own question, so the thread's setup is its setup where the quote
    names none: :func:`thread_setup`)."""
    text = _numbers(quote)
    sizes = tuple(float(m.group(1)) for m in _SIZE.finditer(text))
    counts = tuple(c for m in _COUNT.finditer(text) if 0 < (c := _count(m.group(1))) <= 1024)
    strategies = strategies_named(text)
    if kind == "forum":
        thread_sizes, thread_strategies = thread_setup()
        sizes, strategies = sizes or thread_sizes, strategies | thread_strategies
    elif not (_THREAD_LINK.search(quote or "") and (sizes or counts)):
        return None
    return CaseSetup(sizes=sizes, gpu_counts=counts, strategies=strategies, failure=_failure(text),
                     topics=entry_topics(entry_id))


@lru_cache(maxsize=1)
def thread_setup() -> tuple[tuple[float, ...], frozenset[str]]:
    """The forum thread's own setup: the model sizes its answers' claims speak about and the
    strategies its question names ("DDP和FSDP到底怎么选？" about a 7B model)."""
    from bot.knowledge.corpus import QUESTION_ID, get_entry, load_forum

    try:
        question = get_entry(QUESTION_ID)
        answers = load_forum()
    except Exception:  # the corpus is data in the repo: a broken file must not stop selection
        return (), frozenset()
    sizes = sorted({float(c.applies_to["params_b"]) for a in answers for c in a.claims
                    if isinstance(c.applies_to.get("params_b"), int | float)})
    return tuple(sizes), strategies_named(getattr(question, "text", ""))


_WORD_COUNTS = {"两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "十": 10}


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _WORD_COUNTS.get(word, 0)


@lru_cache(maxsize=512)
def entry_topics(entry_id: str) -> frozenset[str]:
    """A corpus entry's topics with the reader's spelling (underscores); a forum post's also the
    reader topics its claims speak to."""
    from bot.knowledge.corpus import get_entry

    try:
        entry = get_entry(entry_id)
    except KeyError:
        return frozenset()
    tags = {str(t).replace("-", "_") for t in getattr(entry, "topics", ()) or ()}
    for claim in getattr(entry, "claims", ()) or ():
        tags.update(str(t) for t in getattr(claim, "topics", ()) or ())
    return frozenset(tags)


_UNREAD = object()


def asker_facts(question: str, *, topics: Iterable[str] = (), params_b: float | None = None,
                setup_words: str = "", finetune: str | None = None, failure: object = _UNREAD) -> Asker:
    """The asker's side of the comparison: the model size, the strategies and modes the question
    (or the parsed setup's words, its ``finetune`` mode) names, the kind of failure it reports (``failure``: what the
    evidence stage read, else read here) and the topics found in it (``topics``: the reader's, and
    the evidence stage adds those of the playbook entries its symptoms match)."""
    text = question or ""
    kind = _failure(text) if failure is _UNREAD else failure
    strategies = set(strategies_named(f"{text} {setup_words}"))
    if finetune in ("lora", "qlora", "full"):
        strategies.update({finetune, "lora"} if finetune == "qlora" else {finetune})
    return Asker(params_b=params_b, strategies=frozenset(strategies),
                 failure=kind if kind in _FAILURE_KINDS else None, topics=frozenset(topics or ()))


def same_size_class(a: float, b: float) -> bool:
    return a > 0 and b > 0 and max(a, b) / min(a, b) <= SIZE_CLASS_RATIO


def may_lead(case: CaseSetup | None, asker: Asker | None) -> bool:
    """Whether a passage may open the answer: always when it is no case claim (or there is no
    asker to compare with); a case claim only when its setup or topic matches the asker's."""
    if case is None or asker is None:
        return True
    if asker.params_b and any(same_size_class(size, asker.params_b) for size in case.sizes):
        return True
    if case.strategies & asker.strategies:
        return True
    if case.failure is not None and case.failure == asker.failure:
        return True
    return bool(case.topics & asker.topics)
