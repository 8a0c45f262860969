"""The per-GPU memory chart: an interactive Plotly figure for the page, a matplotlib one for the
PNG/SVG downloads, and a one-paragraph text summary (the chart's accessible description).

All three draw the rows of the answer's table (``sections.table``: each configuration the decision
weighed, a checkpointing or offload variant included, the recommended one starred as the table
stars it), each bar's breakdown read from the ``numbers`` keys its row is bound to; nothing is
computed here. Each bar's total is written beside its name, so no value label can sit on the
capacity line. Its words (legend, titles, the summary) are the message catalogs' ``page.chart.*``.
"""

from __future__ import annotations

from typing import Any

from bot.answer import Answer, TableRow
from bot.answer.catalog import wording, words_in
from bot.strategies import TRAINING_STRATEGIES

COMPONENTS = ("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib")
# Colour-blind-safe, and each at least 3:1 against white (WCAG non-text contrast).
COMPONENT_COLORS = ("#1d4ed8", "#b45309", "#047857", "#7e22ce", "#475569")
CAPACITY_COLOR = "#b91c1c"
OFF_SCALE_FACTOR = 4.0  # capacity above this many times the tallest bar is noted, not drawn


# The chart's words are the message catalogs' ``page.chart.*`` (both languages).
def _say(language: str, key: str, **values: Any) -> str:
    return wording(language, f"page.chart.{key}", **values)


def component_labels(language: str) -> tuple[str, ...]:
    """The breakdown's parts in ``COMPONENTS`` order (the legend)."""
    parts = words_in(language, "page.chart.part.")
    return tuple(parts[c] for c in COMPONENTS)


def chart_strategies(numbers: dict[str, Any]) -> list[str]:
    """Strategies with a memory breakdown in ``numbers``, in the canonical order."""
    return [s for s in TRAINING_STRATEGIES if f"memory.{s}.total_gib" in numbers]


def _calc_source(answer: Answer) -> str:
    calc = next((c for c in answer.citations if c.kind == "calc"), None)
    return f"[{calc.n}] {calc.title}" if calc else _say("en", "calculator")


def _prefix(row: TableRow) -> str:
    """The ``numbers`` key prefix of a table row's breakdown (``ckpt.memory.fsdp_full_shard.``):
    read from the key its total is bound to, so a variant's bar shows the variant's figures."""
    key = row.keys.get("total_gib", "")
    if key.endswith(".total_gib"):
        return key[: -len("total_gib")]
    return (f"{row.variant}." if row.variant else "") + f"memory.{row.strategy}."


def chart_rows(answer: Answer) -> list[dict[str, Any]]:
    """The bars: one per row of the answer's table (the configurations the decision weighed,
    variants such as checkpointing included), the recommended one marked as the table marks it.
    Answers without a table (older pipeline) get one bar per strategy in ``numbers``."""
    numbers = answer.numbers
    lang = "zh" if answer.language == "zh" else "en"
    rows = []
    for row in answer.sections.table:
        prefix = _prefix(row)
        if row.total_gib is None and f"{prefix}total_gib" not in numbers:
            continue
        comps = {c: float(numbers.get(f"{prefix}{c}", 0.0) or 0.0) for c in COMPONENTS}
        total = row.total_gib if row.total_gib is not None else numbers.get(f"{prefix}total_gib")
        usable = row.usable_gib if row.usable_gib is not None else numbers.get(f"{prefix}usable_gib")
        rows.append({"strategy": row.strategy, "variant": row.variant, "label": row.label,
                     "comps": comps, "total": float(total if total is not None else sum(comps.values())),
                     "usable": float(usable) if usable else None, "fits": row.fits, "chosen": row.chosen})
    if rows:
        return rows
    chosen = answer.recommendation.strategy
    for s in chart_strategies(numbers):
        comps = {c: float(numbers.get(f"memory.{s}.{c}", 0.0) or 0.0) for c in COMPONENTS}
        usable = numbers.get(f"memory.{s}.usable_gib")
        fits = numbers.get(f"memory.{s}.fits")
        rows.append({"strategy": s, "variant": "", "label": words_in(lang, "page.chart.short.").get(s, s).replace("\n", " "),
                     "comps": comps, "total": float(numbers.get(f"memory.{s}.total_gib", sum(comps.values()))),
                     "usable": float(usable) if usable else None,
                     "fits": None if fits is None else bool(fits), "chosen": s == chosen})
    return rows


