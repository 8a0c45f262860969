"""TrainingSetup validation/resolution and the model/GPU catalogs (bot/core/setup.py, bot/catalog.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.catalog import (
    UnknownNameError,
    generic_model,
    list_gpus,
    list_models,
    lookup_gpu,
    lookup_model,
)
from bot.core.setup import (
    DEFAULTS,
    LIMITS,
    SetupError,
    TrainingSetup,
    check_setup,
    resolve_setup,
    validate_setup,
)

# --- models ----------------------------------------------------------------------------------

# Published sizes (model cards / papers) as printed, with their decimals; the catalog derives
# its counts from the shapes, so they must round to the printed figure.
PUBLISHED = {
    "Llama-2-7B": "6.74",
    "Llama-2-70B": "69.0",
    "Llama-3.1-8B": "8.03",
    "Mistral-7B": "7.24",
    "Qwen2.5-7B": "7.62",
}


@pytest.mark.parametrize("name,printed", PUBLISHED.items())
def test_published_parameter_counts(name, printed):
    decimals = len(printed.split(".")[1])
    assert f"{lookup_model(name).params / 1e9:.{decimals}f}" == printed


def test_llama2_7b_exact_count():
    # 6,738,415,616 is the count Hugging Face reports for meta-llama/Llama-2-7b-hf.
    assert lookup_model("llama2-7b").params == 6_738_415_616


def test_every_catalog_model_matches_its_published_size_and_has_a_source():
    for model in list_models():
        assert model.source_url.startswith("http") or "github" in model.source_url
        if model.published_params_b is not None:
            # GPT-2 XL is sold as "1.5B" but has 1.558B: the rounding is the card's.
            assert model.params_b == pytest.approx(model.published_params_b, rel=0.04), model.name


@pytest.mark.parametrize("alias", ["llama2-7b", "Llama-2-7b-hf", "meta-llama/Llama-2-7b-hf", "LLAMA-2-7B",
                                   "llama2 7b"])
def test_model_aliases(alias):
    assert lookup_model(alias).name == "Llama-2-7B"


@pytest.mark.parametrize("alias,name", [("llama3.1-8b", "Llama-3.1-8B"), ("Qwen/Qwen2.5-7B", "Qwen2.5-7B"),
                                        ("mistral", "Mistral-7B"), ("gpt2-xl", "GPT-2 XL"),
                                        ("facebook/opt-6.7b", "OPT-6.7B")])
def test_other_aliases(alias, name):
    assert lookup_model(alias).name == name


@pytest.mark.parametrize("text,billions", [("7b", 7.0), ("350M", 0.35), ("70B", 70.0), ("1.3b", 1.3)])
def test_bare_sizes_give_an_approximate_generic_model(text, billions):
    model = lookup_model(text)
    assert model.approximate
    assert model.params_b == pytest.approx(billions, rel=0.05)


def test_unknown_model_suggests_close_names():
    with pytest.raises(UnknownNameError) as err:
        lookup_model("lama2-7b")
    assert "Llama-2-7B" in err.value.suggestions
    assert "Did you mean" in str(err.value)


@pytest.mark.parametrize("text", ["zzzz", "", "x" * 5000, "'; DROP TABLE models; --"])
def test_nonsense_model_names_raise_cleanly(text):
    with pytest.raises(UnknownNameError) as err:
        lookup_model(text)
    assert err.value.kind == "model"


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=0.05, max_value=2000))
def test_generic_model_hits_the_requested_size(billions):
    assert generic_model(billions).params_b == pytest.approx(billions, rel=0.06)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_generic_model_rejects_non_positive(bad):
    with pytest.raises(ValueError):
        generic_model(bad)


# --- GPUs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("alias,name", [("a100-80gb", "A100 80GB SXM"), ("A100 80G", "A100 80GB SXM"),
                                        ("4090", "RTX 4090 24GB"), ("NVIDIA H100", "H100 80GB SXM"),
                                        ("h100 pcie", "H100 80GB PCIe"), ("H800", "H800 80GB SXM"),
                                        ("a800", "A800 80GB SXM"), ("v100", "V100 32GB SXM2")])
def test_gpu_aliases(alias, name):
    assert lookup_gpu(alias).name == name


def test_every_gpu_has_figures_and_a_source():
    for gpu in list_gpus():
        assert gpu.source_url.startswith("http"), gpu.name
        assert gpu.memory_gb > 0 and gpu.bf16_tflops > 0 and gpu.intra_link_gb_s > 0 and gpu.hbm_tb_s > 0
        assert gpu.intra_link in ("nvlink", "pcie")


def test_unknown_gpu_suggests_close_names():
    with pytest.raises(UnknownNameError) as err:
        lookup_gpu("a1000")
    assert any(s.startswith("A100") for s in err.value.suggestions)
    with pytest.raises(UnknownNameError) as err:
        lookup_gpu("xyz")
    assert err.value.suggestions == []


# --- check_setup: every validation path -------------------------------------------------------


@pytest.mark.parametrize("field", sorted(LIMITS))
def test_non_positive_values_are_rejected(field):
    value = 0 if field not in ("params_b", "gpu_memory_gb", "inter_node_gbps", "cpu_ram_gb") else -1.0
    problems = check_setup(TrainingSetup(**{field: value}))
    assert [p.field for p in problems] == [field]
    assert "must be positive" in problems[0].message


@pytest.mark.parametrize("field", sorted(LIMITS))
def test_absurd_values_are_rejected(field):
    high = LIMITS[field][1]
    value = type(getattr(TrainingSetup(**{field: 1}), field))(high * 10)
    problems = check_setup(TrainingSetup(**{field: value}))
    assert [p.field for p in problems] == [field]
    assert "plausible range" in problems[0].message


def test_ten_million_gpus_is_absurd():
    assert [p.field for p in check_setup(TrainingSetup(gpu_count=10**7))] == ["gpu_count"]


def test_gpu_count_contradicting_nodes_times_per_node():
    problems = check_setup(TrainingSetup(gpu_count=8, nodes=2, gpus_per_node=8))
    assert [p.field for p in problems] == ["gpu_count"]
    assert "2 nodes x 8" in problems[0].message


def test_more_nodes_than_gpus():
    problems = check_setup(TrainingSetup(gpu_count=2, nodes=4))
    assert "nodes" in [p.field for p in problems]


def test_params_contradicting_the_named_model():
    problems = check_setup(TrainingSetup(model="llama2-7b", params_b=70))
    assert [p.field for p in problems] == ["params_b"]
    assert check_setup(TrainingSetup(model="llama2-7b", params_b=7)) == []


def test_gpu_memory_contradicting_the_named_gpu():
    problems = check_setup(TrainingSetup(gpu="a100-80gb", gpu_memory_gb=40))
    assert [p.field for p in problems] == ["gpu_memory_gb"]


def test_bf16_on_v100_is_rejected():
    problems = check_setup(TrainingSetup(gpu="v100", precision="bf16-mixed"))
    assert [p.field for p in problems] == ["precision"]
    assert check_setup(TrainingSetup(gpu="v100", precision="fp16-mixed")) == []


def test_unknown_names_become_problems():
    problems = check_setup(TrainingSetup(model="lama2-7b", gpu="a1000"))
    assert {p.field for p in problems} == {"model", "gpu"}
    assert all("Did you mean" in p.message for p in problems)


def test_validate_setup_reports_type_errors_and_unknown_fields():
    with pytest.raises(SetupError) as err:
        validate_setup({"gpu_count": "many", "precision": "fp8", "colour": "red"})
    fields = {p.field for p in err.value.problems}
    assert {"gpu_count", "precision", "colour"} <= fields
    with pytest.raises(SetupError):
        validate_setup({"gpu_count": -1})
    assert validate_setup({"model": "llama2-7b", "gpu_count": 8}).gpu_count == 8


def test_merged_keeps_old_fields_and_takes_new_ones():
    merged = TrainingSetup(model="llama2-7b", gpu_count=8).merged(TrainingSetup(gpu_count=16, gpu="h100"))
    assert (merged.model, merged.gpu_count, merged.gpu) == ("llama2-7b", 16, "h100")


# --- resolve_setup -----------------------------------------------------------------------------


def test_resolve_fills_defaults_and_lists_them():
    r = resolve_setup(TrainingSetup(model="llama2-7b", gpu="a100-80gb", gpu_count=8))
    for key, value in DEFAULTS.items():
        assert getattr(r.setup, key) == value
        assert key in r.assumed
    assert (r.nodes, r.gpus_per_node, r.gpu_memory_gb) == (1, 8, 80.0)
    assert r.intra_node_link == "nvlink" and r.inter_node_link == "none"


def test_resolve_multi_node_defaults_to_infiniband():
    r = resolve_setup(TrainingSetup(model="llama2-7b", gpu="h100", gpu_count=16, nodes=2))
    # an 8-GPU H100 node is DGX-class: 8 x 400 Gb/s NICs (issue 26), not one 200 Gb/s link
    assert (r.nodes, r.gpus_per_node, r.inter_node_link, r.inter_node_gbps) == (2, 8, "infiniband", 3200.0)
    assert "inter_node_gbps" in r.assumed


def test_resolve_uses_stated_links():
    r = resolve_setup(TrainingSetup(params_b=7, gpu_memory_gb=24, gpu_count=4, nodes=2,
                                    inter_node_link="ethernet", inter_node_gbps=25, intra_node_link="pcie"))
    assert r.model.approximate and r.gpu is None
    assert (r.inter_node_link, r.inter_node_gbps, r.intra_node_link) == ("ethernet", 25.0, "pcie")


@pytest.mark.parametrize("setup,field", [
    (TrainingSetup(gpu="a100", gpu_count=8), "params_b"),
    (TrainingSetup(model="llama2-7b", gpu_count=8), "gpu_memory_gb"),
    (TrainingSetup(model="llama2-7b", gpu="a100"), "gpu_count"),
    (TrainingSetup(model="llama2-7b", gpu="a100", gpu_count=8, nodes=3), "gpu_count"),
    (TrainingSetup(model="llama2-7b", gpu="a100", gpu_count=-8), "gpu_count"),
])
def test_resolve_refuses_what_it_cannot_compute(setup, field):
    with pytest.raises(SetupError) as err:
        resolve_setup(setup)
    assert field in [p.field for p in err.value.problems]


def test_resolve_defaults_for_gpu_and_count():
    r = resolve_setup(TrainingSetup(model="7b"), default_gpu="a100-80gb", default_gpu_count=8)
    assert r.gpu.name == "A100 80GB SXM" and r.gpu_count == 8
    assert {"gpu", "gpu_count"} <= set(r.assumed)


def test_generic_model_takes_params_b_over_a_bare_size_name():
    r = resolve_setup(TrainingSetup(model="7b", params_b=6.5, gpu_memory_gb=80, gpu_count=1))
    assert r.model.params_b == pytest.approx(6.5, rel=0.05)


def test_many_gpus_without_a_layout_span_nodes_of_eight():
    r = resolve_setup(TrainingSetup(model="7b", gpu="a100", gpu_count=64))
    assert (r.nodes, r.gpus_per_node, r.inter_node_link) == (8, 8, "infiniband")
    assert {"nodes", "gpus_per_node"} <= set(r.assumed)
    one = resolve_setup(TrainingSetup(model="7b", gpu="a100", gpu_count=8))
    assert (one.nodes, one.gpus_per_node) == (1, 8) and "nodes" not in one.assumed
    stated = resolve_setup(TrainingSetup(model="7b", gpu="a100", gpu_count=16, nodes=1))
    assert (stated.nodes, stated.gpus_per_node) == (1, 16)


# --- cards without bf16, cards the catalog lacks (issue 13) ------------------------------------


@pytest.mark.parametrize("card", ["v100", "T4", "V100 16GB"])
def test_cards_without_bf16_default_to_fp16_mixed(card):
    r = resolve_setup(TrainingSetup(model="llama2-7b", gpu=card, gpu_count=8))
    assert r.setup.precision == "fp16-mixed" and "precision" in r.assumed
    stated = resolve_setup(TrainingSetup(model="llama2-7b", gpu=card, gpu_count=8, precision="fp32"))
    assert stated.setup.precision == "fp32"


def test_bf16_cards_keep_the_bf16_default():
    assert resolve_setup(TrainingSetup(model="llama2-7b", gpu="a100", gpu_count=8)).setup.precision == "bf16-mixed"


def test_a_card_the_catalog_lacks_is_used_with_its_stated_memory():
    setup = TrainingSetup(model="llama2-7b", gpu="Moore Threads S4000", gpu_memory_gb=48, gpu_count=8)
    assert check_setup(setup) == []
    r = resolve_setup(setup)
    assert r.gpu.approximate and r.gpu_memory_gb == 48 and "not in catalog" in r.gpu.name
    # Without its memory it stays an unknown name with suggestions.
    assert [p.field for p in check_setup(TrainingSetup(gpu="Moore Threads S4000"))] == ["gpu"]


@pytest.mark.parametrize("model,total,active", [("Mixtral-8x7B", 46.7, 12.9), ("Qwen3-30B-A3B", 30.5, 3.35)])
def test_moe_models_resolve_with_total_and_active_counts(model, total, active):
    r = resolve_setup(TrainingSetup(model=model, gpu="h100", gpu_count=8))
    assert r.model.params_b == pytest.approx(total, rel=0.01)
    assert r.model.active_params_b == pytest.approx(active, rel=0.01)
