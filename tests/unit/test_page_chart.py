"""The page's chart draws the answer's table: the same rows, the same recommended row (with its
checkpointing or offload variant), and a text description from the same data (issue 27)."""

from __future__ import annotations

import pytest

from bot.answer import Answer, Recommendation, Sections, TableRow
from bot.surfaces.web import chart

COMPONENTS = ("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib")


def _row(strategy: str, variant: str, label: str, parts: tuple, usable: float, chosen: bool = False):
    prefix = (f"{variant}." if variant else "") + f"memory.{strategy}."
    numbers = {f"{prefix}{c}": v for c, v in zip(COMPONENTS, parts, strict=True)}
    total = round(sum(parts), 2)
    numbers[f"{prefix}total_gib"] = total
    row = TableRow(strategy=strategy, variant=variant, label=label, total_gib=total, usable_gib=usable,
                   fits=total <= usable, chosen=chosen, keys={"total_gib": f"{prefix}total_gib"})
    return row, numbers


def _answer(case: str, language: str = "en") -> Answer:
    """Three recommendations the chart used to draw wrongly: checkpointing, offload with
    checkpointing, and a plain strategy next to a variant of another."""
    specs = {
        # (strategy, variant, label, breakdown, chosen)
        "ckpt": [("ddp", "", "DDP", (24.0, 24.0, 96.0, 150.0, 17.0), False),
                 ("fsdp_full_shard", "", "FSDP full", (3.0, 3.0, 12.0, 80.0, 4.0), False),
                 ("fsdp_full_shard", "ckpt", "FSDP full + checkpointing", (3.0, 3.0, 12.0, 8.0, 4.0), True)],
        "offload_ckpt": [("ddp", "", "DDP", (13.0, 13.0, 50.0, 60.0, 6.0), False),
                         ("fsdp_full_shard_offload", "", "FSDP offload", (0.5, 0.5, 0.0, 60.0, 2.0), False),
                         ("fsdp_full_shard_offload", "ckpt", "FSDP offload + checkpointing",
                          (0.5, 0.5, 0.0, 6.0, 2.0), True)],
        "mixed": [("ddp", "", "DDP", (13.0, 13.0, 50.0, 6.0, 6.0), False),
                  ("fsdp_shard_grad_op", "", "FSDP grad-op", (13.0, 2.0, 6.0, 6.0, 3.0), True),
                  ("ddp", "ckpt", "DDP + checkpointing", (13.0, 13.0, 50.0, 1.0, 6.0), False)],
    }[case]
    rows, numbers = [], {}
    for strategy, variant, label, parts, chosen in specs:
        row, nums = _row(strategy, variant, label, parts, 38.0, chosen)
        rows.append(row)
        numbers.update(nums)
    chosen_row = next(r for r in rows if r.chosen)
    return Answer(language=language, setup={"gpu_memory_gb": 40.0, "gpu_count": 8},
                  recommendation=Recommendation(strategy=chosen_row.strategy), numbers=numbers,
                  sections=Sections(headline="h", table=rows))


@pytest.mark.parametrize("case", ["ckpt", "offload_ckpt", "mixed"])
def test_the_chart_has_the_table_rows_and_stars_the_recommended_one(case):
    answer = _answer(case)
    fig = chart.plotly_figure(answer)
    names = list(fig.data[0].y)
    assert len(names) == len(answer.sections.table)
    for name, row in zip(names, answer.sections.table, strict=True):
        assert name.replace("<br>", " ").startswith(row.label), (name, row.label)
        assert f"{row.total_gib:.1f} GiB" in name
        assert ("★" in name) == row.chosen
    # The starred bar is the recommended row's own figures, under the capacity line.
    starred = next(i for i, n in enumerate(names) if "★" in n)
    height = sum(trace.x[starred] for trace in fig.data[:5])
    chosen = next(r for r in answer.sections.table if r.chosen)
    assert height == pytest.approx(chosen.total_gib)
    assert height < 40.0


@pytest.mark.parametrize("case", ["ckpt", "offload_ckpt", "mixed"])
def test_the_chart_text_names_the_recommended_row(case):
    answer = _answer(case)
    chosen = next(r for r in answer.sections.table if r.chosen)
    text = chart.chart_summary(answer)
    assert f"{chosen.label} (recommended) {chosen.total_gib:.1f} GiB" in text
    assert text.count("(recommended)") == 1
    assert all(r.label in text for r in answer.sections.table)


def test_the_downloaded_chart_draws_the_same_rows():
    answer = _answer("ckpt")
    ax = chart.memory_figure(answer).axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert len(ticks) == 3 and "★" in ticks[2] and "checkpointing" in ticks[2]
    heights = [sum(c.patches[i].get_height() for c in ax.containers) for i in range(3)]
    assert heights[2] == pytest.approx(answer.sections.table[2].total_gib)


def test_chinese_text_uses_the_table_labels():
    answer = _answer("ckpt", language="zh")
    assert "FSDP full + checkpointing（推荐） 30.0 GiB" in chart.chart_summary(answer)


def test_two_setups_compared_on_one_chart():
    before, after = _answer("ckpt"), _answer("mixed")
    fig = chart.compare_figure(before, after, ("A", "B"))
    names = list(fig.data[0].y)
    assert len(names) == 6 and all(n.startswith("A: ") for n in names[:3]) and all(n.startswith("B: ") for n in names[3:])
    assert sum("★" in n for n in names) == 2  # each setup's own pick
    text = chart.compare_summary(before, after, ("A", "B"))
    assert "A (a 40 GiB card): " in text and "FSDP full + checkpointing (recommended) 30.0 GiB" in text
    assert "FSDP grad-op (recommended)" in text