def _data(answer: Answer) -> dict | None:
    rows = chart_rows(answer)
    if not rows:
        return None
    lang = "zh" if answer.language == "zh" else "en"
    capacity = answer.setup.get("gpu_memory_gb")
    usable = next((r["usable"] for r in rows if r["usable"]), None)
    return {"lang": lang, "rows": rows, "strategies": [r["strategy"] for r in rows],
            "comps": {c: [r["comps"][c] for r in rows] for c in COMPONENTS},
            "totals": [r["total"] for r in rows],
            "capacity": float(capacity) if capacity else None, "usable": usable}


def _name(row: dict, sep: str) -> str:
    """A bar's name on two or more lines: the table's label broken before each ``+``."""
    return row["label"].replace(" + ", f"{sep}+ ")+ (" ★" if row["chosen"] else "")


def _tick(d: dict, i: int, s: str, sep: str) -> str:
    row = d["rows"][i]
    return f"{_name(row, sep)}{sep}{row['total']:.1f} GiB"


def chart_summary(answer: Answer) -> str:
    """The chart in words (its accessible description, shown under it), from the same rows."""
    d = _data(answer)
    if d is None:
        return ""
    lang = d["lang"]
    mark = _say(lang, "recommended")
    text = _say(lang, "bar_sep").join(f"{r['label']}{mark if r['chosen'] else ''} {r['total']:.1f} GiB" for r in d["rows"])
    cap = (_say(lang, "summary_cap", usable=f"{d['usable']:.1f}", capacity=f"{d['capacity']:g}")
           if d["usable"] and d["capacity"] else "")
    return _say(lang, "summary", bars=text, cap=cap)


# Widths of 12 px tick text in the page's fonts (DejaVu Sans / Noto Sans CJK SC), measured in
# Chromium: "+ checkpointing ★" is 104 px, "FSDP 梯度分片 ★" 95 px.
TICK_PX_LATIN, TICK_PX_WIDE = 6.3, 12.2
TICK_GAP_PX = 16  # the margin's own 10 px and Plotly's gap between a label and the axis


def tick_margin(ticks: list[str]) -> int:
    """The chart's left margin in px: room for the longest line of any bar's name."""
    def width(line: str) -> float:
        return sum(TICK_PX_WIDE if ord(ch) > 0x2000 else TICK_PX_LATIN for ch in line if ch != "\u200b")

    lines = [line for tick in ticks for line in tick.split("<br>")]
    return int(TICK_GAP_PX + max((width(line) for line in lines), default=0.0) + 0.5)


def plotly_figure(answer: Answer):
    """Stacked horizontal bars, one per table row (top to bottom in the table's order), with
    hover (component, GiB, source) and the capacity lines. Horizontal so that each bar's name
    and total read on a phone as on a desktop (vertical bars' names overlapped at 390 px).

    Built as plain data and handed to Plotly unvalidated: every value here is ours, and Plotly's
    per-property validation cost ~13 ms per answer on the server (now ~1 ms)."""
    d = _data(answer)
    if d is None:
        return None
    import plotly.graph_objects as go

    lang = d["lang"]
    # (the hover's source line has always been English; zh.yaml has it for when it follows the answer)
    source = f"{_say('en', 'source')}: {_calc_source(answer)}"
    # Category names must be unique: two rows with the same name and total would share a bar.
    ticks = []
    for i, s in enumerate(d["strategies"]):
        tick = _tick(d, i, s, "<br>")
        while tick in ticks:
            tick += "\u200b"
        ticks.append(tick)
    data: list[dict[str, Any]] = [
        {"type": "bar", "orientation": "h", "y": ticks, "x": d["comps"][comp], "name": name,
         "marker": {"color": color},
         "hovertemplate": f"%{{y}}<br>{name}: %{{x:.2f}} GiB<br>{source}<extra></extra>"}
        for comp, name, color in zip(COMPONENTS, component_labels(lang), COMPONENT_COLORS, strict=True)]
    shapes: list[dict[str, Any]] = []
    top = max(d["totals"])
    cap, usable = d["capacity"], d["usable"]
    if cap and cap <= OFF_SCALE_FACTOR * top:
        shapes.append({"type": "line", "yref": "y domain", "y0": 0, "y1": 1, "xref": "x", "x0": cap, "x1": cap,
                       "line": {"color": CAPACITY_COLOR, "dash": "dash", "width": 2}})
        data.append({"type": "scatter", "y": ticks, "x": [cap] * len(ticks), "mode": "lines", "hoverinfo": "skip",
                     "line": {"dash": "dash", "color": CAPACITY_COLOR, "width": 2},
                     "name": _say(lang, "capacity", capacity=f"{cap:g}")})
        if usable and usable < cap:
            data.append({"type": "scatter", "y": ticks, "x": [usable] * len(ticks), "mode": "lines",
                         "hoverinfo": "skip", "line": {"dash": "dot", "color": CAPACITY_COLOR, "width": 1.5},
                         "name": _say(lang, "usable", usable=f"{usable:.1f}")})
        top = max(top, cap)
    title = _say(lang, "title")
    layout = {
        "barmode": "stack", "height": 150 + 62 * len(ticks),
        # Left-aligned above the plot, the toolbar stacked vertically at the right: a phone's
        # narrow chart no longer puts the toolbar over the title.
        "title": {"text": title, "font": {"size": 15}, "x": 0, "xref": "container", "xanchor": "left",
                  "pad": {"l": 8}},
        "modebar": {"orientation": "v"},
        "margin": {"l": tick_margin(ticks), "r": 36, "t": 44, "b": 10},
        "font": {"size": 13, "color": "#1f2937", "family": "Noto Sans CJK SC, DejaVu Sans, sans-serif"},
        # (no axis title: the unit is in the chart's title and on every bar; a title there sat
        # under the legend on a short chart)
        "xaxis": {"range": [0, top * 1.08],
                  "rangemode": "tozero", "tickfont": {"size": 12}},
        # The left margin is set from the names (``tick_margin``), not by Plotly's automargin,
        # which measures the drawn labels and then draws the whole chart again: half of the
        # chart's main-thread time in the browser (51 -> 25 ms per draw, measured in Chromium).
        "yaxis": {"tickfont": {"size": 12}, "autorange": "reversed", "automargin": False},
        "legend": {"orientation": "h", "y": -0.12, "yanchor": "top", "x": 0, "font": {"size": 12}},
        "plot_bgcolor": "white", "paper_bgcolor": "white",
    }
    if shapes:
        layout["shapes"] = shapes
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def cjk_font() -> str | None:
    """A matplotlib font family that has Chinese glyphs (Debian's fonts-noto-cjk), if installed."""
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    for preferred in ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans SC", "WenQuanYi Zen Hei",
                      "Source Han Sans SC", "SimHei", "Microsoft YaHei"):
        if preferred in names:
            return preferred
    return next((n for n in sorted(names) if "CJK" in n), None)


