"""The calculator against published GPU measurements (evals/published.jsonl).

    python -m evals.bench_published            # per-row table + totals
    python -m evals.bench_published --json     # machine-readable rows and totals

Each row of ``evals/published.jsonl`` is one published training run: its source (repo, path and
commit, or page), the quoted figure-bearing words, the full setup as the source states it, the
strategy, and what was measured (peak memory, allocated or reserved as stated, and tokens/s per
GPU). The expectations were written from the sources before the calculator was run on them.

For every expressible row this prints the calculator's prediction and its error against the
measurement, beside peers where they apply (full fine-tunes only, model states only):
- DeepSpeed's ZeRO-2/3 model-state estimators and Accelerate's "4x the model size" rule
  (formulas in ``evals/bench_calc_check.py``, sources there);
- for throughput, the previous calculator's rule: 6N + 12 L h s (+ a forward for checkpointing)
  at a flat 40 % MFU of the dense bf16 peak.

Each row has a ``split``: ``fit`` rows were used to fit a constant of the calculator (docs/calc.md
says which constant each fitted), ``test`` rows were not, and a constant may only be fitted on
``fit`` rows. The totals are printed for the fit rows, the test rows, and the test rows recorded
from sources new to the project (``recorded`` date, with the calculator's ``first_contact`` error
before any constant or model change). A row may carry ``model_config``: the model's Hugging Face
config (e.g. an MPT shape from its training yaml), read by ``bot.catalog.hf_config``. Targets (issue 14): memory
median |error| <= 10 %, worst <= 25 %; throughput median <= 15 %, worst <= 30 %; no published
working run predicted "does not fit"; at most 2 rows inexpressible.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

from bot.calc import _mem_inputs, estimate, resolve_with_model
from bot.calc.memory import reserved_fraction
from bot.catalog import lookup_gpu
from bot.catalog.hf_config import model_from_hf_config
from bot.core.setup import TrainingSetup, resolve_setup

ROWS = Path(__file__).with_name("published.jsonl")
GIB = 2**30
TARGETS = {"memory": (10.0, 25.0), "throughput": (15.0, 30.0)}
MAX_INEXPRESSIBLE = 2
SPLITS = ("fit", "test")


def load_rows(path: Path = ROWS) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        for key in ("id", "source", "quote", "setup", "strategy", "measured", "expressible"):
            if key not in row:
                raise ValueError(f"{path}: row {row.get('id')!r} lacks {key!r}")
        if not (row["source"].get("url") or row["source"].get("commit")):
            raise ValueError(f"{path}: row {row['id']!r} has no source url or commit")
        if row.get("split") not in SPLITS:
            raise ValueError(f"{path}: row {row['id']!r} has split {row.get('split')!r}, not one of {SPLITS}")
        if row["split"] == "test" and row.get("fit"):
            raise ValueError(f"{path}: test row {row['id']!r} lists fitted metrics {row['fit']}")
    return rows


def resolve_row(row: dict):
    """The row's setup, resolved. ``gpu_override`` describes a card variant the catalog lacks
    (e.g. torchtitan's 96 GB H100): the catalog GPU it derives from, with its memory replaced."""
    data = {k: v for k, v in row["setup"].items() if v is not None}
    override = row.get("gpu_override")
    if override:
        base = lookup_gpu(override["base"])
        data.pop("gpu", None)
        data["gpu_memory_gb"] = override["memory_gb"]
        data.setdefault("intra_node_link", base.intra_link)
    if row.get("model_config"):
        spec = model_from_hf_config(dict(row["model_config"]), name=row["model_config"].get("_name_or_path"))
        resolved = resolve_with_model(TrainingSetup(**data), spec)
    else:
        resolved = resolve_setup(TrainingSetup(**data))
    if override:
        gpu = dataclasses.replace(base, name=f"{base.name} ({override['memory_gb']} GB variant)",
                                  memory_gb=override["memory_gb"])
        resolved = dataclasses.replace(resolved, gpu=gpu)
    return resolved


def peers_memory(row: dict, resolved) -> dict[str, float]:
    """Model-state formulas of DeepSpeed and Accelerate, for full fine-tunes (GiB per GPU)."""
    if resolved.setup.finetune != "full":
        return {}
    try:
        from evals.bench_calc_check import accelerate_gib, deepspeed_zero2_gib, deepspeed_zero3_gib
    except Exception:  # the peer formulas' module is unavailable: print no peers
        return {}
    model = resolved.model
    n, per_node = resolved.gpu_count, resolved.gpus_per_node
    largest = model.largest_unit_params()
    strategy = row["strategy"]
    if strategy == "ddp":
        return {"accelerate": accelerate_gib(model.params, resolved.setup.precision)}
    if strategy == "fsdp_shard_grad_op":
        return {"deepspeed": deepspeed_zero2_gib(model.params, n)}
    if strategy == "fsdp_hybrid_shard":
        return {"deepspeed": deepspeed_zero3_gib(model.params, largest, per_node, False)}
    return {"deepspeed": deepspeed_zero3_gib(model.params, largest, n, strategy == "fsdp_full_shard_offload")}


def flat_mfu_tokens_per_s(resolved) -> float:
    """The previous calculator's throughput rule: (6N + 12 L h s, + a forward when checkpointing)
    at 40 % of the dense bf16 peak, no communication."""
    model, setup = resolved.model, resolved.setup
    gpu = resolved.gpu
    peak = (gpu.bf16_tflops if gpu else 312.0) * 1e12
    attn = 12 * model.n_layers * model.hidden * setup.seq_len
    flops = 6 * model.params + attn
    if setup.activation_checkpointing:
        flops += 2 * model.params + attn / 3
    return 0.4 * peak / flops


def error_pct(predicted: float, measured: float) -> float:
    return 100.0 * (predicted - measured) / measured


def evaluate(rows: list[dict]) -> list[dict]:
    """One result per row: predictions, errors, peers, fits verdict (or why inexpressible)."""
    results = []
    for row in rows:
        out = {"id": row["id"], "fit": row.get("fit", []), "split": row["split"],
               "own": row["source"].get("kind") == "own_measurement",
               "recorded": row.get("recorded"), "first_contact": row.get("first_contact"),
               "expressible": row["expressible"],
               "source_repo": row["source"].get("repo") or row["source"]["url"]}
        if not row["expressible"]:
            out["why_inexpressible"] = row.get("why_inexpressible", "")
            measured_gib = row["measured"].get("memory_gib")
            try:  # the peers' rules still apply to what the source states
                peers = peers_memory(row, resolve_row(row)) if measured_gib else {}
            except Exception:  # the setup itself cannot be resolved: no peer figure either
                peers = {}
            out["peers"] = {name: {"gib": gib, "error_pct": error_pct(gib, measured_gib)}
                            for name, gib in peers.items()}
            results.append(out)
            continue
        resolved = resolve_row(row)
        est = estimate(resolved)
        strategy = row["strategy"]
        mem, speed = est.memory[strategy], est.throughput[strategy]
        measured = row["measured"]
        out["oom"] = bool(measured.get("oom"))
        out.update(strategy=strategy, fits=mem.fits, reserved_gib=mem.reserved_gib, allocated_gib=mem.total_gib,
                   reserved_fraction=reserved_fraction(_mem_inputs(resolved)),
                   expandable_segments=bool(resolved.setup.expandable_segments),
                   tokens_per_s_per_gpu=speed.tokens_per_s_per_gpu, mfu=speed.mfu,
                   not_modelled=est.not_modelled)
        if measured.get("memory_gib") is not None:
            kind = measured.get("memory_kind") or "reserved"
            predicted = mem.total_gib if kind == "allocated" else mem.reserved_gib
            out["memory"] = {"measured": measured["memory_gib"], "kind": kind, "predicted": predicted,
                             "measured_allocated": measured.get("allocated_gib"),
                             "error_pct": error_pct(predicted, measured["memory_gib"]),
                             "peers": {name: {"gib": gib, "error_pct": error_pct(gib, measured["memory_gib"])}
                                       for name, gib in peers_memory(row, resolved).items()}}
        if measured.get("tokens_per_s_per_gpu") is not None:
            tps = measured["tokens_per_s_per_gpu"]
            flat = flat_mfu_tokens_per_s(resolved)
            out["throughput"] = {"measured": tps, "predicted": speed.tokens_per_s_per_gpu,
                                 "error_pct": error_pct(speed.tokens_per_s_per_gpu, tps),
                                 "peers": {"flat_40pct_mfu": {"tokens_per_s": flat,
                                                              "error_pct": error_pct(flat, tps)}}}
        results.append(out)
    return results


def select(results: list[dict], part: str) -> list[dict]:
    """The rows of one part: ``all``, ``fit``, ``test``, or ``new`` (test rows recorded from sources
    new to the project, the ones with a ``first_contact`` figure)."""
    if part == "all":
        return results
    if part == "new":
        return [r for r in results if r["split"] == "test" and r.get("recorded")]
    return [r for r in results if r["split"] == part]


def first_contact_summary(results: list[dict]) -> dict:
    """Median and worst absolute error of the recorded first-contact figures (new test rows)."""
    out: dict = {}
    for metric in ("memory", "throughput"):
        errors = [abs(r["first_contact"][f"{metric}_error_pct"]) for r in select(results, "new")
                  if (r.get("first_contact") or {}).get(f"{metric}_error_pct") is not None]
        out[metric] = {"rows": len(errors), "median_abs_pct": statistics.median(errors) if errors else None,
                       "worst_abs_pct": max(errors) if errors else None}
    return out


def summary(results: list[dict], held_out_only: bool = False) -> dict:
    """Median and worst absolute error per metric, the "does not fit" count, inexpressible rows.
    ``held_out_only`` drops each row's fitted metrics (the ``fit`` list), as before the split."""
    out: dict = {}
    for metric in ("memory", "throughput"):
        errors = [abs(r[metric]["error_pct"]) for r in results
                  if metric in r and not (held_out_only and metric in r["fit"])]
        out[metric] = {"rows": len(errors),
                       "median_abs_pct": statistics.median(errors) if errors else None,
                       "worst_abs_pct": max(errors) if errors else None}
    out["predicted_not_fit"] = [r["id"] for r in results if r["expressible"] and not r["fits"] and not r["oom"]]
    # published out-of-memory runs: the calculator should say "does not fit"
    out["oom_predicted_fit"] = [r["id"] for r in results if r["expressible"] and r["oom"] and r["fits"]]
    out["inexpressible"] = [r["id"] for r in results if not r["expressible"]]
    return out


def meets_targets(total: dict) -> dict[str, bool]:
    verdict = {}
    for metric, (median_target, worst_target) in TARGETS.items():
        m = total[metric]
        verdict[metric] = (m["median_abs_pct"] is not None and m["median_abs_pct"] <= median_target
                           and m["worst_abs_pct"] <= worst_target)
    verdict["fits"] = not total["predicted_not_fit"] and not total["oom_predicted_fit"]
    verdict["inexpressible"] = len(total["inexpressible"]) <= MAX_INEXPRESSIBLE
    return verdict


def _fmt(value, spec=".1f", suffix=""):
    return "-" if value is None else f"{value:{spec}}{suffix}"


def print_report(results: list[dict]) -> None:
    header = (f"{'row':38} {'fit':>4} {'mem meas':>8} {'calc':>6} {'err%':>6} {'DS/Acc':>7} {'err%':>6} "
              f"{'tok/s meas':>10} {'calc':>7} {'err%':>6} {'40%MFU':>7} {'err%':>6} fits")
    print(header)
    print("-" * len(header))
    for r in results:
        if not r["expressible"]:
            peers = "; ".join(f"{name} {p['gib']:.1f} GiB ({p['error_pct']:+.0f} %)"
                              for name, p in r.get("peers", {}).items())
            print(f"{r['id']:38} inexpressible: {r['why_inexpressible']}" + (f" [peer: {peers}]" if peers else ""))
            continue
        mem, thr = r.get("memory"), r.get("throughput")
        peer = next(iter(mem["peers"].values()), None) if mem else None
        flat = thr["peers"]["flat_40pct_mfu"] if thr else None
        fit = ",".join(m[0] for m in r["fit"]) or ("new" if r.get("recorded") else "")
        print(f"{r['id']:38} {fit:>4} {_fmt(mem and mem['measured']):>8} {_fmt(mem and mem['predicted']):>6} "
              f"{_fmt(mem and mem['error_pct'], '+.0f'):>6} {_fmt(peer and peer['gib']):>7} "
              f"{_fmt(peer and peer['error_pct'], '+.0f'):>6} {_fmt(thr and thr['measured'], '.0f'):>10} "
              f"{_fmt(thr and thr['predicted'], '.0f'):>7} {_fmt(thr and thr['error_pct'], '+.0f'):>6} "
              f"{_fmt(flat and flat['tokens_per_s'], '.0f'):>7} {_fmt(flat and flat['error_pct'], '+.0f'):>6} "
              f"{'yes' if r['fits'] else 'NO'}{' (published OOM)' if r['oom'] else ''}")
    parts = (("fit rows (the constants were fitted on these)", summary(select(results, "fit"))),
             ("test rows (no constant fitted on them)", summary(select(results, "test"))),
             ("test rows from new sources (recorded 2026-12-01)", summary(select(results, "new"))),
             ("all rows", summary(results)))
    for label, total in parts:
        print(f"\n{label}:")
        for metric in ("memory", "throughput"):
            m = total[metric]
            print(f"  {metric:10} rows {m['rows']:2}  median |err| {_fmt(m['median_abs_pct'], '.1f', ' %')}  "
                  f"worst |err| {_fmt(m['worst_abs_pct'], '.1f', ' %')}  (target {TARGETS[metric][0]:g} % / "
                  f"{TARGETS[metric][1]:g} %)")
        print(f"  predicted 'does not fit' on a published working run: {total['predicted_not_fit'] or 'none'}")
        print(f"  published out-of-memory runs predicted to fit: {total['oom_predicted_fit'] or 'none'}")
        print(f"  inexpressible rows: {len(total['inexpressible'])} {total['inexpressible']}")
    by_source: dict[str, list[dict]] = {}
    for r in results:
        by_source.setdefault(r["source_repo"], []).append(r)
    print("\nby source (all rows):")
    for repo, group in by_source.items():
        total = summary(group)
        cells = []
        for metric in ("memory", "throughput"):
            m = total[metric]
            if m["rows"]:
                cells.append(f"{metric} {m['rows']} rows median {m['median_abs_pct']:.1f} % worst "
                             f"{m['worst_abs_pct']:.1f} %")
        print(f"  {repo:34} " + ("; ".join(cells) or "no scored rows"))
    peers = {}
    for r in results:
        for name, p in (r.get("memory") or {}).get("peers", {}).items():
            peers.setdefault(name, []).append((abs(p["error_pct"]), abs(r["memory"]["error_pct"])))
    for name, pairs in peers.items():
        print(f"\npeer {name}: {len(pairs)} rows, median |err| {statistics.median(p for p, _ in pairs):.1f} % "
              f"(calculator on the same rows: {statistics.median(c for _, c in pairs):.1f} %)")
    flats = [(abs(r["throughput"]["peers"]["flat_40pct_mfu"]["error_pct"]), abs(r["throughput"]["error_pct"]))
             for r in results if "throughput" in r]
    if flats:
        print(f"peer flat 40% MFU: {len(flats)} rows, median |err| {statistics.median(p for p, _ in flats):.1f} % "
              f"(calculator: {statistics.median(c for _, c in flats):.1f} %)")
    first = first_contact_summary(results)
    print("\nfirst contact on the new test rows (before any change, 2026-12-01): " + "; ".join(
        f"{metric} {m['rows']} rows median {_fmt(m['median_abs_pct'], '.1f', ' %')} worst "
        f"{_fmt(m['worst_abs_pct'], '.1f', ' %')}" for metric, m in first.items()))
    print("\ntargets met on the test rows:", meets_targets(summary(select(results, "test"))))


def refit_utilisation(rows: list[dict]) -> dict[str, dict]:
    """The HFU base per GPU generation that the ``fit`` rows alone ask for: the value (0.005 steps)
    whose median signed throughput error over that generation's fit rows is closest to zero, with
    the size slope held. Only ``fit`` rows are read; the calculator's constant is left as it is."""
    from bot.calc import comm

    fit_rows = [r for r in rows if r["split"] == "fit" and "throughput" in r.get("fit", [])]
    out: dict[str, dict] = {}
    saved = dict(comm.HFU_BY_GENERATION)
    try:
        for generation in saved:
            group = [r for r in fit_rows if comm.gpu_generation(resolve_row(r).gpu) == generation]
            if not group:
                continue
            best = None
            for step in range(40, 161):
                comm.HFU_BY_GENERATION[generation] = step * 0.005
                errors = [e["throughput"]["error_pct"] for e in evaluate(group) if "throughput" in e]
                score = abs(statistics.median(errors))
                if best is None or score < best[0]:
                    best = (score, step * 0.005, errors)
                comm.HFU_BY_GENERATION[generation] = saved[generation]
            assert best is not None
            out[generation] = {"rows": [r["id"] for r in group], "current": saved[generation],
                               "refit": round(best[1], 3), "median_error_pct": round(statistics.median(best[2]), 1)}
    finally:
        comm.HFU_BY_GENERATION.update(saved)
    return out


def refit_lora_slope(rows: list[dict]) -> dict:
    """The LoRA/QLoRA size slope the rows fitted to it (``fit`` lists ``lora_size_slope``) ask for:
    the value (0.005 steps, 0 .. the full fine-tune slope) that leaves the least size trend in their
    throughput errors, i.e. the smallest spread of log(1 + error) among rows of the same source and
    sequence length. The level of the errors (the utilisation base, fitted on full fine-tunes) is
    not fitted here, only their shape across model sizes."""
    import math

    from bot.calc import comm

    group = [r for r in rows if r["split"] == "fit" and "lora_size_slope" in r.get("fit", [])]
    if not group:
        return {}
    saved = comm.HFU_SIZE_SLOPE_LORA
    best = None
    try:
        for step in range(0, round(comm.HFU_SIZE_SLOPE / 0.005) + 1):
            comm.HFU_SIZE_SLOPE_LORA = step * 0.005
            cells: dict[tuple, list[float]] = {}
            for row, result in zip(group, evaluate(group), strict=True):
                key = (row["source"].get("repo"), row["setup"].get("seq_len"))
                cells.setdefault(key, []).append(math.log1p(result["throughput"]["error_pct"] / 100))
            spread = sum((x - statistics.mean(v)) ** 2 for v in cells.values() for x in v)
            if best is None or spread < best[0] - 1e-12:
                best = (spread, step * 0.005)
    finally:
        comm.HFU_SIZE_SLOPE_LORA = saved
    assert best is not None
    return {"rows": [r["id"] for r in group], "current": saved, "refit": round(best[1], 3)}


def implied_reserved_fractions(results: list[dict]) -> list[dict]:
    """For each row with a measured reserved peak: the fraction of the transient bytes (activations,
    gathered weights, loss temporaries) the measurement implies the caching allocator kept on top of
    the calculator's allocated peak, beside the calculator's RESERVED_TRANSIENT_FRACTION. Reading it
    on ``fit`` rows is fitting; on ``test`` rows it is a diagnosis only."""
    out = []
    for r in results:
        mem = r.get("memory")
        if not mem or mem["kind"] != "reserved":
            continue
        transient = (r["reserved_gib"] - r["allocated_gib"]) / r["reserved_fraction"]
        if transient <= 0:
            continue
        # the measured allocated peak where the row has one, else the calculator's
        allocated = mem.get("measured_allocated") or r["allocated_gib"]
        out.append({"id": r["id"], "split": r["split"], "expandable_segments": r["expandable_segments"],
                    "implied": (mem["measured"] - allocated) / transient})
    return out


def refit_reserved_fractions(rows: list[dict]) -> dict[str, dict]:
    """The reserved fraction per allocator mode that the ``fit`` rows ask for: the median implied
    fraction over the fit rows measured with that allocator (``implied_reserved_fractions``)."""
    implied = [r for r in implied_reserved_fractions(evaluate(rows)) if r["split"] == "fit"]
    out = {}
    for mode, label in ((True, "expandable_segments"), (False, "default_allocator")):
        values = [r["implied"] for r in implied if r["expandable_segments"] == mode]
        if values:
            out[label] = {"rows": len(values), "median": round(statistics.median(values), 3),
                          "range": [round(min(values), 2), round(max(values), 2)]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print rows and totals as JSON")
    parser.add_argument("--refit", action="store_true",
                        help="print the utilisation base each GPU generation's fit rows ask for")
    args = parser.parse_args(argv)
    if args.refit:
        print(json.dumps(refit_utilisation(load_rows()), indent=2))
        print(json.dumps({"lora_size_slope": refit_lora_slope(load_rows())}, indent=2))
        print(json.dumps({"reserved_fraction": refit_reserved_fractions(load_rows())}, indent=2))
        for row in implied_reserved_fractions(evaluate(load_rows())):
            print(f"reserved fraction implied by {row['id']} ({row['split']}): {row['implied']:.2f}")
        return 0
    results = evaluate(load_rows())
    if args.json:
        print(json.dumps({"rows": results, "all": summary(results), "held_out": summary(results, True),
                          "fit": summary(select(results, "fit")), "test": summary(select(results, "test")),
                          "new_test": summary(select(results, "new")),
                          "first_contact": first_contact_summary(results),
                          "targets_met": meets_targets(summary(select(results, "test")))}, indent=2))
    else:
        print_report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
