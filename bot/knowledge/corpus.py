"""The corpus in git: the forum thread (question, twenty answers, their claims) and the docs.

Layout under ``knowledge/`` (format described in ``knowledge/README.md``):

- ``forum/forum-00.json``: the thread's question; ``forum/forum-01.json`` .. ``forum-20.json``:
  the answers, each with its verbatim Chinese text, our English rendering, what it recommends
  (``stance``) and its checkable statements (``claims``), each with a verdict and its source.
- ``docs/doc-*.md``: short documents in our own words; front matter (``id``, ``title``, ``lang``,
  ``urls``, ``topics``) between ``---`` lines, then a markdown body.

Everything is validated on load, and a broken file raises :class:`CorpusError` naming the file:
ids unique and well formed, every claim quote a verbatim substring of its answer, every verdict
one of :data:`VERDICTS` with a source that exists (a doc id or ``calc``), every doc with a URL.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from bot.env import repo_root
from bot.knowledge import conditions

# A verdict is judged under its claim's ``condition`` (bot.knowledge.conditions). "holds_only_when":
# the claim is right exactly when the condition holds (and wrong otherwise).
VERDICTS = ("supported", "holds_only_when", "misleading", "contradicted", "unverifiable")
STANCES = ("ddp", "fsdp", "depends", "none")
CALC_SOURCE = "calc"  # a verdict checked with the memory/comm calculator (bot/calc)
QUESTION_ID = "forum-00"
SEED_NAME = "000_8dc699b15a19d084.txt"  # the forum thread; a copy lives in knowledge/seed/
# The one answer the thread spreads over three blank-line-separated paragraphs (forum-09).
MERGED_ANSWER_OPENINGS = ("老实说7B参数这个规模在MCP上跑", "不过你得多留个心眼", "另外有个小坑")

_FORUM_ID = re.compile(r"^forum-\d{2}$")
_CLAIM_ID = re.compile(r"^(forum-\d{2})-c\d+$")
_DOC_ID = re.compile(r"^doc-[a-z0-9][a-z0-9-]*$")


class CorpusError(ValueError):
    """A corpus file is malformed; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Claim:
    """One checkable statement in a forum answer, with our verdict on it."""

    id: str  # "forum-06-c1"
    quote: str  # verbatim substring of the answer's original text
    figure: float | None  # the number the answer states, if any
    unit: str | None  # "GB", "%", "x", ...
    applies_to: dict[str, Any]  # setup fields it speaks about (DESIGN names): {"params_b": 7, ...}
    topic: str  # memory, communication, speed, terminology, version, ...
    verdict: str  # one of VERDICTS
    correct: str  # the correct statement in English, with the right figure
    correct_zh: str  # the same in Chinese
    verdict_source: list[str]  # doc ids and/or "calc": where the verdict comes from
    explanation: str  # how the verdict was worked out (English)
    # When the verdict applies, over setup facts (see bot.knowledge.conditions); {} = always.
    # For "holds_only_when" it is where the claim holds.
    condition: dict[str, Any] = field(default_factory=dict)
    # Which questions the claim speaks to, in bot.understand.TOPICS' vocabulary.
    topics: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ForumQuestion:
    id: str  # "forum-00"
    text: str  # verbatim
    text_en: str = ""
    url: str = ""
    lang: str = "zh"
    title: str = "forum-00: the question"
    kind: str = "forum"


@dataclass(frozen=True)
class ForumAnswer:
    id: str  # "forum-01" .. "forum-20", in order of appearance in the thread
    text: str  # verbatim original Chinese, exactly as in the seed thread
    text_en: str  # our English rendering
    title: str  # "forum-06: FSDP + mixed precision + checkpointing ~20 GB for 6.7B"
    url: str
    lang: str = "zh"
    stance: str = "none"  # one of STANCES: what it recommends for the asker's 7B case
    stance_condition: str = ""  # e.g. "ddp if a full replica fits (>=40 GB cards)"
    topics: list[str] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    kind: str = "forum"


@dataclass(frozen=True)
class Doc:
    id: str  # "doc-..."
    title: str
    lang: str  # "en" or "zh"
    urls: list[str]  # primary sources the body's figures come from
    text: str  # markdown body (front matter stripped)
    topics: list[str] = field(default_factory=list)
    kind: str = "doc"

    @property
    def url(self) -> str:
        """The main source URL (the first one), so a Doc cites like a ForumAnswer."""
        return self.urls[0]


