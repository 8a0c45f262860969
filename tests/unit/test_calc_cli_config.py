"""``shardwise calc --config PATH|HUB_ID``: a model from a Hugging Face config.json, with its real
shape (not a generic model of its size), and the offline message for a Hub id (exit 2)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from bot.calc import estimate_setup
from bot.calc.cli import calc
from bot.catalog import lookup_model
from bot.catalog.hf_config import OFFLINE_MESSAGE, hf_config_for
from bot.core.setup import TrainingSetup

SETUP = ["--gpu", "h100", "--gpus", "8", "--seq-len", "4096", "--micro-batch", "2"]


def run(tmp_path, *args):
    return CliRunner().invoke(calc, list(args), env={"SHARDWISE_DATA_DIR": str(tmp_path / "data")})


def write_config(folder, model: str):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(hf_config_for(model)))
    return folder


def test_a_config_folder_gives_the_catalog_models_numbers(tmp_path):
    folder = write_config(tmp_path / "Qwen3-30B-A3B", "Qwen3-30B-A3B")
    out = run(tmp_path, "--config", str(folder), *SETUP, "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["model_from_config"]["name"] == "Qwen3-30B-A3B"
    assert data["model_from_config"]["params"] == lookup_model("Qwen3-30B-A3B").params
    assert data["model_from_config"]["caveats"]  # MoE: the expert-parallelism note
    catalog = estimate_setup(TrainingSetup(model="Qwen3-30B-A3B", gpu="h100", gpu_count=8, seq_len=4096,
                                           micro_batch=2))
    for strategy, mem in catalog.memory.items():
        assert data[f"memory.{strategy}.total_gib"] == round(mem.total_gib, 4)
    # ...and not what a generic dense model of the same size would give
    generic = estimate_setup(TrainingSetup(params_b=30.53, gpu="h100", gpu_count=8, seq_len=4096, micro_batch=2))
    assert abs(generic.memory["fsdp_full_shard"].total_gib - data["memory.fsdp_full_shard.total_gib"]) > 5


def test_tables_name_the_config_and_the_moe_note(tmp_path):
    config = write_config(tmp_path / "m", "Qwen3-30B-A3B") / "config.json"
    out = run(tmp_path, "--config", str(config), *SETUP)
    assert out.exit_code == 0, out.output
    assert "model from config" in out.stdout and "3.35B active" in out.stdout
    assert "Expert parallelism" in out.stdout


def test_an_assumed_length_fits_a_learned_position_table(tmp_path):
    folder = write_config(tmp_path / "gpt2", "GPT-2")
    out = run(tmp_path, "--config", str(folder), "--gpu", "a100-80gb", "--gpus", "2", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["setup"]["seq_len"] == 1024 and "seq_len" in data["assumed"]


def test_a_hub_id_offline_gives_the_offline_message_and_exit_2(tmp_path):
    out = run(tmp_path, "--config", "Qwen/Qwen3-30B-A3B", *SETUP)
    assert out.exit_code == 2
    assert OFFLINE_MESSAGE in out.output and "Traceback" not in out.output


def test_bad_configs_exit_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for source in (str(bad), str(tmp_path / "missing.json")):
        out = run(tmp_path, "--config", source, *SETUP)
        assert out.exit_code == 2, out.output
        assert out.output.startswith("error: config:") and "Traceback" not in out.output
    folder = write_config(tmp_path / "q", "Qwen3-0.6B")
    out = run(tmp_path, "--config", str(folder), "--model", "llama2-7b", *SETUP)
    assert out.exit_code == 2 and "either --config or --model" in out.output
