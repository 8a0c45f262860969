"""Answer -> Slack Block Kit (the Slack bot's rendering, ``bot.surfaces.slack_app`` re-exports it).

The reply is the short form (``answer_message``: the answer, the setup, the table, what is still
needed, and a line saying where the rest is); ``full_answer_message`` is the rest (why, passages,
forum verdicts, what would change it, how to run it, every source), posted after it. Every string
is the answer's own (``Answer.sections``), in its language; labels are the catalogs' ``slack.*``.
Slack's limits: https://docs.slack.dev/reference/block-kit/blocks (3000 chars per section text,
10 context elements, 50 blocks) and https://docs.slack.dev/reference/methods/chat.postMessage
(text truncated past 40,000 chars; 4,000 recommended).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from bot.answer import Answer
from bot.answer.catalog import LANGUAGES, catalog, words_in
from bot.env import redact
from bot.render import question_text
from bot.strategies import TRAINING_STRATEGIES, label

SECTION_LIMIT = 3000
TEXT_LIMIT = 4000


# ---------------------------------------------------------------------------------------------
# Rendering: Answer -> Block Kit. Numbers come only from answer.numbers, as everywhere else.
# language -> label key -> text (a group, "conf_values" or "verdict": value -> text); the words are
# the catalogs' slack.*


class _Labels(dict):
    """``_LABELS[lang]``: Slack's labels from the message catalogs (``slack.*``), read once."""

    def __missing__(self, lang: str) -> dict[str, Any]:
        words: dict[str, Any] = {}
        for key, text in words_in(lang, "slack.").items():
            group, _, name = key.partition(".")
            if name:
                words.setdefault(group, {})[name] = text
            else:
                words[key] = text
        self[lang] = words
        return words


_LABELS = _Labels()


def _escape(text: str) -> str:
    # Slack mrkdwn control characters: https://docs.slack.dev/messaging/formatting-message-text
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_MD_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
_MD_BOLD = re.compile(r"\*\*(.+?)\*\*")
_MD_HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)
_MD_BULLET = re.compile(r"^[-*] ", re.MULTILINE)


def md_to_mrkdwn(markdown: str) -> str:
    """Answer.text (CommonMark) as Slack mrkdwn: escape, then bullets, links, bold and headings."""
    text = _MD_BULLET.sub("• ", _escape(markdown))
    text = _MD_LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1)}>", text)
    text = _MD_BOLD.sub(r"*\1*", text)
    return _MD_HEADING.sub(r"*\1*", text)


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_LIMIT)}}


