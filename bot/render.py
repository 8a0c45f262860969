"""Answer -> markdown (zh/en): the layout of ``Answer.sections``, and the figure bindings.

``render_markdown(answer)`` reads only ``answer.sections`` (and the citations' numbers for
markers): it never computes a figure. While laying the sections out it emits ``Answer.figures``:
every figure printed in the text (outside code), in order, with the key it renders
(``Sections.figure_keys`` for prose, ``TableRow.keys`` for table cells, ``setup.<field>`` for
the setup line). ``evals/metrics.py`` checks value and key with the same tokenizer
(``bot.figures.numbers_in_text``).

Also here: ``fmt`` (how every figure is printed), the question/notice/problem wording, and
``untraceable_numbers`` (the LLM guard's check).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from bot.answer import Answer, Citation, FigureRef, TableRow
from bot.answer.catalog import render
from bot.figures import _MARKER_GROUP, _THOUSANDS, numbers_in_text, strip_code_blocks
from bot.strategies import finetune_label, optimizer_label

# --------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------


def fmt(value) -> str:
    """A number as the answer prints it: integers as is, floats with at most two decimals."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    text = f"{float(value):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def prose(text: str) -> str:
    """``text`` without fenced code blocks and citation markers (what the tracer reads)."""
    return _MARKER_GROUP.sub(" ", strip_code_blocks(text))


def numbers_in(text: str) -> list[float]:
    return [m.value for m in numbers_in_text(text)]


def _sources(numbers: dict, setup: dict, quotes: list[str]) -> list[float]:
    values: list[float] = []
    for value in list(numbers.values()) + list(setup.values()):
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float):
            values.append(abs(float(value)))
        elif isinstance(value, str):
            values.extend(float(x) for x in re.findall(r"\d+(?:\.\d+)?", _THOUSANDS.sub("", value)))
    for quote in quotes:  # "10,000x" in a quote is 10000, as the tokenizer reads it in the text
        values.extend(float(x) for x in re.findall(r"\d+(?:\.\d+)?", _THOUSANDS.sub("", quote or "")))
    return values


def untraceable_numbers(text: str, numbers: dict, setup: dict, quotes: list[str]) -> list[float]:
    """Numbers in ``text`` (outside code and markers) found neither in ``numbers``, the setup nor a
    cited quote (or a citation title). Tolerance: half the last printed digit."""
    sources = _sources(numbers, setup, quotes)
    bad = []
    for m in numbers_in_text(text):
        tolerance = 0.5 * 10 ** -m.decimals + 1e-9
        if not any(abs(m.value - v) <= max(tolerance, 0.0051 if m.decimals else tolerance) for v in sources):
            bad.append(m.value)
    return bad


def dangling_markers(text: str, citations: list[Citation]) -> list[int]:
    known = {c.n for c in citations}
    found = [int(n) for g in _MARKER_GROUP.finditer(strip_code_blocks(text)) for n in re.findall(r"\d+", g.group(1))]
    return sorted({n for n in found if n not in known})


def _w(lang: str, key: str, /, **context) -> str:
    """One of the renderer's labels (``render.<key>`` in the message catalogs)."""
    return render(lang, f"render.{key}", context)


def _label(lang: str, key: str, default: str | None = None, /, **context) -> str:
    """``render.<key>`` from the catalogs, or ``default`` when the catalog has no such label."""
    from bot.answer.catalog import catalog

    if f"render.{key}" not in catalog("zh" if lang == "zh" else "en") and default is not None:
        return default
    return _w(lang, key, **context)


def question_text(field_name: str, lang: str) -> str:
    """The question asking for a setup field (``render.question.<field>``)."""
    return _label(lang, f"question.{field_name}", _w(lang, "question_default", words=field_name.replace("_", " ")))


def field_name_text(field_name: str, lang: str) -> str:
    """A setup field's name as the answer says it ("序列长度" / "sequence length")."""
    return _label(lang, f"field.{field_name}", field_name)


