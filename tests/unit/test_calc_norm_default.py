"""The default norm kernel follows the torch release (bot.catalog.kernel_defaults.default_norm_impl): from 2.10
blocks stated to be PyTorch-native run F.rms_norm as the fused CUDA kernel (saves input + rstd); earlier
releases, transformers' own RMSNorm and an unstated stack keep the composite's fp32 copies."""

import pytest

from bot.calc import estimate_setup
from bot.catalog.kernel_defaults import default_norm_impl, torch_release
from bot.core.setup import TrainingSetup, check_setup

BASE = dict(model="llama2-7b", gpu="h100", gpu_count=8, precision="bf16-mixed", seq_len=2048, micro_batch=1)
H = 4096  # Llama-2-7B hidden size
TOKENS, LAYERS = 2048, 32


def activations(**extra) -> float:
    return estimate_setup(TrainingSetup(**BASE, **extra)).memory["fsdp_full_shard"].activations_gib


@pytest.mark.parametrize("version, expected", [("2.13", "fused"), ("2.10.0+cu128", "fused"), (None, "fused"),
                                               ("2.9.1", "eager"), ("2.5", "eager"), ("1.13", "eager")])
def test_default_norm_kernel_by_release(version, expected):
    assert default_norm_impl(version, "pytorch") == expected
    assert default_norm_impl(version, None) == "eager"  # unknown stack: the safe-side count
    assert default_norm_impl(version, "transformers") == "eager"  # its own Python RMSNorm


def test_release_parsing():
    assert torch_release("2.13.0+cu130") == (2, 13)
    assert torch_release("2.10.0a0") == (2, 10)


def test_current_torch_counts_the_fused_norm_for_pytorch_native_blocks():
    """12h bytes per token and block less than the composite: each of the two norms saves its 16-bit
    input (2h) + rstd instead of the fp32 input and normalised copies (8h) + rstd."""
    eager = activations(model_code="pytorch", torch_version="2.5")
    default = activations(model_code="pytorch")
    assert default == pytest.approx(activations(norm_impl="fused"))
    assert eager == pytest.approx(activations(norm_impl="eager"))
    assert (eager - default) * 2**30 == pytest.approx(12 * H * TOKENS * LAYERS, rel=0.02)


def test_an_unstated_stack_keeps_the_eager_count():
    assert activations() == pytest.approx(activations(norm_impl="eager"))
    assert activations(torch_version="2.13") == pytest.approx(activations(torch_version="2.5"))


def test_transformers_code_is_not_moved_by_the_release():
    assert activations(model_code="transformers") == pytest.approx(
        activations(model_code="transformers", torch_version="2.5"))


def test_a_stated_kernel_wins_over_the_release():
    assert activations(norm_impl="eager") == pytest.approx(activations(norm_impl="eager", torch_version="2.13"))


@pytest.mark.parametrize("bad", ["latest", "two", "2"])
def test_unreadable_release_is_a_setup_error(bad):
    problems = check_setup(TrainingSetup(**BASE, torch_version=bad))
    assert any(p.field == "torch_version" for p in problems)
