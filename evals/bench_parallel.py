"""The parallel-plan calculator against published multi-dimensional runs (evals/published_parallel.jsonl).

    python -m evals.bench_parallel            # per-row table + totals on the test rows
    python -m evals.bench_parallel --json

Each row is one published run (source URL and commit, the quoted table line, the date it was
recorded): the setup, the torchtitan degrees (``plan``) and what was measured (torchtitan's max
reserved memory over all GPUs, tokens/s per GPU). Rows split ``fit`` (looked at while choosing a
modelling rule; at most a third) and ``test``; the totals are reported on the test rows.
Targets (issue 29): memory within 15 %, tokens/s per GPU within 25 %, every row predicted to fit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from bot.calc.parallel import ParallelPlan, plan_memory
from bot.calc.parallel_comm import plan_comm_time
from evals.bench_published import resolve_row

ROWS = Path(__file__).with_name("published_parallel.jsonl")
TARGETS = {"memory": 15.0, "throughput": 25.0}


def load_rows(path: Path = ROWS) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        for key in ("id", "source", "quote", "setup", "plan", "measured", "split", "recorded"):
            if key not in row:
                raise ValueError(f"{path}: row {row.get('id')!r} lacks {key!r}")
        if row["split"] not in ("fit", "test"):
            raise ValueError(f"{path}: row {row['id']!r} split must be fit or test")
    fit = sum(r["split"] == "fit" for r in rows)
    if fit * 3 > len(rows):
        raise ValueError(f"{path}: {fit} of {len(rows)} rows are 'fit'; at most a third may be")
    return rows


def evaluate_row(row: dict) -> dict:
    resolved = resolve_row(row)
    plan = ParallelPlan(world_size=resolved.gpu_count, **row["plan"])
    mem = plan_memory(resolved, plan)
    speed = plan_comm_time(resolved, plan)
    measured = row["measured"]
    # A source without a memory figure (a throughput table) scores throughput and "fits" only.
    mem_err = (100 * (mem.reserved_gib - measured["memory_gib"]) / measured["memory_gib"]
               if measured.get("memory_gib") else None)
    tps_err = 100 * (speed.tokens_per_s_per_gpu - measured["tokens_per_s_per_gpu"]) / measured["tokens_per_s_per_gpu"]
    return {"id": row["id"], "split": row["split"], "mesh": plan.mesh_shape,
            "memory_gib": round(mem.reserved_gib, 1), "measured_memory_gib": measured["memory_gib"],
            "memory_error_pct": None if mem_err is None else round(mem_err, 1), "fits": mem.fits,
            "tokens_per_s_per_gpu": round(speed.tokens_per_s_per_gpu, 1),
            "measured_tokens_per_s_per_gpu": measured["tokens_per_s_per_gpu"],
            "throughput_error_pct": round(tps_err, 1), "bubble_fraction": round(speed.bubble_fraction, 3)}


def summarise(results: list[dict]) -> dict:
    test = [r for r in results if r["split"] == "test"]
    out: dict[str, object] = {"rows": len(results), "test_rows": len(test),
                              "all_fit": all(r["fits"] for r in results)}
    for kind, key in (("memory", "memory_error_pct"), ("throughput", "throughput_error_pct")):
        errors = [abs(r[key]) for r in test if r[key] is not None]
        out[f"{kind}_median_abs_pct"] = round(statistics.median(errors), 1) if errors else None
        out[f"{kind}_worst_abs_pct"] = round(max(errors), 1) if errors else None
        out[f"{kind}_within_target"] = sum(e <= TARGETS[kind] for e in errors)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = [evaluate_row(r) for r in load_rows()]
    totals = summarise(results)
    if args.json:
        print(json.dumps({"rows": results, "totals": totals}, indent=2))
        return 0
    print(f"{'row':28} {'split':5} {'mesh pp,rep,shard,cp,tp':24} {'mem':>6} {'meas':>6} {'err%':>6} "
          f"{'fits':>5} {'tps':>7} {'meas':>6} {'err%':>6}")
    for r in results:
        measured_mem = "-" if r["measured_memory_gib"] is None else f"{r['measured_memory_gib']:.1f}"
        mem_err = "-" if r["memory_error_pct"] is None else f"{r['memory_error_pct']:.1f}"
        print(f"{r['id']:28} {r['split']:5} {str(r['mesh']):24} {r['memory_gib']:6.1f} {measured_mem:>6} "
              f"{mem_err:>6} {str(r['fits']):>5} {r['tokens_per_s_per_gpu']:7.0f} "
              f"{r['measured_tokens_per_s_per_gpu']:6.0f} {r['throughput_error_pct']:6.1f}")
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
