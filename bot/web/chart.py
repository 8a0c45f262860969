"""The per-GPU memory chart: an interactive Plotly figure for the page, a matplotlib one for the
PNG/SVG downloads, and a one-paragraph text summary (the chart's accessible description).

All three read the answer's ``numbers`` (``memory.<strategy>.<component>``) and the GPU capacity
from its setup; nothing is computed here. Each bar's total is written under its name on the x
axis, so no value label can sit on the capacity line.
"""

from __future__ import annotations

from typing import Any

from bot.answer import Answer
from bot.strategies import TRAINING_STRATEGIES

COMPONENTS = ("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib")
COMPONENT_LABELS = {
    "en": ("Parameters", "Gradients", "Optimizer state", "Activations", "Buffers"),
    "zh": ("参数", "梯度", "优化器状态", "激活值", "缓冲区"),
}
# Colour-blind-safe, and each at least 3:1 against white (WCAG non-text contrast).
COMPONENT_COLORS = ("#1d4ed8", "#b45309", "#047857", "#7e22ce", "#475569")
CAPACITY_COLOR = "#b91c1c"
OFF_SCALE_FACTOR = 4.0  # capacity above this many times the tallest bar is noted, not drawn
SHORT_LABELS = {
    "en": {"ddp": "DDP", "fsdp_shard_grad_op": "FSDP\ngrad-op", "fsdp_full_shard": "FSDP\nfull shard",
           "fsdp_hybrid_shard": "HSDP\nhybrid", "fsdp_full_shard_offload": "FSDP full\n+ offload"},
    "zh": {"ddp": "DDP", "fsdp_shard_grad_op": "FSDP\n梯度分片", "fsdp_full_shard": "FSDP\n全分片",
           "fsdp_hybrid_shard": "HSDP\n混合分片", "fsdp_full_shard_offload": "FSDP 全分片\n+CPU 卸载"},
}


def chart_strategies(numbers: dict[str, Any]) -> list[str]:
    """Strategies with a memory breakdown in ``numbers``, in the canonical order."""
    return [s for s in TRAINING_STRATEGIES if f"memory.{s}.total_gib" in numbers]


def _calc_source(answer: Answer) -> str:
    calc = next((c for c in answer.citations if c.kind == "calc"), None)
    return f"[{calc.n}] {calc.title}" if calc else "calculator"


def _data(answer: Answer) -> dict | None:
    numbers = answer.numbers
    strategies = chart_strategies(numbers)
    if not strategies:
        return None
    lang = "zh" if answer.language == "zh" else "en"
    comps = {c: [float(numbers.get(f"memory.{s}.{c}", 0.0) or 0.0) for s in strategies] for c in COMPONENTS}
    totals = [float(numbers.get(f"memory.{s}.total_gib", sum(comps[c][i] for c in COMPONENTS)))
              for i, s in enumerate(strategies)]
    capacity = answer.setup.get("gpu_memory_gb")
    usable = numbers.get(f"memory.{strategies[0]}.usable_gib")
    return {"lang": lang, "strategies": strategies, "comps": comps, "totals": totals,
            "capacity": float(capacity) if capacity else None, "usable": float(usable) if usable else None,
            "chosen": answer.recommendation.strategy}


def _tick(d: dict, i: int, s: str, sep: str) -> str:
    name = SHORT_LABELS[d["lang"]].get(s, s).replace("\n", sep) + (" ★" if s == d["chosen"] else "")
    return f"{name}{sep}{d['totals'][i]:.1f} GiB"


def chart_summary(answer: Answer) -> str:
    """The chart in words (its accessible description, shown under it)."""
    d = _data(answer)
    if d is None:
        return ""
    zh = d["lang"] == "zh"
    bars = "; ".join(f"{SHORT_LABELS[d['lang']].get(s, s).replace(chr(10), ' ')}{' (推荐)' if zh and s == d['chosen'] else ''}"
                     f"{' (recommended)' if not zh and s == d['chosen'] else ''} {t:.1f} GiB"
                     for s, t in zip(d["strategies"], d["totals"], strict=True))
    if zh:
        cap = f"；可用显存 {d['usable']:.1f} GiB（显存容量 {d['capacity']:g} GiB）" if d["usable"] and d["capacity"] else ""
        return f"每卡显存：{bars}{cap}。"
    cap = (f"; usable {d['usable']:.1f} GiB of the {d['capacity']:g} GiB card" if d["usable"] and d["capacity"]
           else "")
    return f"Per-GPU memory: {bars}{cap}."


