"""Simulate measures the recommendation as recommended, says the wait, and a late result names
its own question (issue 27)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bot.answer import Answer, Recommendation, Sections, TableRow
from bot.surfaces.web import simulation as sim

SETUP = {"model": "Llama-2-13B", "gpu": "A100 40GB", "gpu_memory_gb": 40.0, "gpu_count": 8, "nodes": 1,
         "precision": "bf16-mixed", "optimizer": "adamw", "finetune": "full", "seq_len": 4096,
         "micro_batch": 2, "activation_checkpointing": False}


def _answer(variant: str, asked_ckpt: bool = False, language: str = "en", strategy: str = "fsdp_full_shard"):
    rows = [TableRow(strategy="ddp", label="DDP", total_gib=311.4, fits=False),
            TableRow(strategy=strategy, label="FSDP full", total_gib=102.3, fits=False, chosen=not variant),
            TableRow(strategy=strategy, variant=variant or "x", label="FSDP full + checkpointing", total_gib=30.3,
                     fits=True, chosen=bool(variant),
                     keys={"total_gib": f"{variant}.memory.{strategy}.total_gib"})]
    return Answer(language=language, setup={**SETUP, "activation_checkpointing": asked_ckpt},
                  recommendation=Recommendation(strategy=strategy), sections=Sections(headline="h", table=rows))


@pytest.mark.parametrize(("variant", "asked", "expected"), [
    ("ckpt", False, True),  # recommended with checkpointing: simulated with it
    ("ckpt", True, False),  # the variant flips what was asked
    ("", True, True),  # no variant: as asked
    ("bucket_fused+ckpt", False, True),
])
def test_the_simulated_setup_is_the_recommended_row(variant, asked, expected):
    data, skipped = sim.simulated_setup(_answer(variant, asked_ckpt=asked))
    assert data["activation_checkpointing"] is expected
    assert skipped == []
    if "bucket_fused" in variant:
        assert data["ddp_bucket_view"] is True and data["optimizer_impl"] == "fused"


def test_a_part_the_simulator_cannot_apply_is_named():
    _, skipped = sim.simulated_setup(_answer("single_node"))
    assert skipped == ["one node"]
    _, skipped = sim.simulated_setup(_answer("single_node", language="zh"))
    assert skipped == ["单节点"]


def test_the_config_and_the_formula_figure_are_the_recommended_rows():
    answer = _answer("ckpt")
    cfg, why_not, _ = sim.simulation_config(answer)
    assert why_not is None and cfg.activation_checkpointing is True and cfg.strategy == "fsdp_full_shard"
    assert "checkpointing on" in sim.setup_line(cfg)
    assert sim.formula_total(answer) == pytest.approx(30.3)


class _Store:
    def __init__(self, runs):
        self.runs = runs

    def list(self, kind=None, limit=50):
        return self.runs


def _run(model: str, seconds: float):
    config = {"model": model, "gpu_count": 2, "strategy": "ddp"}
    return SimpleNamespace(status="ok", started_at=100.0, finished_at=100.0 + seconds, config=config)


def test_the_expected_wait_scales_stored_runs_by_model_size():
    cfg, _, _ = sim.simulation_config(_answer("ckpt"))
    span = sim.expected_seconds(cfg, _Store([_run("gpt2", 2.0), _run("Llama-2-7B", 100.0), _run("Llama-2-7B", 120.0)]))
    assert span is not None and 100 < span[1] < 1000  # 13B: about twice a 7B's 100-120 s
    note = sim.wait_note(_answer("ckpt"), cfg, [], _Store([_run("Llama-2-7B", 110.0)]))
    assert "Expected wait" in note and "FSDP full + checkpointing" in note and "checkpointing on" in note
    zh = sim.wait_note(_answer("ckpt", language="zh"), cfg, [], _Store([]))
    assert "几分钟" in zh and "激活检查点开" in zh


def test_no_stored_run_says_so():
    cfg, _, _ = sim.simulation_config(_answer("ckpt"))
    assert "No stored simulation" in sim.wait_note(_answer("ckpt"), cfg, [], _Store([]))


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_result_after_another_answer_names_its_own_question(language):
    answer = _answer("ckpt", language=language)
    result = SimpleNamespace(peak_gib=29.1, seconds=90.0, params_gib=3.0, grads_gib=3.0, optimizer_gib=12.0,
                             activations_gib=8.0, buffers_gib=3.0)
    text, citation = sim.simulation_message(answer, "fsdp_full_shard", "bench-1", result, 4, elapsed=91,
                                            setup="s", question="13B on 8x A100 40GB?")
    assert "13B on 8x A100 40GB?" in text and "30.30" in text and "[4]" in text
    plain, _ = sim.simulation_message(answer, "fsdp_full_shard", "bench-1", result, 4, setup="s")
    assert "13B on 8x A100 40GB?" not in plain and "30.30" in plain