class Problem(Protocol):
    """A ``bot.core.setup.Problem`` as the renderer sees it (renderers do not import the setup)."""

    field: str
    code: str

    def worded(self, lang: str) -> str: ...

    def value(self, slot: str) -> Any: ...


def _given_words(problem: Problem, lang: str) -> str:
    """", the question gives minus 8" / "（问题里是负 8）": the bad value in words (``problem_line.given``)."""
    from bot.figures import value_words

    return render(lang, "problem_line.given", {"value": value_words(problem.value("value"), lang)})


# Figures the user did not write (a catalog size, a product) are dropped from a problem's line so
# the text stays traceable: a parenthesis holding a digit, "= 8".
_UNWRITTEN_FIGURES = re.compile(r"\s*\([^)]*\d[^)]*\)|\s*（[^）]*\d[^）]*）|\s*=\s*\d+(?:\.\d+)?")
# a number no computation can use (bot.core.setup LIMITS) is said in words of its own, not the
# problem's sentence: problem_line.<line>
_NUMBER_LINES = {"not_positive": "positive", "not_finite": "positive", "not_a_number": "not_a_number",
                 "out_of_range": "out_of_range"}


def problem_text(problem: Problem, lang: str) -> str:
    """A problem as an answer's line in the answer's language (``problem_line.*``): the field's
    name, then what is wrong (``problem.<code>``, ``Problem.worded``)."""
    name = field_name_text(problem.field, lang)
    line = _NUMBER_LINES.get(problem.code)
    if line == "positive":
        return render(lang, "problem_line.positive", {"field": name, "given": _given_words(problem, lang)})
    if line:
        return render(lang, f"problem_line.{line}", {"field": name})
    message = _UNWRITTEN_FIGURES.sub("", problem.worded(lang))
    return render(lang, "problem_line.other", {"field": name, "message": message})


_ROLES = ("actor", "critic", "reference", "reward")


def multi_model_text(roles: tuple[str, ...], lang: str) -> str:
    """What a multi-model job's answer computed and what it did not (PPO/GRPO/DPO): only the
    roles the job has are named (DPO has a policy and a frozen reference, no critic)."""
    named: list[str] = [r for r in _ROLES if r in roles] or list(_ROLES)
    listed = render(lang, "multi_model.role_sep", {}).join(render(lang, f"multi_model.role.{r}", {}) for r in named)
    frozen = [r for r in ("reference", "reward") if r in named]
    return render(lang, "multi_model.note", {"listed": listed, "critic": "critic" in named, "frozen": frozen})


def notice_text(notice: str, lang: str) -> str:
    """A notice's wording (``render.notice.<name>``); an unknown one is shown as given."""
    return _label(lang, f"notice.{notice}", notice)


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------

def _setup_name(field: str, lang: str) -> str:
    """A field's name in the setup and read-back lines (``render.setup_field``, else ``render.field``)."""
    return _label(lang, f"setup_field.{field}", field_name_text(field, lang))


def _has(key: str) -> bool:
    """The catalogs have the label ``render.<key>`` (both languages have the same keys)."""
    from bot.answer.catalog import catalog

    return f"render.{key}" in catalog("en")


def _named(field: str) -> bool:
    return _has(f"setup_field.{field}") or _has(f"field.{field}")


class _Out:
    """Collects the text's blocks and the key of every figure in them, in order."""

    def __init__(self, keys: dict[str, list[str]]) -> None:
        self.blocks: list[str] = []
        self.figures: list[FigureRef] = []
        self.keys = keys
        self.parts: list[tuple[str, str, list[FigureRef]]] = []  # (kind, text, its figures)
        self._mark = 0

    def bind(self, piece: str, keys: list[str] | None = None) -> str:
        mentions = numbers_in_text(piece)
        keys = keys if keys is not None else self.keys.get(piece, [])
        if len(keys) != len(mentions):  # not bound by the composer: the metric traces it by value
            keys = ["unbound"] * len(mentions)
        self.figures += [FigureRef(printed=m.printed, key=k) for m, k in zip(mentions, keys, strict=True)]
        return piece

    def block(self, text: str, kind: str = "folded") -> None:
        """A block of the answer: ``kind`` is "short" (in the short form too) or "folded"; the
        figures bound since the previous block are this block's."""
        self.blocks.append(text)
        self.parts.append((kind, text, self.figures[self._mark:]))
        self._mark = len(self.figures)

    def form(self, kinds: set[str]) -> tuple[str, list[FigureRef]]:
        chosen = [(t, f) for k, t, f in self.parts if k in kinds and t]
        return "\n\n".join(t for t, _ in chosen), [x for _, f in chosen for x in f]


