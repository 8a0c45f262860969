"""The diagnosis playbook: symptom -> cause -> check -> fix entries, matched against a question.

Data lives in ``knowledge/playbook/*.yaml`` (format: ``knowledge/playbook/README.md``); this module
loads and validates it and ranks entries for one question. Pure and fast: no search index, no
model, only precompiled regexes over the text plus comparisons of structured facts (about 0.1 ms
per entry).

API (what the answer layer calls)::

    from bot.knowledge.playbook import PlaybookQuery, match_playbook, query_from_parsed

    matches = match_playbook(parsed, text=question)          # a bot.parse.Parsed (duck-typed)
    matches = match_playbook(PlaybookQuery(text=question, oom=True, finetune="lora"))
    for m in matches:                                        # best first, at most ``limit``
        m.id, m.score, m.matched_symptoms, m.matched_triggers
        m.text("gist", "en"), m.text("cause", "zh"), m.text("check", "en"), m.text("fix", "en"), m.entry.sources

- :class:`PlaybookQuery` is what the matcher reads: the question text and the facts the parser
  found (intent, topics, OOM and its phase, host-RAM kill, several nodes, GPU count, size,
  fine-tune mode, bf16 support, link, the strategy or ZeRO stage in use, checkpointing,
  torch.compile, the models of an RL job). ``None`` means unknown; facts missing from the
  structured input are read from the text with ``knowledge/playbook/signals.yaml``
  (:func:`derive_facts`).
- :func:`query_from_parsed` builds one from a ``Parsed`` (``setup``, ``intent``, ``topics``,
  ``observed``), reading attributes with ``getattr`` so partial objects work too.
- :func:`match_playbook` scores every entry: each distinct symptom pattern that matches the text
  adds 1 (at most 3), each structured trigger the query meets adds its weight
  (:data:`TRIGGER_WEIGHTS`), each ``context`` pattern (a word naming where the job runs, such as
  the scheduler, rather than what went wrong) adds :data:`CONTEXT_WEIGHT` (at most
  :data:`MAX_CONTEXT_SCORE`); a known fact that contradicts an entry's ``requires`` or a text
  matching its ``excludes`` drops it. An entry is returned when at least one symptom matched or
  its triggers alone reach :data:`TRIGGERS_ALONE`: context alone never surfaces an entry, so a
  lead matched only on words said in passing never leads. A pattern matched only inside a file
  name, a path or a URL counts for nothing (a config called ``ddp_hang.yaml`` is no hang). Ranked
  by score, then symptom count, then id.
- :class:`PlaybookMatch` carries the entry, the score and which symptoms (pattern and the text it
  matched) and triggers fired, so an answer can say why it leads with a cause.
- Every entry has a ``gist``, the cause in one short sentence, the answer's first sentence
  (``Most likely [n]: <gist>.``; the full ``cause`` goes to the folded answer): required in both
  languages and at most :data:`GIST_MAX_CHARS` characters, for every file alike (``_check_gist``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from bot.env import repo_root

LANGS = ("en", "zh")
TEXT_FIELDS = ("title", "gist", "cause", "check", "fix")
# The gist is the cause as an expert says it first, the answer's first sentence ("Most likely [n]:
# <gist>."); the full cause is in the folded answer. One rule for every entry of every file: a gist
# in both languages, at most this many characters (issue 25: a first sentence, not a paragraph).
GIST_MAX_CHARS = {"en": 120, "zh": 60}
OOM_PHASES = ("load", "wrap", "first_step", "optimizer_step", "mid_run", "save", "eval")
# The order phases are read from the text: the most specific first ("OOM at optimizer.step() on
# the first iteration" is the optimizer step, "OOM at the eval step every 500 steps" is evaluation).
PHASE_READING_ORDER = ("save", "eval", "optimizer_step", "load", "wrap", "mid_run", "first_step")
MAX_SYMPTOM_SCORE = 3.0  # beyond three matched phrases more wording is not more evidence
TRIGGERS_ALONE = 1.5  # structured facts alone must be this strong to surface an entry
# A context word ("we use SLURM", a launcher named in passing) says where the job runs, not what
# went wrong: it adds to an entry a symptom already surfaced, always less than one symptom does.
CONTEXT_WEIGHT, MAX_CONTEXT_SCORE = 0.25, 0.5
# Weight of each structured trigger when the query meets it. Facts that pin a cause (a phase of
# the run, a host-RAM kill, a card without bf16) weigh more than context (intent, GPU count).
TRIGGER_WEIGHTS: dict[str, float] = {
    "intent": 0.25, "topics": 0.75, "oom": 0.5, "oom_phase": 1.0, "host_ram_killed": 1.0,
    "multi_node": 0.5, "min_gpu_count": 0.25, "min_params_b": 0.5, "max_params_b": 0.5,
    "finetune": 0.5, "gpu_bf16": 1.0, "intra_node_link": 0.5, "strategy": 0.5, "deepspeed": 0.25,
    "zero_stage": 0.75, "activation_checkpointing": 0.5, "torch_compile": 0.75, "models_min": 0.75,
    # computed by the calculator, not read: the model states alone exceed each stated card even
    # sharded over every stated GPU (bot.evidence sets it); it pins the cause like nothing said can
    "states_exceed_card": 4.0,
    # read from the text and compared with the setup (derive_facts): the DataLoader workers of every
    # rank outnumber the CPU cores; a per-card memory the project states exceeds the person's card
    "workers_oversubscribe": 2.0, "requirement_exceeds_card": 2.5,
    # derived (derive_facts), always known once there is text: bf16 is in use or asked on a card
    # without it (a lead keyed to the card's generation applies only then), and the message's
    # subject is serving rather than training (an inference lead never answers a training run)
    "bf16_on_pre_ampere": 1.0, "serving_question": 0.5,
}
# Facts that only the calculator supplies: an entry may surface on them without a symptom word.
COMPUTED_TRIGGERS = frozenset({"states_exceed_card"})
_LIST_KEYS = ("topics", "oom_phase", "finetune", "strategy", "zero_stage")
_ID = re.compile(r"^pb-[a-z0-9][a-z0-9-]*$")


class PlaybookError(ValueError):
    """A playbook file is malformed; the message names the file and the entry."""


@dataclass(frozen=True)
class PlaybookEntry:
    id: str
    title: dict[str, str]
    gist: dict[str, str]  # the cause in one short sentence, no final stop (GIST_MAX_CHARS)
    cause: dict[str, str]
    check: dict[str, str]
    fix: dict[str, str]
    symptoms: dict[str, tuple[str, ...]]  # language -> regex sources
    sources: tuple[str, ...]
    topics: tuple[str, ...] = ()
    triggers: dict[str, Any] = field(default_factory=dict)
    requires: dict[str, Any] = field(default_factory=dict)
    excludes: tuple[str, ...] = ()
    related: dict[str, str] = field(default_factory=dict)
    context: tuple[str, ...] = ()  # regexes naming the setting, not the symptom (both languages)

    def text(self, name: str, language: str = "en") -> str:
        """``title``/``gist``/``cause``/``check``/``fix`` in ``language`` (zh or en)."""
        return getattr(self, name)["zh" if language == "zh" else "en"]


@dataclass(frozen=True)
class PlaybookQuery:
    """What the matcher reads; ``None`` = unknown (then read from ``text`` where signals allow)."""

    text: str = ""
    language: str = "en"
    intent: str | None = None
    topics: tuple[str, ...] = ()
    oom: bool | None = None
    oom_phase: str | None = None  # one of OOM_PHASES
    host_ram_killed: bool | None = None
    multi_node: bool | None = None
    gpu_count: int | None = None
    params_b: float | None = None
    finetune: str | None = None  # full | lora | qlora
    gpu_bf16: bool | None = None  # the card supports bf16
    intra_node_link: str | None = None  # nvlink | pcie
    strategy: str | None = None  # strategy id in use (DESIGN.md)
    deepspeed: bool | None = None
    zero_stage: int | None = None
    activation_checkpointing: bool | None = None
    torch_compile: bool | None = None
    models: tuple[str, ...] = ()  # roles in a multi-model job
    states_exceed_card: bool | None = None  # computed (bot.evidence): even full sharding cannot fit the states
    gpu_memory_gb: float | None = None  # one card's memory (stated, else the catalog's)
    workers_oversubscribe: bool | None = None  # GPUs x num_workers > CPU cores (derive_facts)
    requirement_exceeds_card: bool | None = None  # the stated per-card memory > the card's (derive_facts)
    precision: str | None = None  # the run's precision as read (bf16-mixed, fp16-mixed, fp32, ...)
    bf16_on_pre_ampere: bool | None = None  # bf16 used or asked on a card without it (derive_facts)
    serving_question: bool | None = None  # the subject is inference/serving, not training (derive_facts)


@dataclass(frozen=True)
class PlaybookMatch:
    entry: PlaybookEntry
    score: float
    matched_symptoms: tuple[tuple[str, str], ...]  # (pattern, the text it matched)
    matched_triggers: tuple[str, ...]  # trigger keys the query met
    matched_context: tuple[tuple[str, str], ...] = ()  # (context pattern, the text it matched)

    @property
    def id(self) -> str:
        return self.entry.id

    def text(self, name: str, language: str = "en") -> str:
        return self.entry.text(name, language)

    def quote(self, language: str = "en") -> str:
        """What an answer quotes from the entry: its cause, check and fix in one line."""
        return playbook_quote(self.entry, language)


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def default_root() -> Path:
    return repo_root() / "knowledge" / "playbook"


def load_playbook(root: Path | str | None = None) -> list[PlaybookEntry]:
    """Every entry, in file then entry order (validated; PlaybookError on a bad file)."""
    return list(_load(str(Path(root) if root else default_root()))[0])


def get_entry(entry_id: str, root: Path | str | None = None) -> PlaybookEntry:
    for entry in load_playbook(root):
        if entry.id == entry_id:
            return entry
    raise KeyError(f"no playbook entry {entry_id!r}")


@lru_cache(maxsize=4)
def _load(root: str) -> tuple[tuple[PlaybookEntry, ...], dict[str, Any]]:
    import yaml

    folder = Path(root)
    entries: list[PlaybookEntry] = []
    for path in sorted(folder.glob("part*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as err:
            raise PlaybookError(f"{path.name}: not valid YAML: {err}") from None
        for i, raw in enumerate(data.get("entries") or []):
            entries.append(_entry(raw, f"{path.name} entry {i + 1}"))
    seen: set[str] = set()
    for entry in entries:
        if entry.id in seen:
            raise PlaybookError(f"duplicate playbook id {entry.id!r}")
        seen.add(entry.id)
    signals_path = folder / "signals.yaml"
    signals = yaml.safe_load(signals_path.read_text(encoding="utf-8")) if signals_path.exists() else {}
    return tuple(entries), _compile_signals(signals or {})


def _entry(raw: Any, where: str) -> PlaybookEntry:
    if not isinstance(raw, dict):
        raise PlaybookError(f"{where}: an entry must be a mapping")
    entry_id = str(raw.get("id", ""))
    where = f"{where} ({entry_id or 'no id'})"
    if not _ID.match(entry_id):
        raise PlaybookError(f"{where}: id must look like pb-some-name")
    texts = {}
    for name in TEXT_FIELDS:
        value = raw.get(name)
        if not isinstance(value, dict) or any(not str(value.get(lang) or "").strip() for lang in LANGS):
            raise PlaybookError(f"{where}: {name} needs non-empty en and zh text")
        texts[name] = {lang: str(value[lang]).strip() for lang in LANGS}
    _check_gist(texts["gist"], where)
    symptoms = raw.get("symptoms") or {}
    if not isinstance(symptoms, dict) or any(not symptoms.get(lang) for lang in LANGS):
        raise PlaybookError(f"{where}: symptoms need en and zh patterns")
    patterns = {lang: tuple(str(p) for p in symptoms[lang]) for lang in LANGS}
    context = raw.get("context") or ()
    if not isinstance(context, list | tuple):
        raise PlaybookError(f"{where}: context must be a list of regexes")
    for pattern in (*patterns["en"], *patterns["zh"], *(raw.get("excludes") or ()), *context):
        try:
            re.compile(pattern, re.I)
        except re.error as err:
            raise PlaybookError(f"{where}: bad regex {pattern!r}: {err}") from None
    sources = tuple(str(s) for s in raw.get("sources") or ())
    if not sources or any(not s.startswith(("https://", "http://")) for s in sources):
        raise PlaybookError(f"{where}: sources must be one or more http(s) URLs")
    triggers = dict(raw.get("triggers") or {})
    requires = dict(raw.get("requires") or {})
    for kind, facts in (("triggers", triggers), ("requires", requires)):
        _check_facts(facts, f"{where} {kind}")
    related = {str(k): str(v) for k, v in (raw.get("related") or {}).items()}
    if "strategy" in related:
        _check_strategies([related["strategy"]], f"{where} related")
    return PlaybookEntry(id=entry_id, symptoms=patterns, sources=sources,
                         topics=tuple(str(t) for t in raw.get("topics") or ()), triggers=triggers,
                         requires=requires, excludes=tuple(str(p) for p in raw.get("excludes") or ()),
                         related=related, context=tuple(str(p) for p in context), **texts)


def _check_gist(gist: dict[str, str], where: str) -> None:
    """The gist rule (GIST_MAX_CHARS), the same for every entry: the answer adds the final stop,
    so a gist written with one loses it here, and the limit counts the words alone."""
    for lang in LANGS:
        gist[lang] = gist[lang].rstrip(".。").rstrip()
        if not gist[lang]:
            raise PlaybookError(f"{where}: gist needs non-empty en and zh text")
        if len(gist[lang]) > GIST_MAX_CHARS[lang]:
            raise PlaybookError(f"{where}: gist.{lang} has {len(gist[lang])} characters, at most "
                                f"{GIST_MAX_CHARS[lang]} (the cause in one short sentence)")


def _check_facts(facts: dict[str, Any], where: str) -> None:
    for key, value in facts.items():
        if key not in TRIGGER_WEIGHTS:
            raise PlaybookError(f"{where}: unknown key {key!r} (known: {', '.join(TRIGGER_WEIGHTS)})")
        if key in _LIST_KEYS and not isinstance(value, list):
            raise PlaybookError(f"{where}: {key} must be a list")
    if "topics" in facts:
        from bot.understand import TOPICS

        unknown = [t for t in facts["topics"] if t not in TOPICS]
        if unknown:
            raise PlaybookError(f"{where}: unknown topics {unknown}")
    if "oom_phase" in facts and not set(facts["oom_phase"]) <= set(OOM_PHASES):
        raise PlaybookError(f"{where}: oom_phase must be among {OOM_PHASES}")
    if "strategy" in facts:
        _check_strategies(facts["strategy"], where)


def _check_strategies(ids: Sequence[str], where: str) -> None:
    from bot.strategies import TRAINING_STRATEGIES

    unknown = [s for s in ids if s not in TRAINING_STRATEGIES]
    if unknown:
        raise PlaybookError(f"{where}: unknown strategy ids {unknown}")


def _compile_signals(raw: dict[str, Any]) -> dict[str, Any]:
    def rx(patterns: Sequence[str]) -> re.Pattern[str] | None:
        return re.compile("|".join(f"(?:{p})" for p in patterns), re.I) if patterns else None

    phases = raw.get("oom_phase") or {}
    return {"oom": rx(raw.get("oom") or ()), "host_ram_killed": rx(raw.get("host_ram_killed") or ()),
            "multi_node": rx(raw.get("multi_node") or ()), "failure": rx(raw.get("failure") or ()),
            "slow": rx(raw.get("slow") or ()), "hang": rx(raw.get("hang") or ()), "hypothetical": rx(raw.get("hypothetical") or ()),
            "num_workers": rx(raw.get("num_workers") or ()), "cpu_cores": rx(raw.get("cpu_cores") or ()),
            "stated_requirement_gb": rx(raw.get("stated_requirement_gb") or ()),
            "gpu_counts": rx(raw.get("gpu_counts") or ()),
            "bf16_named": rx(raw.get("bf16_named") or ()), "bf16_unsupported": rx(raw.get("bf16_unsupported") or ()),
            "given": {name: rx(patterns) for name, patterns in (raw.get("given") or {}).items()},
            "oom_phase": [(phase, rx(phases[phase])) for phase in PHASE_READING_ORDER if phases.get(phase)]}


@lru_cache(maxsize=4)
def _compiled(root: str) -> tuple[tuple[PlaybookEntry, tuple[re.Pattern[str], ...], re.Pattern[str] | None,
                                        tuple[re.Pattern[str], ...]], ...]:
    out = []
    for entry in _load(root)[0]:
        patterns = tuple(re.compile(p, re.I) for p in dict.fromkeys((*entry.symptoms["en"], *entry.symptoms["zh"])))
        excludes = re.compile("|".join(f"(?:{p})" for p in entry.excludes), re.I) if entry.excludes else None
        context = tuple(re.compile(p, re.I) for p in dict.fromkeys(entry.context))
        out.append((entry, patterns, excludes, context))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Facts
# --------------------------------------------------------------------------------------------


def derive_facts(query: PlaybookQuery, root: Path | str | None = None) -> PlaybookQuery:
    """The query with OOM, its phase, a host-RAM kill and several nodes read from the text where
    the structured input left them unknown (signals.yaml). Structured facts always win."""
    signals = _load(str(Path(root) if root else default_root()))[1]
    text = query.text or ""
    updates: dict[str, Any] = {}
    for key in ("oom", "host_ram_killed", "multi_node"):
        if getattr(query, key) is None and signals.get(key) is not None and signals[key].search(text):
            updates[key] = True
    if query.oom_phase is None:
        for phase, pattern in signals.get("oom_phase", ()):
            if pattern is not None and pattern.search(text):
                updates["oom_phase"] = phase
                break
    workers, cores = stated_number(text, "num_workers", root), stated_number(text, "cpu_cores", root)
    if query.workers_oversubscribe is None and workers and cores and query.gpu_count:
        # every rank (one per GPU) starts its own workers, and each rank is a process too
        updates["workers_oversubscribe"] = query.gpu_count * (workers + 1) > cores
    required = stated_number(text, "stated_requirement_gb", root)
    if query.requirement_exceeds_card is None and required and query.gpu_memory_gb:
        updates["requirement_exceeds_card"] = required > query.gpu_memory_gb + 1  # "24G" for 23.6 GiB
    if query.bf16_on_pre_ampere is None and text.strip():
        updates["bf16_on_pre_ampere"] = _bf16_on_pre_ampere(query, text, signals)
    if query.serving_question is None and text.strip():
        from bot.understand.scope import serving_subject

        updates["serving_question"] = serving_subject(text)
    return replace(query, **updates) if updates else query


def _bf16_on_pre_ampere(query: PlaybookQuery, text: str, signals: dict[str, Any]) -> bool:
    """bf16 is in use or asked on a card that has none: the card is known to lack bf16 (the
    catalog), or the text quotes the error saying so, and bf16 is the run's precision or named in
    the text. A card known to have bf16 (A100, H100, 4090) never; a run read as fp16 or fp32 only
    when the text quotes bf16 failing on it (it tried bf16 first)."""
    if query.gpu_bf16 is True:
        return False
    unsupported = signals.get("bf16_unsupported") is not None and bool(signals["bf16_unsupported"].search(text))
    if query.gpu_bf16 is not False and not unsupported:
        return False  # the card's generation is not known: nothing keyed to it applies
    precision = str(query.precision or "")
    if precision.startswith(("fp16", "fp32", "16-mixed", "32")):
        return unsupported
    named = signals.get("bf16_named") is not None and bool(signals["bf16_named"].search(text))
    return precision.startswith("bf16") or named or unsupported


def stated_number(text: str, key: str, root: Path | str | None = None) -> float | None:
    """The number a signals.yaml pattern with a ``(?P<n>...)`` group reads from the text (the first
    match that has one): ``num_workers`` (DataLoader workers per process), ``cpu_cores`` (the
    machine's cores), ``stated_requirement_gb`` (a per-card memory the project states). None when
    the text says none."""
    pattern = _load(str(Path(root) if root else default_root()))[1].get(key)
    if pattern is None or not isinstance(text, str):
        return None
    for found in pattern.finditer(text):
        value = next((v for k, v in found.groupdict().items() if k.startswith("n") and v), None)
        if value:
            return float(value)
    return None


def failure_kind(text: str, root: Path | str | None = None) -> str | None:
    """What the text reports going wrong in a run: "oom" (GPU memory), "host_ram" (a kill), "slow"
    (a slowdown against another run or an expectation), "error" (an error, a crash, a hang), or
    None when it reports no failure (signals.yaml ``oom``, ``host_ram_killed``, ``failure``,
    ``slow``). A message reporting one is diagnosed first whatever it asks."""
    if not isinstance(text, str) or not text.strip():
        return None
    signals = _load(str(Path(root) if root else default_root()))[1]
    if signals.get("hypothetical") is not None:  # "to avoid OOM", "会不会OOM": nothing failed yet
        text = signals["hypothetical"].sub(" ", text)

    def said(key: str) -> bool:
        return signals.get(key) is not None and bool(signals[key].search(text))

    if said("host_ram_killed"):
        return "host_ram"
    if said("oom"):
        return "oom"
    if said("failure"):
        return "slow" if said("slow") else "error"
    return None


def reports_hang(text: str, root: Path | str | None = None) -> bool:
    """The text's words of a run that stops moving (signals.yaml ``hang``): a hang, a freeze, a job
    stuck without output. Whether a failure is reported at all is ``failure_kind``'s: the caller,
    which has read it already, combines the two (bot.corpus_evidence.read_failure)."""
    if not isinstance(text, str):
        return False
    pattern = _load(str(Path(root) if root else default_root()))[1].get("hang")
    return bool(pattern is not None and pattern.search(text))


def hypothetical_only(text: str, root: Path | str | None = None) -> bool:
    """The text names a failure only as something to avoid or to ask about ("will it OOM?",
    "不想爆显存"), and reports none (``failure_kind`` is None)."""
    if not isinstance(text, str) or not text.strip():
        return False
    pattern = _load(str(Path(root) if root else default_root()))[1].get("hypothetical")
    return bool(pattern is not None and pattern.search(text)) and failure_kind(text, root) is None


# numerals in words the ``gpu_counts`` signals read ("two GPUs", "四张卡", "单卡")
_WORD_NUMBERS = {"one": 1, "a single": 1, "single": 1, "two": 2, "three": 3, "four": 4, "eight": 8, "sixteen": 16,
                 "一": 1, "单": 1, "二": 2, "两": 2, "三": 3, "四": 4, "八": 8}


def stated_numbers(text: str, key: str, root: Path | str | None = None) -> list[float]:
    """Every number a signals.yaml pattern with ``(?P<n...>)`` groups reads from the text, in text
    order (word numerals as digits): ``gpu_counts`` gives the card counts a message compares."""
    pattern = _load(str(Path(root) if root else default_root()))[1].get(key)
    if pattern is None or not isinstance(text, str):
        return []
    out: list[float] = []
    for found in pattern.finditer(text):
        value = next((v for k, v in found.groupdict().items() if k.startswith("n") and v), None)
        if value:
            number = _WORD_NUMBERS.get(value.lower()) or (float(value) if value.isdigit() else None)
            if number:
                out.append(float(number))
    return out


def facts_given(text: str, root: Path | str | None = None) -> frozenset[str]:
    """The facts a question already states, by the names of signals.yaml ``given`` (the OOM
    message's figures, the error's lines, the launch command, a measured speed, the link, the
    DataLoader's workers) and ``oom_phase`` when the text says when the OOM came: what a diagnosis
    that needs more must not ask for again."""
    if not isinstance(text, str) or not text.strip():
        return frozenset()
    signals = _load(str(Path(root) if root else default_root()))[1]
    found = {name for name, pattern in signals.get("given", {}).items() if pattern is not None and pattern.search(text)}
    if any(pattern is not None and pattern.search(text) for _, pattern in signals.get("oom_phase", ())):
        found.add("oom_phase")
    return frozenset(found)


def reports_failure(text: str, root: Path | str | None = None) -> bool:
    """Whether the text reports something that went wrong in a run (``failure_kind``)."""
    return failure_kind(text, root) is not None


def query_from_parsed(parsed: Any, text: str | None = None) -> PlaybookQuery:
    """A PlaybookQuery from a ``bot.parse.Parsed`` (or anything with the same attribute names)."""
    setup = getattr(parsed, "setup", None)
    observed = getattr(parsed, "observed", None)

    def of(obj: Any, name: str) -> Any:
        return getattr(obj, name, None) if obj is not None else None

    nodes, gpu = of(setup, "nodes"), of(setup, "gpu")
    bf16, card_gb = None, None
    if gpu:
        try:
            from bot.catalog import lookup_gpu

            card = lookup_gpu(gpu)
            bf16, card_gb = bool(card.supports_bf16), float(card.memory_gb)
        except Exception:  # an unknown card: bf16 support and memory stay unknown
            bf16 = None
    precision = of(setup, "precision")
    if bf16 is None and precision and str(precision).startswith("fp16"):
        bf16 = None  # fp16 by choice says nothing about the card
    strategy = of(observed, "fsdp_strategy")
    oom = True if of(observed, "oom") else None
    return PlaybookQuery(
        text=text or "", language=getattr(parsed, "language", "en") or "en",
        intent=getattr(parsed, "intent", None), topics=tuple(getattr(parsed, "topics", ()) or ()),
        oom=oom, multi_node=(nodes > 1) if isinstance(nodes, int) else None,
        gpu_count=of(setup, "gpu_count"), params_b=of(setup, "params_b"), finetune=of(setup, "finetune"),
        gpu_bf16=bf16, intra_node_link=of(setup, "intra_node_link"), strategy=strategy,
        deepspeed=True if of(observed, "deepspeed") else None, zero_stage=of(observed, "zero_stage"),
        activation_checkpointing=of(setup, "activation_checkpointing"),
        torch_compile=of(setup, "torch_compile"), models=tuple(of(observed, "models") or ()),
        gpu_memory_gb=of(setup, "gpu_memory_gb") or card_gb, precision=str(precision) if precision else None,
    )


def _as_query(query: Any, text: str | None) -> PlaybookQuery:
    if isinstance(query, PlaybookQuery):
        return replace(query, text=text) if text is not None else query
    if isinstance(query, str):
        return PlaybookQuery(text=query)
    if isinstance(query, Mapping):
        known = {f.name for f in fields(PlaybookQuery)}
        values = {k: v for k, v in query.items() if k in known}
        for key in ("topics", "models"):
            if key in values:
                values[key] = tuple(values[key] or ())
        if text is not None:
            values["text"] = text
        return PlaybookQuery(**values)
    return query_from_parsed(query, text)


# --------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------


def _meets(key: str, wanted: Any, q: PlaybookQuery) -> bool | None:
    """Whether the query meets one trigger/requirement; None when the query does not know."""
    if key == "topics":
        return bool(set(wanted) & set(q.topics)) if q.topics else None
    if key == "models_min":
        return len(q.models) >= int(wanted) if q.models else None
    if key == "min_gpu_count":
        return q.gpu_count >= int(wanted) if q.gpu_count is not None else None
    if key in ("min_params_b", "max_params_b"):
        if q.params_b is None:
            return None
        return q.params_b >= float(wanted) if key == "min_params_b" else q.params_b <= float(wanted)
    value = getattr(q, key)
    if value is None:
        return None
    if key in _LIST_KEYS:
        return value in wanted
    return value == wanted


# A file name, a path or a URL in the text ("configs/ddp_hang_fix.yaml", "dataparallel_train.py") names
# the asker's files, not what went wrong: a pattern matched only inside one is no symptom (nor context).
_FILE_OR_URL = re.compile(r"https?://\S+|(?:[\w.-]+/)*[\w.-]+\.(?:py|ya?ml|json|sh|cfg|conf|toml|txt|ini|ipynb|log|ckpt|pt|pth|bin|"
                          r"safetensors)\b", re.I)


def _outside_names(pattern: re.Pattern[str], text: str, names: Sequence[tuple[int, int]]) -> re.Match[str] | None:
    """The first match of ``pattern`` not wholly inside a file name or URL of ``text``."""
    if not names:
        return pattern.search(text)
    for found in pattern.finditer(text):
        if not any(a <= found.start() and found.end() <= b for a, b in names):
            return found
    return None


def _score(entry: PlaybookEntry, patterns, excludes, q: PlaybookQuery, context=(),
           names: Sequence[tuple[int, int]] = ()) -> PlaybookMatch | None:
    text = q.text or ""
    if excludes is not None and excludes.search(text):
        return None
    for key, wanted in entry.requires.items():
        if _meets(key, wanted, q) is False:
            return None
    symptoms = []
    for pattern in patterns:
        found = _outside_names(pattern, text, names)
        if found:
            symptoms.append((pattern.pattern, found.group(0)))
    triggers = [key for key, wanted in entry.triggers.items() if _meets(key, wanted, q)]
    trigger_score = sum(TRIGGER_WEIGHTS[k] for k in triggers)
    if not symptoms and trigger_score < TRIGGERS_ALONE:
        return None  # context words never surface an entry on their own
    said = [(p.pattern, found.group(0)) for p in context if (found := _outside_names(p, text, names))]
    score = (min(float(len(symptoms)), MAX_SYMPTOM_SCORE) + trigger_score
             + min(CONTEXT_WEIGHT * len(said), MAX_CONTEXT_SCORE))
    return PlaybookMatch(entry, round(score, 3), tuple(symptoms), tuple(triggers), tuple(said))


def match_playbook(query: Any, text: str | None = None, *, limit: int = 3,
                   root: Path | str | None = None) -> list[PlaybookMatch]:
    """Playbook entries matching a question, best first (at most ``limit``; 0 or less = all).

    ``query``: a :class:`PlaybookQuery`, a mapping of its field names, a ``Parsed`` (then pass the
    question as ``text``), or the question text itself. Never raises on odd input: an empty or
    non-text question simply matches nothing."""
    try:
        q = _as_query(query, text)
    except (TypeError, ValueError):
        return []
    if not isinstance(q.text, str):
        q = replace(q, text="")
    folder = str(Path(root) if root else default_root())
    q = derive_facts(q, folder)
    names = [m.span() for m in _FILE_OR_URL.finditer(q.text)]
    matches = [m for entry, patterns, excludes, context in _compiled(folder)
               if (m := _score(entry, patterns, excludes, q, context, names)) is not None]
    matches.sort(key=lambda m: (-m.score, -len(m.matched_symptoms), m.id))
    return matches[:limit] if limit > 0 else matches


def clear_caches() -> None:
    """Forget loaded files (after editing the playbook in a running process, or in tests)."""
    _load.cache_clear()
    _compiled.cache_clear()


def playbook_quote(entry: PlaybookEntry, language: str) -> str:
    """What an answer quotes from an entry: its cause, check and fix in one line."""
    return " ".join(entry.text(name, language) for name in ("cause", "check", "fix"))


def playbook_text(entry_id: str) -> str:
    """The text a citation of a playbook entry is checked against (both languages, with the title);
    KeyError when no entry has this id."""
    entry = next((e for e in load_playbook() if e.id == entry_id), None)
    if entry is None:
        raise KeyError(f"no playbook entry {entry_id!r}")
    return "\n".join(f"{entry.text('title', lang)}\n{playbook_quote(entry, lang)}" for lang in LANGS)
