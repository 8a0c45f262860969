"""The benchmark runner: exact simulated memory, real torchrun benchmarks, cluster scripts.

- ``simulate.py``: per-GPU peak memory on CPU (FakeTensorMode + fake process group + FSDP2/DDP
  + torch.distributed._tools memory trackers), in a spawned child process.
- ``model.py``: the decoder built from a ``bot.catalog.ModelSpec`` (used by simulate and worker).
- ``worker.py``: one rank of a real run (launched by torchrun); ``run.py``: launch, reap, check.
- ``script.py``: torchrun / SLURM launchers for a cluster, and import of their results.
- ``store.py``: the SQLite results store; every row is citable by its ``run-...`` id.
- ``cli.py``: ``shardwise bench``.
"""