# The short form's prose above the table (DESIGN.md, issue 25): about 600 characters in English,
# 350 in Chinese; the notices that do not fit are folded with the other sections.
SHORT_PROSE_CHARS = {"en": 600, "zh": 350}


def _setup_line(answer: Answer, out: _Out) -> str:
    """"Setup: ..." from ``answer.setup``; every figure is bound to the field it prints."""
    lang, s = answer.language, answer.setup
    bits: list[tuple[str, str]] = []  # (text, field its figures come from)
    if s.get("model"):
        bits.append((str(s["model"]), "model"))
    if s.get("params_b") is not None:
        bits.append((_w(lang, "setup.params", v=fmt(s["params_b"])), "params_b"))
    gpu, gpu_field = (str(s["gpu"]), "gpu") if s.get("gpu") else (
        _w(lang, "setup.gpu_memory", v=fmt(s.get("gpu_memory_gb") or 0)),
        "gpu_memory_gb")
    if s.get("gpu_count"):
        nodes = s.get("nodes") or 1
        if nodes > 1:
            bits += [(_w(lang, "setup.nodes", v=nodes), "nodes"),
                     (_w(lang, "setup.per_node", v=s.get("gpus_per_node")), "gpus_per_node"),
                     (gpu, gpu_field)]
        else:
            bits += [(_w(lang, "setup.count", v=s["gpu_count"]), "gpu_count"), (gpu, gpu_field)]
    if s.get("precision"):
        bits.append((str(s["precision"]), "precision"))
    if s.get("optimizer"):
        bits.append((optimizer_label(s["optimizer"]), "optimizer"))
    ft = s.get("finetune")
    if ft:
        bits.append((finetune_label(ft, lang), "finetune"))
    if s.get("seq_len"):
        bits.append((_w(lang, "setup.seq_len", v=s["seq_len"]), "seq_len"))
    if s.get("micro_batch"):
        bits.append((_w(lang, "setup.micro_batch", v=s["micro_batch"]), "micro_batch"))
    if s.get("activation_checkpointing"):
        bits.append((_w(lang, "setup.checkpointing"), "activation_checkpointing"))
    for axis, field in (("TP", "tensor_parallel"), ("CP", "context_parallel"), ("PP", "pipeline_parallel")):
        if (s.get(field) or 1) > 1:  # a stated degree is shown, never dropped (issue 29)
            bits.append((f"{axis} {s[field]}", field))
    keys = [f"setup.{f}" for text, f in bits for _ in numbers_in_text(text)]
    joined: list[str] = []
    for text, _field in bits:  # "8 x" and "3 张" run into the GPU name; the rest are comma-separated
        glue = " " if joined and joined[-1].endswith((" x", "张", "每台")) else _w(lang, "setup.sep")
        joined.append((glue if joined else "") + text)
    text = _w(lang, "setup.prefix") + "".join(joined)
    assumed = [i.field for i in answer.sections.setup_read if i.source == "assumed"
               and i.field not in ("intra_node_link",) + _RUN_OPTIONS]
    if assumed:
        listed = _w(lang, "setup.list_sep").join(_setup_name(a, lang) for a in assumed)
        text += _w(lang, "setup.assumed", listed=listed)
    calc = next((c.n for c in answer.citations if c.kind == "calc"), None)
    text += f" [{calc}]" if calc else ""
    return out.bind(text, keys)


