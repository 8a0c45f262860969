"""Turn a :class:`~evals.harness.RunResult` into the summary dict (``summary.json``), a markdown
report (``report.md``) and a rich terminal summary. One summary dict feeds all three."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from evals.baselines import BASELINES, LABELS
from evals.harness import CaseResult, RunResult
from evals.metrics import METRIC_NAMES


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _rate(passed: int, total: int) -> float | None:
    return round(passed / total, 4) if total else None


def summarize(run: RunResult, min_pass: float) -> dict[str, Any]:
    """Everything the report shows, as plain JSON-able data."""
    results = run.results
    passed = sum(r.passed for r in results)
    metrics: dict[str, dict[str, Any]] = {}
    for name in METRIC_NAMES:
        outcomes = [m.passed for r in results if (m := r.metric(name)) is not None]
        ok, bad = outcomes.count(True), outcomes.count(False)
        metrics[name] = {"passed": ok, "failed": bad, "not_applicable": len(results) - ok - bad,
                         "rate": _rate(ok, ok + bad)}
    errors = sum(r.error is not None for r in results)

    strategy_cases = [r for r in results if r.case.expect.strategy is not None]
    bot_ok = sum(1 for r in strategy_cases if (m := r.metric("strategy")) is not None and m.passed)
    baselines: dict[str, Any] = {"bot": {"label": "shardwise", "strategy_rate": _rate(bot_ok, len(strategy_cases)),
                                         "strategy_passed": bot_ok, "pass_rate": round(run.pass_rate, 4)}}
    if run.baselines_on:
        for name in BASELINES:
            ok = sum(1 for r in strategy_cases if r.baselines.get(name) in (r.case.expect.strategy or []))
            baselines[name] = {"label": LABELS[name], "strategy_rate": _rate(ok, len(strategy_cases)),
                               "strategy_passed": ok, "pass_rate": None}

    by_language: dict[str, dict[str, Any]] = {}
    for r in results:
        entry = by_language.setdefault(r.case.language, {"cases": 0, "passed": 0})
        entry["cases"] += 1
        entry["passed"] += r.passed
    by_tag: dict[str, dict[str, Any]] = {}
    for r in results:
        for tag in r.case.tags:
            entry = by_tag.setdefault(tag, {"cases": 0, "passed": 0})
            entry["cases"] += 1
            entry["passed"] += r.passed
    for entry in (*by_language.values(), *by_tag.values()):
        entry["rate"] = _rate(entry["passed"], entry["cases"])

    latencies = [r.latency_s for r in results]
    return {
        "cases_file": run.cases_file,
        "cases": len(results),
        "passed": passed,
        "pass_rate": round(run.pass_rate, 4),
        "min_pass": min_pass,
        "gate": "pass" if run.pass_rate >= min_pass else "fail",
        "errors": errors,
        "seconds": round(run.seconds, 3),
        "latency_s": {"p50": round(_percentile(latencies, 0.5), 4), "p95": round(_percentile(latencies, 0.95), 4),
                      "max": round(max(latencies, default=0.0), 4),
                      "mean": round(statistics.fmean(latencies), 4) if latencies else 0.0},
        "metrics": metrics,
        "strategy_cases": len(strategy_cases),
        "baselines": baselines,
        "by_language": by_language,
        "by_tag": dict(sorted(by_tag.items())),
        "failures": [{"id": r.case.id, "metric": f.name, "detail": f.detail}
                     for r in results for f in r.failures],
        "results": [_case_entry(r) for r in results],
    }


def _case_entry(r: CaseResult) -> dict[str, Any]:
    return {
        "id": r.case.id,
        "language": r.case.language,
        "passed": r.passed,
        "latency_s": round(r.latency_s, 4),
        "strategy": r.answer.recommendation.strategy if r.answer is not None else None,
        "expected_strategy": r.case.expect.strategy,
        "baselines": r.baselines,
        "error": r.error,
        "metrics": {m.name: {"passed": m.passed, "detail": m.detail} for m in r.metrics},
    }


def write_outputs(summary: dict[str, Any], out_dir: Path | str) -> tuple[Path, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary_path, report_path = out / "summary.json", out / "report.md"
    summary_path.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    report_path.write_text(markdown_report(summary), encoding="utf-8")
    return summary_path, report_path


def _pct(rate: float | None) -> str:
    return "N/A" if rate is None else f"{rate:.0%}"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_report(s: dict[str, Any]) -> str:
    lines = [
        "# shardwise eval report",
        "",
        f"Cases: `{s['cases_file']}`: **{s['passed']}/{s['cases']} passed ({_pct(s['pass_rate'])})**; "
        f"gate `--min-pass {s['min_pass']}`: **{s['gate']}**. "
        f"Latency per answer: p50 {s['latency_s']['p50'] * 1000:.0f} ms, p95 {s['latency_s']['p95'] * 1000:.0f} ms, "
        f"max {s['latency_s']['max'] * 1000:.0f} ms; whole run {s['seconds']:.1f} s.",
        "",
        "## Bot vs baselines",
        "",
        f"Strategy accuracy is over the {s['strategy_cases']} cases with a `strategy` expectation. "
        "Baselines only pick a strategy, so every other metric is N/A for them.",
        "",
        "| | strategy | " + " | ".join(n for n in METRIC_NAMES if n != "strategy") + " | whole case |",
        "|---|---|" + "---|" * (len(METRIC_NAMES) - 1) + "---|",
    ]
    bot_cells = [_pct(s["metrics"][n]["rate"]) for n in METRIC_NAMES if n != "strategy"]
    lines.append(f"| **shardwise** | **{_pct(s['baselines']['bot']['strategy_rate'])}** | "
                 + " | ".join(bot_cells) + f" | {_pct(s['pass_rate'])} |")
    for name in BASELINES:
        if name in s["baselines"]:
            b = s["baselines"][name]
            lines.append(f"| {b['label']} | {_pct(b['strategy_rate'])} | "
                         + " | ".join("N/A" for n in METRIC_NAMES if n != "strategy") + " | N/A |")
    lines += ["", "## Metrics", "", "| metric | passed | failed | n/a | rate |", "|---|---|---|---|---|"]
    for name, m in s["metrics"].items():
        lines.append(f"| {name} | {m['passed']} | {m['failed']} | {m['not_applicable']} | {_pct(m['rate'])} |")
    lines += ["", "| language | cases | passed | rate |", "|---|---|---|---|"]
    for lang, entry in sorted(s["by_language"].items()):
        lines.append(f"| {lang} | {entry['cases']} | {entry['passed']} | {_pct(entry['rate'])} |")
    if s.get("by_tag"):
        lines += ["", "| case family (tag) | cases | passed | rate |", "|---|---|---|---|"]
        for tag, entry in s["by_tag"].items():
            lines.append(f"| {tag} | {entry['cases']} | {entry['passed']} | {_pct(entry['rate'])} |")

    lines += ["", "## Failures (expected vs got)", ""]
    if not s["failures"]:
        lines.append("None.")
    else:
        lines += ["| case | metric | expected vs got |", "|---|---|---|"]
        for f in s["failures"]:
            lines.append(f"| `{f['id']}` | {f['metric']} | {_md_cell(f['detail'])} |")

    lines += ["", "## Every case", "", "| case | lang | pass | strategy | expected | latency ms |",
              "|---|---|---|---|---|---|"]
    for r in s["results"]:
        expected = ", ".join(r["expected_strategy"]) if r["expected_strategy"] else ""
        lines.append(f"| `{r['id']}` | {r['language']} | {'yes' if r['passed'] else '**no**'} | "
                     f"{r['strategy'] or '(error)'} | {expected} | {r['latency_s'] * 1000:.0f} |")
    return "\n".join(lines) + "\n"


def print_summary(s: dict[str, Any], console: Console | None = None, max_failures: int = 40) -> None:
    console = console or Console()
    table = Table(title="Bot vs baselines (strategy accuracy; other metrics N/A for baselines)")
    table.add_column("")
    table.add_column("strategy", justify="right")
    table.add_column("whole case", justify="right")
    table.add_row("[bold]shardwise[/bold]", f"[bold]{_pct(s['baselines']['bot']['strategy_rate'])}[/bold]",
                  _pct(s["pass_rate"]))
    for name in BASELINES:
        if name in s["baselines"]:
            b = s["baselines"][name]
            table.add_row(b["label"], _pct(b["strategy_rate"]), "N/A")
    console.print(table)

    metrics = Table(title="Metrics")
    for column in ("metric", "passed", "failed", "n/a", "rate"):
        metrics.add_column(column, justify="left" if column == "metric" else "right")
    for name, m in s["metrics"].items():
        style = "red" if m["failed"] else ""
        metrics.add_row(name, str(m["passed"]), f"[{style}]{m['failed']}[/{style}]" if style else "0",
                        str(m["not_applicable"]), _pct(m["rate"]))
    console.print(metrics)

    if s["failures"]:
        failures = Table(title=f"Failures ({len(s['failures'])})", show_lines=False)
        failures.add_column("case", overflow="fold")
        failures.add_column("metric")
        failures.add_column("expected vs got", overflow="fold")
        for f in s["failures"][:max_failures]:
            failures.add_row(f["id"], f["metric"], f["detail"])
        console.print(failures)
        if len(s["failures"]) > max_failures:
            console.print(f"... {len(s['failures']) - max_failures} more in report.md")

    color = "green" if s["gate"] == "pass" else "red"
    lat = s["latency_s"]
    console.print(f"[{color}]{s['passed']}/{s['cases']} cases passed ({_pct(s['pass_rate'])}), "
                  f"gate --min-pass {s['min_pass']}: {s['gate'].upper()}[/{color}]  "
                  f"latency p50 {lat['p50'] * 1000:.0f} ms, p95 {lat['p95'] * 1000:.0f} ms")
