"""LoRA/QLoRA's own size slope of utilisation (bot.calc.comm.HFU_SIZE_SLOPE_LORA, issue 26 brief N2).

The full fine-tune slope (+0.14 HFU per decade of parameters) was fitted on full fine-tunes only;
LoRA rows (Qwen's README profiling table, `fit` rows of evals/published.jsonl) rise less with size.
"""

from __future__ import annotations

import math

import pytest

from bot.calc import estimate_setup
from bot.calc.comm import HFU_BY_GENERATION, HFU_SIZE_SLOPE, HFU_SIZE_SLOPE_LORA
from bot.catalog import lookup_model
from bot.core.setup import TrainingSetup
from evals.bench_published import load_rows, refit_lora_slope


def hfu(**kw):
    data = {"gpu_count": 8, "activation_checkpointing": True, **kw}
    return estimate_setup(TrainingSetup(**data)).inputs["hfu"]


@pytest.mark.parametrize("model,gpu,generation", [("llama2-70b", "a100-80gb", "ampere"),
                                                  ("llama3.1-70b", "h100", "hopper"),
                                                  ("Qwen1.5-72B", "a100-80gb", "ampere")])
@pytest.mark.parametrize("finetune", ["lora", "qlora"])
def test_a_lora_run_at_70b_gets_the_lora_slope_not_the_full_fine_tune_one(model, gpu, generation, finetune):
    size = lookup_model(model).params / 7e9
    got = hfu(model=model, gpu=gpu, finetune=finetune)
    assert got == pytest.approx(HFU_BY_GENERATION[generation] + HFU_SIZE_SLOPE_LORA * math.log10(size), abs=1e-4)
    # the same model fully fine-tuned keeps the full fine-tune slope, and runs closer to peak
    full = hfu(model=model, gpu=gpu, finetune="full")
    assert full == pytest.approx(min(0.75, HFU_BY_GENERATION[generation] + HFU_SIZE_SLOPE * math.log10(size)),
                                 abs=1e-4)
    assert got < full - 0.03


@pytest.mark.parametrize("model", ["llama2-7b", "mistral-7b", "llama3.2-1b"])
def test_at_7b_and_below_lora_and_full_share_the_base(model):
    # the slope starts at 7B (HFU_FITTED_MIN_PARAMS): small models, LoRA or not, take the 7B figure
    lora, full = hfu(model=model, gpu="a100-80gb", finetune="lora"), hfu(model=model, gpu="a100-80gb")
    assert lora == pytest.approx(full, abs=0.005)


def test_the_constant_is_what_its_fit_rows_ask_for():
    # python -m evals.bench_published --refit fits the slope on the `fit` rows that list it, only
    fitted = refit_lora_slope(load_rows())
    assert len(fitted["rows"]) >= 9
    assert fitted["refit"] == pytest.approx(HFU_SIZE_SLOPE_LORA)
    assert 0 <= HFU_SIZE_SLOPE_LORA < HFU_SIZE_SLOPE


def test_the_refit_reads_no_test_row():
    rows = load_rows()
    fitted = refit_lora_slope(rows)
    splits = {r["id"]: r["split"] for r in rows}
    assert {splits[i] for i in fitted["rows"]} == {"fit"}