# Run options (issue 14): left at PyTorch's defaults unless the user set them; the answer names them.
_RUN_OPTIONS = ("optimizer_impl", "ddp_bucket_view", "checkpointing_policy", "checkpoint_every", "torch_compile",
                "loss_impl", "grad_accum_steps", "lora_targets", "base_dtype", "float8", "mfu", "norm_impl",
                "lora_rank", "tensor_parallel", "pipeline_parallel", "context_parallel", "tf32", "grad_sync",
                "attn_implementation")
# Read back in this order: what the answer depends on most first.
_READ_ORDER = ("model", "params_b", "gpu_count", "nodes", "gpus_per_node", "gpu", "gpu_memory_gb", "finetune",
               "precision", "seq_len", "micro_batch", "grad_accum_steps", "activation_checkpointing", "optimizer",
               "optimizer_impl", "torch_compile", "lora_targets", "base_dtype", "intra_node_link",
               "inter_node_link", "inter_node_gbps", "cpu_ram_gb", "lora_rank")
_SPAN_CHARS = 60


def _value_label(field: str, value, lang: str) -> str:
    """How one setup value is named in the read-back line ("8 GPUs", "seq 4096", "torch.compile off")."""
    if field == "optimizer":
        return optimizer_label(value)
    if field == "finetune":
        return finetune_label(value, lang)
    # a bool's label (1 and 0 name the same labels as True and False, as the dict keys did)
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    key = str(bool(value)).lower() if isinstance(value, bool) or (numeric and value in (0, 1)) else value
    named = _label(lang, f"run_option.{field}.{key}", "") if isinstance(key, str) else ""
    if named:
        return named
    if isinstance(value, bool):
        name = _setup_name(field, lang)
        return f"{name} {_w(lang, 'on' if value else 'off')}"
    if value == 1 and (one := _label(lang, f"value_one.{field}", "")):
        return one
    if _has(f"value.{field}"):
        return _w(lang, f"value.{field}", v=fmt(value))
    if _named(field) and field not in ("model", "gpu", "precision"):
        return f"{_setup_name(field, lang)} {value}"
    return str(value)


def _read_line(answer: Answer, out: _Out, run_options: bool) -> str:
    """"Read: 8 GPUs, A100 40GB SXM from `8x A100 40GB`; seq 4096 from `--cutoff_len 4096`" (issue 11):
    what was read and the user's words it came from, so a wrong read is easy to correct; then,
    for a computed answer, the run options left at PyTorch's defaults (issue 14). Value figures
    are bound to their setup field, figures inside a quoted span to the user's turns."""
    lang = answer.language
    order = {f: i for i, f in enumerate(_READ_ORDER)}
    items = sorted(answer.sections.setup_read, key=lambda i: order.get(i.field, len(order)))
    groups: dict[str, list] = {}
    for item in items:
        if item.source != "assumed" and item.span:
            groups.setdefault(item.span, []).append(item)
    parts: list[str] = []
    keys: list[str] = []
    for span, group in groups.items():
        fields = {i.field for i in group}
        shown = [i for i in group if not (i.field == "params_b" and "model" in fields)
                 and not (i.field == "gpu_memory_gb" and "gpu" in fields)]
        labels = [_value_label(i.field, i.value, lang) for i in shown]
        for i, label in zip(shown, labels, strict=True):
            keys += [f"setup.{i.field}"] * len(numbers_in_text(label))
        quoted = " ".join(span.replace("`", "'").split())
        quoted = quoted if len(quoted) <= _SPAN_CHARS else quoted[:_SPAN_CHARS - 1] + "…"
        keys += ["turn"] * len(numbers_in_text(f"`{quoted}`"))
        kind = group[0].source
        source = _w(lang, f"read.source.{kind}") if kind in ("config", "log", "history", "carried") else ""
        parts.append(_w(lang, "read.list_sep").join(labels) + _w(lang, "read.span", quoted=quoted) + source)
    text = (_w(lang, "read.prefix") + _w(lang, "read.sep").join(parts)) if parts else ""
    if run_options:
        defaults = [i for i in items if i.source == "assumed" and i.field in _RUN_OPTIONS
                    and not (i.field == "lora_rank" and answer.setup.get("finetune") not in ("lora", "qlora"))]
        labels = [_value_label(i.field, i.value, lang) for i in defaults]
        for i, label in zip(defaults, labels, strict=True):
            keys += [f"setup.{i.field}"] * len(numbers_in_text(label))
        if labels:
            text += (_w(lang, "read.defaults_sep") if text else "") + _w(lang, "read.defaults") + \
                _w(lang, "read.list_sep").join(labels)
    return out.bind(text, keys) if text else ""


