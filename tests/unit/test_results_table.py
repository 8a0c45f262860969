"""A pasted results table: a cell reading OOM says which setup ran out of memory
(bot/understand/logs.py ``table_oom``), and the reader reports it as the run that failed."""

from __future__ import annotations

import pytest

from bot.understand.logs import table_oom
from bot.understand.reader import read_turn

# DeepSpeed#3901, the asker's table as posted (https://github.com/deepspeedai/DeepSpeed/issues/3901)
DS3901 = ("Falcon-7B 4k context length fine-tuning, 8xA100 40GB GPUs.\n"
          "Settings | FSDP | Stage-2 | Stage-2 offload optimizer and params | Stage-3 | Stage-3 offload params | "
          "Stage-3 offload optimizer and params\n-- | -- | -- | -- | -- | -- | --\n"
          "Speed | 2.93 seconds | - | 9.60 seconds | 2.86 seconds | 6.05 seconds | 13.70 seconds\n"
          "Memory Usage | 23.8GB per GPU | OOM | 36GB | 38GB per GPU | 34GB per GPU | 21GB per GPU")


def test_the_oom_column_of_a_pasted_table_is_the_failed_run():
    fields, row = table_oom(DS3901)
    assert fields == {"zero_stage": 2}
    assert row.startswith("Memory Usage")
    obs = read_turn(DS3901).observed
    assert obs.oom and obs.zero_stage == 2 and obs.zero_offload is None


@pytest.mark.parametrize(("table", "expected"), [
    ("| | DDP | FSDP |\n|---|---|---|\n| peak | OOM | 31 GB |", {"fsdp_strategy": "ddp"}),
    # both ran out: the one that shards more says more (the other would too)
    ("| | DDP | ZeRO-3 |\n| 显存 | OOM | oom |", {"zero_stage": 3}),
    ("| | FSDP SHARD_GRAD_OP | FSDP FULL_SHARD |\n| mem | **OOM** | 20G |", {"fsdp_strategy": "fsdp_shard_grad_op"}),
])
def test_which_setup_a_table_marks(table, expected):
    marked = table_oom(table)
    assert marked is not None and marked[0] == expected


@pytest.mark.parametrize("text", [
    "| | ZeRO-2 offload | FSDP |\n| mem | OOM | 20 GB |",  # an offloaded run is not the GPU-resident strategy
    "| a | b | c |\n| 1 | OOM | 3 |",  # no column names a setup
    "| | DDP | FSDP |\n| mem | 40 GB | 20 GB |",  # nothing ran out
    "DDP or FSDP? | my question | OOM",  # one row is not a table
])
def test_tables_that_mark_no_failed_setup(text):
    assert table_oom(text) is None