def _width(text: str) -> int:
    # CJK characters take two columns in a monospace font; ljust/rjust count them as one.
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _ljust(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _rjust(text: str, width: int) -> str:
    return " " * max(0, width - _width(text)) + text


# Headings and the setup line written by bot/render.py (render_markdown), in both languages.
_FORUM_HEADINGS = tuple(_LABELS[lang]["forum"] for lang in LANGUAGES)
_CHANGE_HEADINGS = tuple(_LABELS[lang]["change"] for lang in LANGUAGES)
_HEADING_LINE = re.compile(r"^\*\*(.+?)\*\*\s*$", re.MULTILINE)
_SETUP_LINE = re.compile("^(?:" + "|".join(re.escape(catalog(lang)["render.setup.prefix"]) for lang in LANGUAGES)
                         + ").+$", re.MULTILINE)


def text_section(markdown: str, headings: tuple[str, ...]) -> str | None:
    """The body under a ``**Heading**`` line of the answer text, up to the next heading."""
    found = [m for m in _HEADING_LINE.finditer(markdown)]
    for i, match in enumerate(found):
        if match.group(1).strip() in headings:
            end = found[i + 1].start() if i + 1 < len(found) else len(markdown)
            return markdown[match.end():end].strip() or None
    return None


def memory_table(answer: Answer) -> str | None:
    """A fixed-width per-GPU memory table from ``memory.<strategy>.*`` numbers, or None."""
    words = _LABELS[answer.language]
    nums = answer.numbers
    rows = [s for s in TRAINING_STRATEGIES if f"memory.{s}.total_gib" in nums]
    if not rows:
        return None
    has_batch = any(f"memory.{s}.max_micro_batch" in nums for s in rows)
    has_step = any(f"time.{s}.step_seconds" in nums for s in rows)
    names = {s: label(s, answer.language) for s in rows}
    width = max(_width(words["strategy"]), *(_width(n) for n in names.values()))
    columns = [(words["total"], 8), (words["fits"], 6)]
    if has_batch:
        columns.append((words["batch"], 7))
    if has_step:
        columns.append((words["step"], 7))
    lines = ["  ".join([_ljust(words["strategy"], width)] + [_rjust(name, w) for name, w in columns])]
    for s in rows:
        fits = nums.get(f"memory.{s}.fits")
        cells = [f"{float(nums[f'memory.{s}.total_gib']):.1f}",
                 words["yes"] if fits else words["no"] if fits is not None else "?"]
        if has_batch:
            mb = nums.get(f"memory.{s}.max_micro_batch")
            cells.append(str(int(mb)) if mb is not None else "-")
        if has_step:
            step = nums.get(f"time.{s}.step_seconds")
            cells.append(f"{float(step):.2f}" if step is not None else "-")
        lines.append("  ".join([_ljust(names[s], width)] + [_rjust(c, w) for c, (_, w) in zip(cells, columns, strict=True)]))
    return "\n".join(lines)


def _citation_link(citation) -> str:
    title = _escape(_clip(citation.title, 80))
    if citation.url and re.match(r"https?://", citation.url):
        return f"[{citation.n}] <{citation.url}|{title}>"
    # forum answers live in the seed thread (a "seed:" address, not a web page): name them
    return f"[{citation.n}] {title}" + (f" ({_escape(citation.id)})" if citation.kind == "bench" else "")


def _cell(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{float(value):.{digits}f}" if isinstance(value, float) else str(value)


def sections_table(answer: Answer, *, plan: bool = False) -> str | None:
    """A fixed-width table from ``answer.sections.table`` (the rows the decision weighed);
    ``plan``: from the stated TP/CP/PP plan's data-parallel rows (``sections.plan_table``)."""
    rows = answer.sections.plan_table if plan else answer.sections.table
    if not rows:
        return None
    words = _LABELS[answer.language]
    names = [r.label + (" ←" if r.chosen else "") for r in rows]
    width = max(_width(words["strategy"]), *(_width(n) for n in names))
    columns = [(words["total"], 8), (words["fits"], 6)]
    has_batch = any(r.max_micro_batch is not None for r in rows)
    has_step = any(r.step_seconds is not None for r in rows)
    if has_batch:
        columns.append((words["batch"], 7))
    if has_step:
        columns.append((words["step"], 7))
    lines = ["  ".join([_ljust(words["strategy"], width)] + [_rjust(name, w) for name, w in columns])]
    for name, r in zip(names, rows, strict=True):
        fits = "?" if r.fits is None else (words["yes"] if r.fits else words["no"])
        cells = [_cell(r.total_gib), fits]
        if has_batch:
            cells.append(_cell(r.max_micro_batch))
        if has_step:
            cells.append(_cell(r.step_seconds, 2))
        lines.append("  ".join([_ljust(name, width)] + [_rjust(c, w) for c, (_, w) in zip(cells, columns, strict=True)]))
    return "\n".join(lines)


def has_full_answer(answer: Answer) -> bool:
    """The answer has sections its short form folds (``Answer.full_text`` beyond ``text``): the
    reply is the short form, the rest follows in its own message (``full_answer_message``)."""
    return bool(answer.sections.headline and answer.full_text and answer.full_text != answer.text)


def sections_blocks(answer: Answer, part: str = "all") -> list[dict]:
    """Blocks from the answer's structured ``sections`` (bot/answer.py): nothing is scraped from
    the markdown and nothing recomputed; every string is the answer's own, in its language.
    ``part``: "all"; "short" (the short form: the answer, the setup, the table, what is still
    needed, the notices); "full" (what the short form folds: why, passages, forum verdicts,
    what would change it, how to run it)."""
    sec = answer.sections
    words = _LABELS[answer.language]
    blocks: list[dict] = []
    if part == "full":
        blocks.append(_section(f"*{words['full']}*"))
        blocks += _folded_blocks(answer)
        return blocks
    head = f"*{md_to_mrkdwn(sec.headline)}*"
    if sec.direct_answer:
        head += "\n" + md_to_mrkdwn(sec.direct_answer)
    blocks.append(_section(head))
    if sec.setup_read:
        items = [f"{_escape(i.field)}={_escape(str(i.value))}" + (f" ({words['assumed']})" if i.source == "assumed" else "")
                 for i in sec.setup_read]
        prefix = catalog("zh" if answer.language == "zh" else "en")["render.setup.prefix"]  # as bot.render writes it
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _clip(prefix + ", ".join(items), 2000)}]})
    plan_table = sections_table(answer, plan=True)
    if plan_table and sec.plan_table_title:  # the stated plan's rows first, as bot.render
        blocks.append(_section(f"*{_escape(sec.plan_table_title)}*\n```{plan_table}```"))
    table = sections_table(answer)
    if table:
        # beside a stated TP/CP/PP plan the rows are pure data parallelism: the title says so
        title = _escape(sec.table_title) if sec.table_title else words["mem"]
        blocks.append(_section(f"*{title}*\n```{table}```"))
    if part == "all":
        blocks += _folded_blocks(answer)
    if sec.questions:
        blocks.append(_section(f"*{words['questions']}*\n" + "\n".join(f"• {_escape(q)}" for q in sec.questions)))
    if sec.notices:
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _clip(md_to_mrkdwn(n), 2000)} for n in sec.notices[:10]]})
    return blocks


