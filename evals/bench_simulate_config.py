"""Time and memory of ``bench simulate --config``: a model built from a config.json, simulated.

    python -m evals.bench_simulate_config              # 7B and 70B configs
    python -m evals.bench_simulate_config --only 7b

Each config is written as ``transformers`` writes a checkpoint's config.json (``save_pretrained``
format) into a temporary folder, then simulated the way the CLI does it (read the config, build
the real transformers model under FakeTensorMode, wrap it FSDP2 full-shard over 8 fake GPUs, two
training iterations at seq 2048, micro-batch 1, bf16-mixed, AdamW) in a fresh Python process, so
the figures include importing torch and transformers. Reported per config: the simulation's own
time, the whole process's wall time, its CPU time (user + system, the whole process: what the
wall time would be on an idle core, since the simulation runs one thread) and its peak RSS
(``ru_maxrss``).

Targets (issue 13): 7B <= 20 s and <= 1.5 GiB RSS; 70B <= 90 s. Beside them, a peer: building the
same model on the meta device with transformers and counting its parameters, which is what
Accelerate's ``estimate-memory`` does (it reports parameter bytes only, no activations or
temporaries), timed in the same kind of fresh process.

The machine's load average is printed too: on a shared 2-core box the times scale with it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIGS = {"7b": "Llama-2-7B", "70b": "Llama-3.1-70B"}
TARGETS = {"7b": (20.0, 1.5), "70b": (90.0, None)}
GIB = 2**30


def write_config(name: str, folder: Path) -> Path:
    """The catalog model's config as save_pretrained writes it (every default field included)."""
    from bot.bench.hf_model import transformers_config
    from bot.catalog.hf_config import hf_config_for

    _, conf = transformers_config(hf_config_for(name))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(conf.to_json_string())
    return folder


def _child_simulate(folder: str) -> None:
    """Runs in a fresh process: read the config and simulate in this process (no extra spawn)."""
    import resource

    from bot.bench.simulate import SimConfig, run_simulation

    start = time.perf_counter()
    cfg = SimConfig.from_hf_config(folder, gpu_count=8, strategy="fsdp_full_shard", seq_len=2048, micro_batch=1)
    result = run_simulation(cfg)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"sim_seconds": time.perf_counter() - start, "peak_gib": result.peak_gib,
                      "cpu_seconds": usage.ru_utime + usage.ru_stime, "rss_gib": usage.ru_maxrss * 1024 / GIB}))


def _child_meta_count(folder: str) -> None:
    """The peer: transformers on the meta device, parameter count only (Accelerate's method)."""
    import resource

    import torch
    import transformers

    start = time.perf_counter()
    conf = transformers.AutoConfig.from_pretrained(folder)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(conf)
    params = sum(p.numel() for p in model.parameters())
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"sim_seconds": time.perf_counter() - start, "params": params,
                      "cpu_seconds": usage.ru_utime + usage.ru_stime, "rss_gib": usage.ru_maxrss * 1024 / GIB}))


def run_child(kind: str, folder: Path) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "evals.bench_simulate_config", f"--child-{kind}", str(folder)],
                         capture_output=True, text=True, env=env, timeout=1800)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"{kind} child failed:\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["wall_seconds"] = wall
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=sorted(CONFIGS), help="one config")
    parser.add_argument("--child-sim", help=argparse.SUPPRESS)
    parser.add_argument("--child-meta", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_sim:
        _child_simulate(args.child_sim)
        return 0
    if args.child_meta:
        _child_meta_count(args.child_meta)
        return 0

    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f} at start\n")
    print("| config | simulate (in process) | whole process, wall | whole process, CPU | peak RSS | "
          "peak per GPU | peer: meta build + count, wall / CPU | target | met (CPU time) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    ok = True
    with tempfile.TemporaryDirectory(prefix="sw-bench-config-") as tmp:
        for key, name in CONFIGS.items():
            if args.only and key != args.only:
                continue
            folder = write_config(name, Path(tmp) / key)
            sim = run_child("sim", folder)
            peer = run_child("meta", folder)
            max_s, max_rss = TARGETS[key]
            # Judged on CPU time: on a shared box the wall time measures the other users' load.
            met = sim["cpu_seconds"] <= max_s and (max_rss is None or sim["rss_gib"] <= max_rss)
            ok &= met
            target = f"<= {max_s:g} s" + (f", <= {max_rss:g} GiB" if max_rss else "")
            print(f"| {name} ({key}) | {sim['sim_seconds']:.1f} s | {sim['wall_seconds']:.1f} s | "
                  f"{sim['cpu_seconds']:.1f} s | {sim['rss_gib']:.2f} GiB | {sim['peak_gib']:.1f} GiB | "
                  f"{peer['wall_seconds']:.1f} s / {peer['cpu_seconds']:.1f} s "
                  f"(x{sim['cpu_seconds'] / peer['cpu_seconds']:.1f} CPU) | {target} | {'yes' if met else 'NO'} |",
                  flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
