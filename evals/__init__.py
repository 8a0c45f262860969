"""The eval harness: gold cases, metrics, baselines and the report (``python -m evals run``).

- ``harness.py``: load and validate a JSONL cases file, ask the bot, score every answer.
- ``metrics.py``: one plain function per metric over (case, answer).
- ``baselines.py``: always DDP, always FSDP full shard, the forum thread's majority.
- ``report.py``: terminal summary, ``summary.json``, ``report.md``.
- ``cli.py``: ``shardwise eval`` / ``python -m evals run``.
- ``cases/gold.jsonl``: the gold set; ``cases/README.md`` says how its expectations were derived.

Other scripts here (``bench_*.py``) are benchmarks owned by their areas.
"""