def _folded_blocks(answer: Answer) -> list[dict]:
    """The sections the short form folds, as blocks."""
    sec = answer.sections
    words = _LABELS[answer.language]
    blocks: list[dict] = []
    if sec.direct_more:
        blocks.append(_section(f"*{words['more']}*\n" + "\n".join(f"• {md_to_mrkdwn(x)}" for x in sec.direct_more)))
    if sec.reasons:
        blocks.append(_section("\n".join(f"• {md_to_mrkdwn(r)}" for r in sec.reasons)))
    if sec.passages:
        blocks.append(_section("\n".join(f"> {md_to_mrkdwn(p)}" for p in sec.passages[:4])))
    if sec.forum:
        lines = []
        for item in sec.forum[:6]:
            verdict = words["verdict"].get(item.verdict, item.verdict)
            marker = f"[{item.citation}] " if item.citation else ""
            quote = _escape(_clip(" ".join(item.quote.split()), 200))
            lines.append(f"• {marker}> {quote}\n   _{verdict}_" + (f": {md_to_mrkdwn(item.text)}" if item.text else ""))
        blocks.append(_section(f"*{words['forum']}*\n" + "\n".join(lines)))
    if sec.what_ifs:
        blocks.append(_section(f"*{words['change']}*\n" + "\n".join(f"• {md_to_mrkdwn(w)}" for w in sec.what_ifs)))
    if sec.howto:
        howto = sec.howto[0]
        blocks.append(_section(f"*{_escape(howto.title)}*\n```{_clip(howto.code, SECTION_LIMIT - 200)}```"))
    return blocks