def memory_figure(answer: Answer):
    """The same chart as a matplotlib Figure (for the PNG/SVG downloads); ``None`` when the answer
    has no memory numbers (out of scope, missing setup)."""
    from matplotlib.figure import Figure

    d = _data(answer)
    if d is None:
        return None
    font = cjk_font()
    lang = d["lang"] if font or d["lang"] == "en" else "en"
    d = {**d, "lang": lang}
    rc = {"family": [font, "DejaVu Sans"]} if font else {}
    fig = Figure(figsize=(7.2, 4.6), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    xs = range(len(d["strategies"]))
    bottoms = [0.0] * len(xs)
    for comp, name, color in zip(COMPONENTS, component_labels(lang), COMPONENT_COLORS, strict=True):
        values = d["comps"][comp]
        ax.bar(xs, values, bottom=bottoms, color=color, label=name, width=0.62)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    cap, usable = d["capacity"], d["usable"]
    off_scale = cap is not None and cap > OFF_SCALE_FACTOR * max(d["totals"])
    top = (max(d["totals"]) if off_scale or cap is None else max(*d["totals"], cap)) * 1.12 or 1.0
    if cap and off_scale:
        note = _say(lang, "off_scale", capacity=f"{cap:g}")
        ax.text(0.99, 0.97, note, transform=ax.transAxes, ha="right", va="top", fontsize=10,
                color=CAPACITY_COLOR, fontdict=rc)
    elif cap:
        ax.axhline(cap, color=CAPACITY_COLOR, linestyle="--", linewidth=1.4,
                   label=_say(lang, "capacity", capacity=f"{cap:g}"))
        if usable and usable < cap:
            ax.axhline(usable, color=CAPACITY_COLOR, linestyle=":", linewidth=1.0,
                       label=_say(lang, "usable", usable=f"{usable:.1f}"))
    ticks = [_tick(d, i, s, "\n") for i, s in enumerate(d["strategies"])]
    ax.set_xticks(list(xs), ticks, fontsize=10, fontfamily=rc.get("family"))
    ax.tick_params(axis="y", labelsize=10)
    ax.set_ylim(0, top)  # axis from zero: bar heights compare honestly
    ax.set_ylabel(_say(lang, "ylabel"), fontdict=rc, fontsize=11)
    title = _say(lang, "figure_title")
    ax.set_title(title, fontsize=12, fontdict=rc)
    ax.spines[["top", "right"]].set_visible(False)
    fig.legend(loc="outside lower center", ncol=4, frameon=False,
               prop={"family": rc["family"], "size": 9} if rc else {"size": 9})
    return fig


def compare_rows(before: Answer, after: Answer, names: tuple[str, str]) -> list[dict[str, Any]]:
    """Both answers' table rows, each named after its setup (``names``), for one chart."""
    rows = []
    for name, answer in zip(names, (before, after), strict=True):
        capacity = answer.setup.get("gpu_memory_gb")
        for row in chart_rows(answer):
            rows.append({**row, "label": f"{name}: {row['label']}", "capacity": float(capacity) if capacity else None})
    return rows


def compare_summary(before: Answer, after: Answer, names: tuple[str, str]) -> str:
    """The comparison chart in words."""
    lang = after.language
    mark = _say(lang, "recommended")
    parts = []
    for name, answer in zip(names, (before, after), strict=True):
        rows = chart_rows(answer)
        cap = answer.setup.get("gpu_memory_gb")
        text = _say(lang, "bar_sep").join(f"{r['label']}{mark if r['chosen'] else ''} {r['total']:.1f} GiB" for r in rows)
        card = _say(lang, "compare_card", capacity=f"{cap:g}") if cap else ""
        parts.append(_say(lang, "compare_setup", name=name, card=card, bars=text))
    return _say(lang, "compare_lead") + "\n\n".join(parts)


def compare_figure(before: Answer, after: Answer, names: tuple[str, str]):
    """Two setups side by side on one chart: each one's rows (its recommended one starred),
    the bars of the first above those of the second, each row's own GPU capacity marked on it
    (the two setups may use different cards)."""
    import plotly.graph_objects as go

    rows = compare_rows(before, after, names)
    if not rows:
        return None
    lang = "zh" if after.language == "zh" else "en"
    ticks = []
    for r in rows:
        tick = f"{_name(r, '<br>')}<br>{r['total']:.1f} GiB"
        while tick in ticks:
            tick += "\u200b"
        ticks.append(tick)
    groups = [r["label"].split(":")[0] for r in rows]
    data: list[dict[str, Any]] = [
        {"type": "bar", "orientation": "h", "y": ticks, "x": [r["comps"][comp] for r in rows], "name": name,
         "marker": {"color": color}, "hovertemplate": f"%{{y}}<br>{name}: %{{x:.2f}} GiB<extra></extra>"}
        for comp, name, color in zip(COMPONENTS, component_labels(lang), COMPONENT_COLORS, strict=True)]
    caps = [r["capacity"] for r in rows]
    if any(caps):
        data.append({"type": "scatter", "mode": "markers", "y": ticks, "x": caps, "hoverinfo": "skip",
                     "marker": {"symbol": "line-ns-open", "size": 26, "color": CAPACITY_COLOR, "line": {"width": 3}},
                     "name": _say(lang, "compare_capacity")})
    shapes = []
    split = next((i for i in range(1, len(groups)) if groups[i] != groups[i - 1]), None)
    if split is not None:
        shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": split - 0.5,
                       "y1": split - 0.5, "line": {"color": "#94a3b8", "width": 1}})
    top = max([r["total"] for r in rows] + [c for c in caps if c])
    title = _say(lang, "compare_title")
    layout = {
        "barmode": "stack", "height": 150 + 62 * len(ticks),
        "title": {"text": title, "font": {"size": 15}, "x": 0, "xref": "container", "xanchor": "left",
                  "pad": {"l": 8}},
        "modebar": {"orientation": "v"}, "margin": {"l": 10, "r": 36, "t": 44, "b": 10},
        "font": {"size": 13, "color": "#1f2937", "family": "Noto Sans CJK SC, DejaVu Sans, sans-serif"},
        # (no axis title: the unit is in the chart's title and on every bar; a title there sat
        # under the legend on a short chart)
        "xaxis": {"range": [0, top * 1.08],
                  "tickfont": {"size": 12}},
        # The left margin is set from the names (``tick_margin``), not by Plotly's automargin,
        # which measures the drawn labels and then draws the whole chart again: half of the
        # chart's main-thread time in the browser (51 -> 25 ms per draw, measured in Chromium).
        "yaxis": {"tickfont": {"size": 12}, "autorange": "reversed", "automargin": False},
        "legend": {"orientation": "h", "y": -0.12, "yanchor": "top", "x": 0, "font": {"size": 12}},
        "plot_bgcolor": "white", "paper_bgcolor": "white", "shapes": shapes,
    }
    return go.Figure({"data": data, "layout": layout}, _validate=False)
