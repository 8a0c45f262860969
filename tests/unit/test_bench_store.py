"""The results store: ids, round trips, filters, failed rows never served."""

from __future__ import annotations

import re
import sys

import pytest

from bot.bench.store import ResultStore, config_hash, torch_version


def test_add_get_list_and_find(tmp_path):
    store = ResultStore(tmp_path / "b.sqlite")
    config = {"model": "tiny", "strategy": "ddp", "nproc": 2, "seq_len": 64}
    run_id = store.add("run", config, {"step_seconds": 0.5, "tokens_per_s": 256.0, "peak_gib": 0.1},
                       hardware={"device": "cpu"}, torch_version="2.13.0")
    assert re.fullmatch(r"run-[0-9a-f]{12}", run_id)
    got = store.get(run_id)
    assert got.config == config and got.figures["step_seconds"] == 0.5 and got.hardware == {"device": "cpu"}
    assert got.config_hash == config_hash(config)
    assert "0.500 s/step" in got.summary() and "tiny ddp" in got.summary()
    other = store.add("run", {**config, "strategy": "fsdp_full_shard"}, {"peak_gib": 0.05})
    assert [r.id for r in store.find_runs(model="tiny", strategy="ddp")] == [run_id]
    assert {r.id for r in store.find_runs(model="tiny")} == {run_id, other}
    assert store.find_runs(model="Llama-2-7B") == []
    assert store.find_by_hash("run", config_hash(config)).id == run_id
    # a second store object on the same file sees the same rows (it is on disk)
    assert ResultStore(tmp_path / "b.sqlite").get(other).strategy == "fsdp_full_shard"
    assert {r.id for r in store.list()} == {run_id, other}
    assert store.list(kind="simulate") == []
    assert store.get("run-000000000000") is None


def test_failed_rows_are_kept_but_never_served(tmp_path):
    store = ResultStore(tmp_path / "b.sqlite")
    config = {"model": "tiny", "strategy": "ddp"}
    failed = store.add("run", config, {}, status="failed", error="rank 1 failed")
    assert store.get(failed).status == "failed" and "rank 1 failed" in store.get(failed).summary()
    assert store.find_runs(model="tiny") == []
    assert store.find_by_hash("run", config_hash(config)) is None


@pytest.mark.parametrize("kwargs, message", [
    (dict(kind="guess"), "kind"),
    (dict(status="maybe"), "status"),
])
def test_bad_kind_or_status_is_refused(tmp_path, kwargs, message):
    store = ResultStore(tmp_path / "b.sqlite")
    args = {"kind": "run", **kwargs}
    kind = args.pop("kind")
    with pytest.raises(ValueError, match=message):
        store.add(kind, {"model": "tiny"}, {}, **args)


def test_default_path_is_in_the_data_dir():
    from bot.env import data_dir

    assert ResultStore().path == data_dir() / "bench.sqlite"


def test_the_torch_version_is_read_without_importing_torch(monkeypatch):
    """Stored simulations are keyed by ``torch.__version__``: the string read from the installed
    distribution (no import) must be that same string, or every lookup would miss."""
    import torch

    assert torch_version() == torch.__version__
    monkeypatch.delitem(sys.modules, "torch")  # as in a process that never imported it
    assert torch_version() == torch.__version__
    assert "torch" not in sys.modules