def answer_blocks(answer: Answer, *, asked_by: str | None = None, question: str | None = None,
                  hint: str = "full_hint") -> list[dict]:
    """Block Kit blocks for an Answer (see module docstring for the layout): the short form when
    the answer has folded sections (``has_full_answer``), with a line saying where the rest is."""
    if answer.sections.headline:  # the structured answer: render its parts, scrape nothing
        blocks: list[dict[str, Any]] = []
        if asked_by and question:
            blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(
                f"<@{asked_by}> {_LABELS[answer.language]['asked']}: {_escape(question)}", 2000)}]})
        short = has_full_answer(answer)
        blocks += sections_blocks(answer, "short" if short else "all")
        if short:
            blocks.append({"type": "context", "elements": [
                {"type": "mrkdwn", "text": f"_{_LABELS[answer.language][hint]}_"}]})
        blocks += _source_blocks(answer, cited_in=answer.text if short else None)
        return blocks[:50]
    words = _LABELS[answer.language]
    rec = answer.recommendation
    blocks = []
    if asked_by and question:  # slash commands: others in the channel did not see the question
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _clip(f"<@{asked_by}> {words['asked']}: {_escape(question)}", 2000)}]})

    headline = rec.strategy in TRAINING_STRATEGIES or (rec.strategy == "none" and bool(rec.why))
    if headline:
        head = f"*{words['rec']}: {_escape(label(rec.strategy, answer.language))}*"
        if rec.strategy != "none":
            head += f"  ({words['conf']}: {words['conf_values'].get(rec.confidence, rec.confidence)})"
        lines = [head]
        if rec.alternatives:
            alts = ", ".join(label(a, answer.language) for a in rec.alternatives)
            lines.append(f"{words['alt']}: {_escape(alts)}")
        lines += [f"• {md_to_mrkdwn(why)}" for why in rec.why]
        blocks.append(_section("\n".join(lines)))
    else:  # out_of_scope / still asking / refused input: the answer's own text says what to do
        blocks.append(_section(md_to_mrkdwn(answer.text) or label(rec.strategy, answer.language)))

    setup_line = _SETUP_LINE.search(answer.text) if headline else None
    if setup_line:  # which setup (and which assumed defaults) the numbers are for
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _clip(md_to_mrkdwn(setup_line.group(0)), 2000)}]})

    table = memory_table(answer)
    if table:
        blocks.append(_section(f"*{words['mem']}*\n```{table}```"))

    forum_text = text_section(answer.text, _FORUM_HEADINGS) if headline else None
    if forum_text:  # with the verdict on each claim, as the answer text has it
        blocks.append(_section(f"*{words['forum']}*\n{md_to_mrkdwn(forum_text)}"))
    else:
        forum = [c for c in answer.citations if c.kind == "forum" and c.quote]
        if forum:
            quotes = [f"[{c.n}] > {_escape(_clip(' '.join((c.quote or '').split()), 280))}" for c in forum[:3]]
            blocks.append(_section(f"*{words['forum']}*\n" + "\n".join(quotes)))

    change_text = text_section(answer.text, _CHANGE_HEADINGS) if headline else None
    if change_text:
        blocks.append(_section(f"*{words['change']}*\n{md_to_mrkdwn(change_text)}"))

    if answer.questions and headline:  # otherwise the answer's text, shown above, asks them
        asks = "\n".join(f"• {_escape(question_text(q, answer.language))}" for q in answer.questions)
        blocks.append(_section(f"*{words['questions']}*\n{asks}"))

    blocks += _source_blocks(answer)
    return blocks[:50]


def _source_blocks(answer: Answer, cited_in: str | None = None) -> list[dict]:
    """The sources as context links (those ``cited_in`` that text cites, when given)."""
    words = _LABELS[answer.language]
    shown = answer.citations if cited_in is None else [c for c in answer.citations if f"[{c.n}]" in cited_in]
    links = [_citation_link(c) for c in shown]
    blocks = []
    for start in range(0, min(len(links), 40), 10):  # 10 elements per context block
        chunk = links[start:start + 10]
        if start == 0:
            chunk[0] = f"*{words['sources']}:* {chunk[0]}"
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(t, 2000)}
                                                       for t in chunk]})
    return blocks


def answer_message(answer: Answer, *, asked_by: str | None = None, question: str | None = None,
                   secrets: Iterable[str] = (), hint: str = "full_hint") -> dict[str, Any]:
    """``{"text": fallback, "blocks": [...]}`` for chat.postMessage / response_url, secrets removed:
    the short form (``full_answer_message`` is the rest)."""
    fallback = _clip(md_to_mrkdwn(answer.text) if answer.text else label(answer.recommendation.strategy,
                                                                         answer.language), TEXT_LIMIT)
    blocks = answer_blocks(answer, asked_by=asked_by, question=question, hint=hint)
    secrets = list(secrets)
    return {"text": redact(fallback, secrets), "blocks": _redact_blocks(blocks, secrets)}


def full_answer_message(answer: Answer, *, secrets: Iterable[str] = ()) -> dict[str, Any] | None:
    """The folded sections (why, passages, forum verdicts, what would change it, how to run it)
    as their own message, posted after the short form; None when the short form is all of it."""
    if not has_full_answer(answer):
        return None
    blocks = (sections_blocks(answer, "full") + _source_blocks(answer))[:50]
    fallback = _clip(md_to_mrkdwn(answer.full_text), TEXT_LIMIT)
    secrets = list(secrets)
    return {"text": redact(fallback, secrets), "blocks": _redact_blocks(blocks, secrets)}


def _redact_blocks(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [_redact_blocks(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _redact_blocks(v, secrets) for k, v in value.items()}
    return value