def default_root() -> Path:
    return repo_root() / "knowledge"


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def load_question(root: Path | str | None = None) -> ForumQuestion:
    """The thread's question (``forum-00``), verbatim."""
    return _load(_root(root)).question


def load_forum(root: Path | str | None = None) -> list[ForumAnswer]:
    """The forum answers, ``forum-01`` .. ``forum-NN`` in thread order."""
    return list(_load(_root(root)).answers)


def load_docs(root: Path | str | None = None) -> list[Doc]:
    """The docs, sorted by id."""
    return list(_load(_root(root)).docs)


def all_entries(root: Path | str | None = None) -> list[ForumAnswer | Doc]:
    """Forum answers then docs: everything a citation can point at (the question excluded)."""
    corpus = _load(_root(root))
    return [*corpus.answers, *corpus.docs]


def get_entry(entry_id: str, root: Path | str | None = None) -> ForumQuestion | ForumAnswer | Doc:
    """One entry by id (``forum-00`` included); KeyError if unknown."""
    corpus = _load(_root(root))
    try:
        return corpus.by_id[entry_id]
    except KeyError:
        raise KeyError(f"no corpus entry {entry_id!r}") from None


def corpus_text(entry_id: str, root: Path | str | None = None) -> str:
    """The text a citation's quote must appear in verbatim: forum original text, a doc's body, or
    a diagnosis playbook entry (``pb-...``, knowledge/playbook)."""
    if entry_id.startswith("pb-"):
        from bot.knowledge.playbook import playbook_text

        return playbook_text(entry_id)
    return get_entry(entry_id, root).text


def all_claims(root: Path | str | None = None) -> list[Claim]:
    """Every claim of every answer, in thread order."""
    return [c for a in load_forum(root) for c in a.claims]


def split_thread(raw: str) -> tuple[str, list[str]]:
    """Split the seed thread into (question, answers), verbatim.

    Blocks are separated by blank lines; the first is the question. Paragraphs that continue an
    answer (``MERGED_ANSWER_OPENINGS[1:]``) are joined to the previous block with "\n\n".
    """
    blocks = [b for b in raw.split("\n\n") if b.strip()]
    if len(blocks) < 2:
        raise CorpusError("thread has no answers")
    answers: list[str] = []
    for block in blocks[1:]:
        if answers and block.startswith(MERGED_ANSWER_OPENINGS[1:]):
            answers[-1] += "\n\n" + block
        else:
            answers.append(block)
    return blocks[0], answers


def clear_cache() -> None:
    """Forget loaded corpora (after editing files in a running process, or in tests)."""
    _load.cache_clear()


# --------------------------------------------------------------------------------------------
# Loading and validation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Corpus:
    question: ForumQuestion
    answers: tuple[ForumAnswer, ...]
    docs: tuple[Doc, ...]
    by_id: dict[str, ForumQuestion | ForumAnswer | Doc]


def _root(root: Path | str | None) -> Path:
    return (Path(root) if root is not None else default_root()).resolve()


@lru_cache(maxsize=8)
def _load(root: Path) -> _Corpus:
    forum_dir, docs_dir = root / "forum", root / "docs"
    for folder in (forum_dir, docs_dir):
        if not folder.is_dir():
            raise CorpusError(f"{folder}: corpus folder missing")
    docs = tuple(sorted((_read_doc(p) for p in sorted(docs_dir.glob("doc-*.md"))), key=lambda d: d.id))
    if not docs:
        raise CorpusError(f"{docs_dir}: no doc-*.md files")
    doc_ids = _unique([(d.id, docs_dir / f"{d.id}.md") for d in docs])

    question_path = forum_dir / f"{QUESTION_ID}.json"
    if not question_path.is_file():
        raise CorpusError(f"{question_path}: the thread's question file is missing")
    question = _read_question(question_path)
    answer_paths = sorted(p for p in forum_dir.glob("forum-*.json") if p != question_path)
    if not answer_paths:
        raise CorpusError(f"{forum_dir}: no forum answers")
    answers = tuple(_read_answer(p, doc_ids) for p in answer_paths)
    expected = [f"forum-{i:02d}" for i in range(1, len(answers) + 1)]
    got = [a.id for a in answers]
    if got != expected:
        raise CorpusError(f"{forum_dir}: answer ids must run forum-01..forum-{len(answers):02d}, got {got}")
    claim_ids = [(c.id, forum_dir / f"{a.id}.json") for a in answers for c in a.claims]
    _unique(claim_ids)

    by_id: dict[str, ForumQuestion | ForumAnswer | Doc] = {question.id: question}
    entries: tuple[ForumAnswer | Doc, ...] = (*answers, *docs)
    for entry in entries:
        if entry.id in by_id:
            raise CorpusError(f"{root}: duplicate id {entry.id!r}")
        by_id[entry.id] = entry
    return _Corpus(question, answers, docs, by_id)