def plotly_figure(answer: Answer):
    """Stacked bars per strategy with hover (component, GiB, source) and the capacity lines.

    Built as plain data and handed to Plotly unvalidated: every value here is ours, and Plotly's
    per-property validation cost ~13 ms per answer on the server (now ~1 ms)."""
    d = _data(answer)
    if d is None:
        return None
    import plotly.graph_objects as go

    lang = d["lang"]
    source = _calc_source(answer)
    ticks = [_tick(d, i, s, "<br>") for i, s in enumerate(d["strategies"])]
    data: list[dict[str, Any]] = [
        {"type": "bar", "x": ticks, "y": d["comps"][comp], "name": name, "marker": {"color": color},
         "hovertemplate": f"%{{x}}<br>{name}: %{{y:.2f}} GiB<br>source: {source}<extra></extra>"}
        for comp, name, color in zip(COMPONENTS, COMPONENT_LABELS[lang], COMPONENT_COLORS, strict=True)]
    shapes: list[dict[str, Any]] = []
    top = max(d["totals"])
    cap, usable = d["capacity"], d["usable"]
    if cap and cap <= OFF_SCALE_FACTOR * top:
        shapes.append({"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": cap, "y1": cap,
                       "line": {"color": CAPACITY_COLOR, "dash": "dash", "width": 2}})
        data.append({"type": "scatter", "x": ticks, "y": [cap] * len(ticks), "mode": "lines", "hoverinfo": "skip",
                     "line": {"dash": "dash", "color": CAPACITY_COLOR, "width": 2},
                     "name": f"显存容量 {cap:g} GiB" if lang == "zh" else f"GPU capacity {cap:g} GiB"})
        if usable and usable < cap:
            data.append({"type": "scatter", "x": ticks, "y": [usable] * len(ticks), "mode": "lines",
                         "hoverinfo": "skip", "line": {"dash": "dot", "color": CAPACITY_COLOR, "width": 1.5},
                         "name": f"可用 {usable:.1f} GiB" if lang == "zh" else f"usable {usable:.1f} GiB"})
        top = max(top, cap)
    title = "每卡显存（★ 推荐）" if lang == "zh" else "Per-GPU memory by strategy (★ recommended)"
    layout = {
        "barmode": "stack", "title": {"text": title, "font": {"size": 16}}, "height": 430,
        "margin": {"l": 60, "r": 10, "t": 50, "b": 10},
        "font": {"size": 13, "color": "#1f2937", "family": "Noto Sans CJK SC, DejaVu Sans, sans-serif"},
        "yaxis": {"title": {"text": "每卡 GiB" if lang == "zh" else "GiB per GPU"}, "range": [0, top * 1.12],
                  "rangemode": "tozero"},
        "xaxis": {"tickfont": {"size": 12}, "tickangle": 0},
        "legend": {"orientation": "h", "y": -0.22, "x": 0, "font": {"size": 12}},
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
    for comp, name, color in zip(COMPONENTS, COMPONENT_LABELS[lang], COMPONENT_COLORS, strict=True):
        values = d["comps"][comp]
        ax.bar(xs, values, bottom=bottoms, color=color, label=name, width=0.62)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    cap, usable = d["capacity"], d["usable"]
    off_scale = cap is not None and cap > OFF_SCALE_FACTOR * max(d["totals"])
    top = (max(d["totals"]) if off_scale or cap is None else max(*d["totals"], cap)) * 1.12 or 1.0
    if cap and off_scale:
        note = (f"显存容量 {cap:g} GiB，远高于此图范围" if lang == "zh" else f"GPU capacity {cap:g} GiB: far above this scale")
        ax.text(0.99, 0.97, note, transform=ax.transAxes, ha="right", va="top", fontsize=10,
                color=CAPACITY_COLOR, fontdict=rc)
    elif cap:
        ax.axhline(cap, color=CAPACITY_COLOR, linestyle="--", linewidth=1.4,
                   label=f"显存容量 {cap:g} GiB" if lang == "zh" else f"GPU capacity {cap:g} GiB")
        if usable and usable < cap:
            ax.axhline(usable, color=CAPACITY_COLOR, linestyle=":", linewidth=1.0,
                       label=f"可用 {usable:.1f} GiB" if lang == "zh" else f"usable {usable:.1f} GiB")
    ticks = [_tick(d, i, s, "\n") for i, s in enumerate(d["strategies"])]
    ax.set_xticks(list(xs), ticks, fontsize=10, fontfamily=rc.get("family"))
    ax.tick_params(axis="y", labelsize=10)
    ax.set_ylim(0, top)  # axis from zero: bar heights compare honestly
    ax.set_ylabel("GiB per GPU" if lang == "en" else "每卡 GiB", fontdict=rc, fontsize=11)
    title = "每卡显存（★ 推荐）" if lang == "zh" else "Per-GPU memory by strategy (★ recommended)"
    ax.set_title(title, fontsize=12, fontdict=rc)
    ax.spines[["top", "right"]].set_visible(False)
    fig.legend(loc="outside lower center", ncol=4, frameon=False,
               prop={"family": rc["family"], "size": 9} if rc else {"size": 9})
    return fig