def _cell(out: _Out, value, key: str | None, suffix: str = "") -> str:
    if value is None:
        return "-"
    text = fmt(value) + suffix
    out.figures.append(FigureRef(printed=fmt(value), key=key or "unbound"))
    return text


def _table(answer: Answer, out: _Out, rows: list[TableRow] | None = None) -> str:
    lang = answer.language
    rows = answer.sections.table if rows is None else rows
    tps = any(r.tokens_per_s_per_gpu for r in rows)
    head = _w(lang, "table_head") + (_w(lang, "table_head_tps") if tps else "")
    lines = [head, "|---|---:|---:|:---:|---:|---:|---:|" + ("---:|" if tps else "")]
    yes, no = _w(lang, "yes"), _w(lang, "no")
    for r in rows:
        k = r.keys
        label = out.bind(r.label)  # a label may print a figure (the micro-batch a pick runs at)
        name = f"**{label}**" if r.chosen else label
        cells = [name, _cell(out, r.total_gib, k.get("total_gib")), _cell(out, r.usable_gib, k.get("usable_gib")),
                 yes if r.fits else no, _cell(out, r.max_micro_batch, k.get("max_micro_batch")),
                 _cell(out, r.vs_ddp, k.get("vs_ddp"), "x"), _cell(out, r.step_seconds, k.get("step_seconds"))]
        if tps:
            cells.append(_cell(out, r.tokens_per_s_per_gpu, k.get("tokens_per_s_per_gpu")))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fitting(items: list[str], room: int) -> list[str]:
    """The first ``items`` whose lengths fit in ``room`` characters, in order."""
    used = 0
    for i, x in enumerate(items):
        used += len(x)
        if used > room:
            return items[:i]
    return items


def _items(out: _Out, items: list[str]) -> str:
    return "\n".join(f"- {out.bind(x)}" for x in items if x)