def _unique(pairs: list[tuple[str, Path]]) -> set[str]:
    seen: dict[str, Path] = {}
    for key, path in pairs:
        if key in seen:
            raise CorpusError(f"{path}: duplicate id {key!r} (also in {seen[key]})")
        seen[key] = path
    return set(seen)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CorpusError(f"{path}: cannot read JSON: {err}") from err
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected a JSON object")
    return data


def _text(data: dict[str, Any], key: str, path: Path, *, required: bool = True) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise CorpusError(f"{path}: {key!r} must be a string")
    if required and not value.strip():
        raise CorpusError(f"{path}: {key!r} is missing or empty")
    return value


def _str_list(data: dict[str, Any], key: str, path: Path) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise CorpusError(f"{path}: {key!r} must be a list of non-empty strings")
    return list(value)


def _read_question(path: Path) -> ForumQuestion:
    data = _read_json(path)
    if data.get("id") != QUESTION_ID:
        raise CorpusError(f"{path}: id must be {QUESTION_ID!r}")
    return ForumQuestion(id=QUESTION_ID, text=_text(data, "text", path), text_en=_text(data, "text_en", path),
                         url=_text(data, "url", path), lang=_text(data, "lang", path),
                         title=_text(data, "title", path, required=False) or ForumQuestion.title)


def _read_answer(path: Path, doc_ids: set[str]) -> ForumAnswer:
    data = _read_json(path)
    answer_id = _text(data, "id", path)
    if not _FORUM_ID.match(answer_id) or path.stem != answer_id:
        raise CorpusError(f"{path}: id {answer_id!r} must look like forum-NN and match the file name")
    text = _text(data, "text", path)
    stance = _text(data, "stance", path)
    if stance not in STANCES:
        raise CorpusError(f"{path}: stance {stance!r} is not one of {STANCES}")
    raw_claims = data.get("claims", [])
    if not isinstance(raw_claims, list):
        raise CorpusError(f"{path}: 'claims' must be a list")
    claims = [_read_claim(c, answer_id, text, path, doc_ids) for c in raw_claims]
    return ForumAnswer(
        id=answer_id, text=text, text_en=_text(data, "text_en", path), title=_text(data, "title", path),
        url=_text(data, "url", path), lang=_text(data, "lang", path), stance=stance,
        stance_condition=_text(data, "stance_condition", path, required=False),
        topics=_str_list(data, "topics", path), claims=claims,
    )


