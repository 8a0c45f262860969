"""The utilisation's size slope is not extrapolated below the smallest model it was fitted on
(issue 26): every ``fit`` row is 7B or larger, so models under 7B take the 7B utilisation."""

from __future__ import annotations

import pytest

from bot.calc import estimate_setup
from bot.calc.comm import HFU_FITTED_MIN_PARAMS
from bot.core.setup import TrainingSetup
from evals.bench_published import load_rows, resolve_row


def test_the_floor_is_the_smallest_fitted_model():
    fitted = [resolve_row(r).model.params for r in load_rows() if r["split"] == "fit" and "throughput" in r["fit"]]
    assert min(fitted) >= HFU_FITTED_MIN_PARAMS * 0.95
    assert min(fitted) <= HFU_FITTED_MIN_PARAMS * 1.05


@pytest.mark.parametrize("gpu", ["a100-80gb", "h100"])
@pytest.mark.parametrize("small", ["llama3.2-1b", "qwen2.5-0.5b", "gpt2"])
def test_models_under_7b_get_the_7b_utilisation(gpu, small):
    def hfu(model):
        return estimate_setup(TrainingSetup(model=model, gpu=gpu, gpu_count=8, seq_len=1024)).inputs["hfu"]

    assert hfu(small) == pytest.approx(hfu("llama2-7b"), abs=0.002)
    assert hfu("llama2-70b") > hfu("llama2-7b")  # the fitted range keeps its slope