def render_markdown(answer: Answer) -> Answer:
    """``answer`` with ``text`` (the short form: markdown in its language) and ``full_text`` (every
    section), and the figures of each, set from its sections."""
    lang, sec = answer.language, answer.sections
    out = _Out(sec.figure_keys)
    table = bool(sec.table and answer.setup)
    lead = [x for x in (sec.direct_answer, sec.headline) if x]
    budget = SHORT_PROSE_CHARS["zh" if lang == "zh" else "en"] - sum(len(x) for x in lead)
    room = budget  # what is left of the prose budget for the sections after the lead
    # the answer first (issue 25: the first sentence answers what was asked), then the notes on how
    # the question was read, in the short form while the prose stays short
    if sec.direct_answer:
        out.block(out.bind(sec.direct_answer), "short")
    if sec.headline:
        line = out.bind(sec.headline)
        out.block(f"**{line}**" if table else line, "short")
    for notice in sec.notices:
        budget -= len(notice)
        out.block("> " + out.bind(notice), "short" if budget >= 0 else "folded")
        room -= len(notice) if budget >= 0 else 0
    if sec.direct_more and not table:
        out.block(_w(lang, "more") + "\n" + _items(out, sec.direct_more))
    if not table:
        out.block(_read_line(answer, out, run_options=table))
    if answer.status == "invalid":
        out.block(_w(lang, "invalid") if not sec.headline else "", "short")
        out.block(_items(out, sec.reasons), "short")
    elif sec.table:
        calc = next((c.n for c in answer.citations if c.kind == "calc"), None)
        if sec.plan_table and sec.plan_table_title:  # the stated TP/CP/PP plan's rows come first
            out.block(f"**{out.bind(sec.plan_table_title)}**" + (f" [{calc}]" if calc else "") + "\n\n" +
                      _table(answer, out, sec.plan_table), "short")
        title = f"**{out.bind(sec.table_title)}**" if sec.table_title else _w(lang, "table_title")
        out.block(title +
                  (f" [{calc}]" if calc else "") + "\n\n" + _table(answer, out), "short")
        if table:  # the table's inputs under it: the setup as computed, then (folded) as read
            out.block(_setup_line(answer, out), "short")
            out.block(_read_line(answer, out, run_options=True))
            if sec.direct_more:
                out.block(_w(lang, "more") + "\n" + _items(out, sec.direct_more))
        if sec.reasons:
            out.block(_w(lang, "why") + "\n" + _items(out, sec.reasons))
        if sec.what_ifs:
            out.block(_w(lang, "what_if") + "\n" + _items(out, sec.what_ifs))
    elif sec.reasons:  # no table: the reasons are the answer; the first ones stay in the short form
        # while the prose fits (the lead already answers: none has to)
        shown = _fitting(sec.reasons[:2], room)
        room -= sum(len(x) for x in shown)
        if shown:
            out.block(_items(out, shown), "short")
        if sec.reasons[len(shown):]:
            out.block(_items(out, sec.reasons[len(shown):]))
    if sec.passages:
        # a forum post is never labelled as a doc: the heading names the kinds the passages cite
        cited = {c.kind for c in answer.citations if any(f"[{c.n}]" in p for p in sec.passages)}
        heading = _w(lang, "docs_forum" if "forum" in cited else "docs")
        # the passages are the short answer only when nothing else answers (a concept from the docs);
        # a troubleshooting answer leads with its causes and folds them
        passages_lead = not table and not sec.reasons and not sec.direct_answer and answer.intent != "troubleshoot"
        shown = _fitting(sec.passages, room) if passages_lead else []  # those that fit the prose budget
        if shown:
            out.block(heading + "\n" + _items(out, shown), "short")
        if sec.passages[len(shown):]:
            out.block(heading + "\n" + _items(out, sec.passages[len(shown):]))
    if sec.forum:
        lines = []
        for item in sec.forum:
            quote = _w(lang, "forum_quote", id=item.forum_id, quote=item.quote, n=item.citation)
            out.bind(quote, ["cite." + str(item.citation)] * len(numbers_in_text(quote)))
            lines.append(quote + out.bind(item.text))
        heading = _w(lang, "forum")
        out.block(heading + "\n" + "\n".join(lines))
    if sec.howto:
        from bot.howto import markdown

        out.block(_w(lang, "howto") + "\n\n" + markdown(sec.howto))
    if sec.questions:
        out.block(_w(lang, "questions") + "\n" + _items(out, sec.questions), "short")
    answer.full_text, answer.full_figures = out.form({"short", "folded"})
    answer.text, answer.figures = out.form({"short"})
    if answer.full_text != answer.text:  # say what is folded, so nobody takes the short form for all
        answer.text += "\n\n" + _w(lang, "folded")
    return answer


# --------------------------------------------------------------------------------------------
# How to run it (kept for the web page's panel; the generator is bot.howto)
# --------------------------------------------------------------------------------------------


def howto_snippet(strategy: str, resolved) -> str:
    """The FSDP2/DDP snippet and torchrun command for ``strategy`` on ``resolved``, as markdown."""
    from bot.howto import SnippetSpec, markdown, snippets

    spec = SnippetSpec(strategy=strategy, nodes=resolved.nodes, gpus_per_node=resolved.gpus_per_node,
                       precision=resolved.setup.precision,
                       checkpointing=bool(resolved.setup.activation_checkpointing))
    return markdown(snippets(spec))