def _read_claim(data: Any, answer_id: str, text: str, path: Path, doc_ids: set[str]) -> Claim:
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: each claim must be a JSON object")
    claim_id = _text(data, "id", path)
    where = f"{path}: claim {claim_id!r}"
    match = _CLAIM_ID.match(claim_id)
    if not match or match.group(1) != answer_id:
        raise CorpusError(f"{where}: id must look like {answer_id}-cN")
    quote = _text(data, "quote", path)
    if quote not in text:
        raise CorpusError(f"{where}: quote {quote!r} is not a verbatim substring of the answer text")
    verdict = _text(data, "verdict", path)
    if verdict not in VERDICTS:
        raise CorpusError(f"{where}: verdict {verdict!r} is not one of {VERDICTS}")
    sources = _str_list(data, "verdict_source", path)
    if not sources:
        raise CorpusError(f"{where}: verdict_source is empty (a doc id or {CALC_SOURCE!r})")
    for source in sources:
        if source != CALC_SOURCE and source not in doc_ids:
            raise CorpusError(f"{where}: verdict_source {source!r} is neither {CALC_SOURCE!r} nor a doc id")
    figure = data.get("figure")
    if figure is not None and (isinstance(figure, bool) or not isinstance(figure, int | float)):
        raise CorpusError(f"{where}: figure must be a number or null")
    unit = data.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise CorpusError(f"{where}: unit must be a string or null")
    applies_to = data.get("applies_to", {})
    if not isinstance(applies_to, dict):
        raise CorpusError(f"{where}: applies_to must be an object")
    condition = data.get("condition", {})
    problems = conditions.validate(condition)
    if problems:
        raise CorpusError(f"{where}: bad condition: {'; '.join(problems)}")
    if verdict == "holds_only_when" and not condition:
        raise CorpusError(f"{where}: verdict 'holds_only_when' needs a non-empty condition")
    topics = _str_list(data, "topics", path)
    unknown = [t for t in topics if t not in _topic_vocabulary()]
    if unknown:
        raise CorpusError(f"{where}: topics {unknown} not in bot.understand.TOPICS")
    return Claim(
        id=claim_id, quote=quote, figure=None if figure is None else float(figure), unit=unit,
        applies_to=dict(applies_to), topic=_text(data, "topic", path), verdict=verdict,
        correct=_text(data, "correct", path), correct_zh=_text(data, "correct_zh", path),
        verdict_source=sources, explanation=_text(data, "explanation", path),
        condition=dict(condition), topics=topics,
    )


def _topic_vocabulary() -> tuple[str, ...]:
    from bot.understand import TOPICS

    return TOPICS


def _read_doc(path: Path) -> Doc:
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CorpusError(f"{path}: cannot read: {err}") from err
    meta, body = parse_front_matter(raw, path)
    doc_id = meta.get("id")
    if not isinstance(doc_id, str) or not _DOC_ID.match(doc_id) or doc_id != path.stem:
        raise CorpusError(f"{path}: id {doc_id!r} must look like doc-... and match the file name")
    title, lang = meta.get("title"), meta.get("lang")
    if not isinstance(title, str) or not title:
        raise CorpusError(f"{path}: title missing")
    if lang not in ("en", "zh"):
        raise CorpusError(f"{path}: lang must be 'en' or 'zh', got {lang!r}")
    urls = meta.get("urls")
    if isinstance(urls, str):
        urls = [urls]
    if not urls or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in urls):
        raise CorpusError(f"{path}: needs at least one http(s) URL in 'urls'")
    topics = meta.get("topics", [])
    if isinstance(topics, str):
        topics = [topics]
    if not body.strip():
        raise CorpusError(f"{path}: empty body")
    return Doc(id=doc_id, title=title, lang=lang, urls=list(urls), text=body.strip() + "\n", topics=list(topics))


def parse_front_matter(raw: str, path: Path | str = "<text>") -> tuple[dict[str, str | list[str]], str]:
    """Split ``---``-delimited front matter from a markdown body.

    The front matter is a small YAML subset: ``key: value`` lines, lists either inline
    (``topics: [ddp, memory]``) or as ``- item`` lines under ``key:``. Enough for our docs, and no
    YAML dependency.
    """
    lines = raw.split("\n")
    if not lines or lines[0].strip() != "---":
        raise CorpusError(f"{path}: must start with a '---' front matter line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise CorpusError(f"{path}: front matter is not closed by a '---' line") from None
    meta: dict[str, str | list[str]] = {}
    current: str | None = None
    for lineno, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.match(r"^\s+-\s+(.*)$", line) or re.match(r"^-\s+(.*)$", line)
        if item and current is not None:
            value = meta.setdefault(current, [])
            if not isinstance(value, list):
                raise CorpusError(f"{path}:{lineno}: list item under scalar key {current!r}")
            value.append(_unquote(item.group(1)))
            continue
        pair = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", line)
        if not pair:
            raise CorpusError(f"{path}:{lineno}: expected 'key: value', got {line!r}")
        key, value = pair.group(1), pair.group(2).strip()
        if key in meta:
            raise CorpusError(f"{path}:{lineno}: duplicate key {key!r}")
        current = key
        if value.startswith("[") and value.endswith("]"):
            meta[key] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        elif value:
            meta[key] = _unquote(value)
        else:
            meta[key] = []  # a block list follows
    return meta, "\n".join(lines[end + 1:])


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
