"""simulate: the model builder, the private torch APIs it relies on, figures, cache, bad input."""

from __future__ import annotations

import inspect
import json

import pytest
import torch
import torch.distributed as dist

from bot.bench.simulate import (
    GIB,
    STRATEGIES,
    SimConfig,
    SimError,
    breakdown,
    simulate,
    simulate_batch,
    simulate_cached,
)
from bot.bench.store import ResultStore
from bot.catalog import list_models, lookup_model

PARTS = ("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib")


@pytest.mark.slow  # builds every catalog model (~8 s): the unit run stays in minutes (issue 28)
def test_model_parameter_count_equals_catalog_for_every_model():
    from bot.bench.model import build_model, supports

    # On the meta device: the same modules and shapes with no storage and no initialisation
    # (FakeTensorMode ran every initialiser through its dispatcher: 16 s instead of 7 here).
    with torch.device("meta"):
        for spec in list_models():
            if supports(spec):
                continue  # built with transformers (tests/unit/test_catalog.py checks those counts)
            model = build_model(spec)
            assert sum(p.numel() for p in model.parameters()) == spec.params, spec.name


def test_tiny_model_trains_and_checkpointing_gives_the_same_gradients():
    from bot.bench.model import build_model, loss_fn

    spec = lookup_model("tiny")
    torch.manual_seed(0)
    model = build_model(spec)
    tokens = torch.randint(0, spec.vocab, (2, 33))
    loss = loss_fn(model(tokens[:, :-1]), tokens[:, 1:])
    assert 8.0 < loss.item() < 10.0  # about ln(8192) = 9.01 for an untrained model
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model.checkpoint_blocks = True
    loss_fn(model(tokens[:, :-1]), tokens[:, 1:]).backward()
    for before, p in zip(grads, model.parameters(), strict=True):
        torch.testing.assert_close(before, p.grad)


def test_private_torch_apis_still_look_the_way_simulate_uses_them():
    # If a torch upgrade changes any of these, simulate breaks: fail here, loudly, first.
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker, _FSDPRefType
    from torch.distributed._tools.mem_tracker import MemTracker, _MemRefType
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor
    from torch.nn.parallel import DistributedDataParallel
    from torch.testing._internal.distributed.fake_pg import FakeStore  # noqa: F401

    for method in ("reset_mod_stats", "get_tracker_snapshot", "track_external", "_update_peak_stats"):
        assert hasattr(MemTracker, method), method
    assert hasattr(FSDPMemTracker, "track_inputs")
    assert "_curr_mem_snap" in inspect.getsource(MemTracker.__init__)
    categories = {c.value for c in _FSDPRefType} | {c.value for c in _MemRefType}
    breakdown(dict.fromkeys(categories, GIB))  # raises SimError on a category we do not map
    params = inspect.signature(fully_shard).parameters
    assert {"mesh", "reshard_after_forward", "mp_policy", "offload_policy"} <= set(params)
    ddp = inspect.signature(DistributedDataParallel.__init__).parameters
    assert "init_sync" in ddp and hasattr(DistributedDataParallel, "register_comm_hook")
    assert "_local_tensor" in DTensor.__slots__  # simulate steps the optimizer on local shards


def test_breakdown_refuses_an_unknown_tracker_category():
    with pytest.raises(SimError, match="unknown category"):
        breakdown({"Sharded Param": 1, "Mystery": 2})


@pytest.mark.parametrize("bad, message", [
    (dict(model="llama9"), "unknown model"),
    (dict(strategy="zero4"), "unknown strategy"),
    (dict(strategy="none"), "unknown strategy"),
    (dict(gpu_count=0), "gpu_count"),
    (dict(gpu_count=-8), "gpu_count"),
    (dict(gpu_count=10**9), "gpu_count"),
    (dict(seq_len=0), "seq_len"),
    (dict(micro_batch=1.5), "micro_batch"),
    (dict(seq_len=4096, micro_batch=4096), "tokens per GPU"),
    (dict(model="gpt2", seq_len=4096), "learned positions"),
    (dict(strategy="fsdp_hybrid_shard", gpu_count=12, gpus_per_node=8), "multiple of"),
    (dict(optimizer="adam8bit"), "not simulated"),
    (dict(precision="int3"), "unknown precision"),
])
def test_bad_configs_are_refused_before_anything_starts(bad, message):
    cfg = SimConfig(**{**dict(model="tiny", gpu_count=2, strategy="ddp"), **bad})
    with pytest.raises(SimError, match=message):
        simulate(cfg)


def test_config_names_are_normalized_so_the_cache_key_matches():
    a = SimConfig("Llama-2-7b-hf", 8, "fsdp_full_shard", gpus_per_node=4)
    b = SimConfig("llama2-7b", 8, "fsdp_full_shard")
    assert a.normalized().model == "Llama-2-7B"
    assert a.key("2.13") == b.key("2.13") != b.key("2.14")
    assert SimConfig("1b", 8, "ddp").normalized().model == "1b"


def test_from_resolved_setup():
    from bot.core.setup import TrainingSetup, resolve_setup

    resolved = resolve_setup(TrainingSetup(model="llama2-7b", gpu="a100", gpu_count=16, gpus_per_node=8,
                                           seq_len=4096, activation_checkpointing=True))
    cfg = SimConfig.from_resolved(resolved, "fsdp_hybrid_shard")
    assert (cfg.model, cfg.gpu_count, cfg.gpus_per_node, cfg.seq_len) == ("Llama-2-7B", 16, 8, 4096)
    assert cfg.activation_checkpointing and cfg.precision == "bf16-mixed" and cfg.optimizer == "adamw"
    generic = SimConfig.from_resolved(resolve_setup(TrainingSetup(params_b=3, gpu_memory_gb=24, gpu_count=2)),
                                      "ddp")
    assert lookup_model(generic.model).approximate
    lora = resolve_setup(TrainingSetup(model="llama2-7b", gpu="a100", gpu_count=8, finetune="lora"))
    with pytest.raises(SimError, match="full fine-tuning only"):
        SimConfig.from_resolved(lora, "ddp")


@pytest.mark.slow
def test_every_strategy_on_tiny_has_the_exact_state_sizes():
    spec = lookup_model("tiny")
    full = spec.params * 4 / GIB  # fp32 master weights
    cfgs = [SimConfig("tiny", 4, s, gpus_per_node=2, seq_len=128) for s in STRATEGIES]
    cfgs.append(SimConfig("tiny", 4, "fsdp_full_shard", seq_len=128, micro_batch=8, activation_checkpointing=True))
    cfgs.append(SimConfig("tiny", 4, "fsdp_full_shard", seq_len=128, micro_batch=8))
    results = dict(zip(range(len(cfgs)), simulate_batch(cfgs), strict=True))
    for result in results.values():
        assert not isinstance(result, SimError), result
        assert sum(getattr(result, p) for p in PARTS) == pytest.approx(result.peak_gib, rel=1e-9)
    ddp, full_shard, grad_op, hybrid, offload, ckpt, no_ckpt = results.values()
    assert ddp.params_gib == pytest.approx(full, rel=1e-9)  # a whole replica per GPU
    assert ddp.buffers_gib >= full * 0.99  # DDP's gradient buckets are one more gradient copy
    assert full_shard.params_gib == pytest.approx(full / 4, rel=1e-9)  # 1/world of the params
    assert hybrid.params_gib == pytest.approx(full / 2, rel=1e-9)  # sharded over a node of 2
    assert offload.params_gib == offload.grads_gib == offload.optimizer_gib == 0
    assert offload.host_gib == pytest.approx(3 * full / 4, rel=0.01)  # params + 2 AdamW moments
    assert ddp.peak_gib > hybrid.peak_gib > full_shard.peak_gib > offload.peak_gib
    assert grad_op.peak_gib >= full_shard.peak_gib * 0.99
    assert ckpt.activations_gib < no_ckpt.activations_gib
    assert ckpt.peak_gib < no_ckpt.peak_gib


@pytest.mark.slow
def test_llama2_7b_full_shard_8_gpus_matches_the_measured_range():
    # Measured on this machine with torch 2.13 (see docs/bench.md): about 24 GiB;
    # params are exactly 6.74e9 * 4 bytes / 8 GPUs.
    result = simulate(SimConfig("llama2-7b", 8, "fsdp_full_shard", seq_len=2048, micro_batch=1))
    assert 20 <= result.peak_gib <= 27
    assert result.params_gib == pytest.approx(lookup_model("llama2-7b").params * 4 / 8 / GIB, rel=1e-3)
    assert sum(getattr(result, p) for p in PARTS) == pytest.approx(result.peak_gib, rel=1e-9)
    assert result.activations_gib > 5  # the peak is in backward, with the saved activations
    assert not dist.is_initialized()  # the fake process group lived only in the child
    assert torch.get_default_dtype() == torch.float32


@pytest.mark.slow
def test_simulate_cached_serves_the_store_and_force_simulates_again(tmp_path):
    store = ResultStore(tmp_path / "bench.sqlite")
    cfg = SimConfig("tiny", 2, "fsdp_shard_grad_op", seq_len=64)
    seen = []
    run_id, first = simulate_cached(cfg, store=store, progress=lambda m, f: seen.append((m, f)))
    assert run_id.startswith("run-") and len(run_id) == 16 and first.run_id == run_id
    assert seen and all(0 <= f <= 1 for _, f in seen)
    again_id, again = simulate_cached(SimConfig("tiny-llama", 2, "fsdp_shard_grad_op", seq_len=64), store=store)
    assert again_id == run_id and again.peak_gib == first.peak_gib and again.config == first.config
    forced_id, forced = simulate_cached(cfg, store=store, force=True)
    # The store keeps one ok row per config (upsert since the hardening pass): forcing replaces it.
    assert forced_id.startswith("run-") and forced.peak_gib == pytest.approx(first.peak_gib)
    assert len([r for r in store.list("simulate") if r.status == "ok"]) == 1
    stored = store.get(run_id)
    assert stored.kind == "simulate" and stored.status == "ok" and "peak" in stored.summary()


def test_a_simulation_that_overruns_its_timeout_is_stopped():
    with pytest.raises(SimError, match="timed out"):
        simulate(SimConfig("llama2-7b", 8, "fsdp_full_shard"), timeout=1)
    import multiprocessing

    assert not [p for p in multiprocessing.active_children() if p.name == "shardwise-simulate"]


# --- models from a Hugging Face config (issue 13) ------------------------------------------------


def _tiny_configs() -> dict[str, dict]:
    """Small configs of the architectures simulate builds with transformers or its MoE block."""
    return {
        "bert": {"model_type": "bert", "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "intermediate_size": 256, "vocab_size": 1000, "max_position_embeddings": 256, "type_vocab_size": 2},
        "t5": {"model_type": "t5", "d_model": 128, "d_kv": 32, "d_ff": 256, "num_layers": 2, "num_heads": 4,
               "vocab_size": 1000, "feed_forward_proj": "relu"},
        "qwen3_moe": {"model_type": "qwen3_moe", "hidden_size": 128, "num_hidden_layers": 2,
                      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "intermediate_size": 256,
                      "moe_intermediate_size": 64, "num_experts": 8, "num_experts_per_tok": 2, "vocab_size": 1000},
        "deepseek_v2": {"model_type": "deepseek_v2", "hidden_size": 128, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 256,
                        "moe_intermediate_size": 64, "n_routed_experts": 8, "n_shared_experts": 1,
                        "num_experts_per_tok": 2, "first_k_dense_replace": 1, "kv_lora_rank": 32,
                        "q_lora_rank": None, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
                        "head_dim": 16, "vocab_size": 1000, "n_group": 1, "topk_group": 1},
    }


@pytest.mark.slow
def test_configs_simulate_with_transformers_and_shard_their_states_exactly():
    from bot.catalog.hf_config import model_from_hf_config

    cfgs = [SimConfig.from_hf_config(c, gpu_count=4, strategy="fsdp_full_shard", seq_len=64, micro_batch=2)
            for c in _tiny_configs().values()]
    results = simulate_batch(cfgs)
    for cfg, result in zip(cfgs, results, strict=True):
        assert not isinstance(result, SimError), result
        spec = model_from_hf_config(json.loads(cfg.hf_config))
        # FSDP shards every parameter (experts included) over the 4 GPUs: fp32 master weights.
        assert result.params_gib == pytest.approx(spec.params * 4 / 4 / GIB, rel=0.02), cfg.model
        assert result.peak_gib > result.params_gib
        assert sum(getattr(result, p) for p in PARTS) == pytest.approx(result.peak_gib, rel=1e-9)


def test_a_config_in_simulate_is_validated_and_keyed_by_its_content():
    cfg = SimConfig.from_hf_config(_tiny_configs()["bert"], gpu_count=2, strategy="ddp", seq_len=64)
    other = SimConfig.from_hf_config({**_tiny_configs()["bert"], "num_hidden_layers": 3}, gpu_count=2,
                                     strategy="ddp", seq_len=64)
    assert cfg.key("x") != other.key("x")
    with pytest.raises(SimError, match="learned positions"):
        SimConfig.from_hf_config(_tiny_configs()["bert"], gpu_count=2, strategy="ddp", seq_len=1024).normalized()
    with pytest.raises(SimError, match="not valid JSON"):
        SimConfig.from_hf_config("{oops", gpu_count=2, strategy="ddp")
    with pytest.raises(SimError, match="approximate"):
        SimConfig("FLUX.1-dev", 2, "ddp").normalized()


def test_the_moe_block_has_the_catalog_count_and_trains():
    from bot.bench.model import build_model, loss_fn
    from bot.catalog import ModelSpec

    spec = ModelSpec("tiny-moe", "llama", 2, 64, 128, 4, 2, 500, kind="moe", n_experts=4, experts_per_token=2,
                     moe_intermediate=32, n_shared_experts=1, first_k_dense=1)
    torch.manual_seed(0)
    model = build_model(spec)
    assert sum(p.numel() for p in model.parameters()) == spec.params
    tokens = torch.randint(0, spec.vocab, (2, 17))
    loss = loss_fn(model(tokens[:, :-1]), tokens[:, 1:])
    loss.backward()
    assert model.layers[1].mlp.w_gate.grad is not None and torch.isfinite(loss)


@pytest.mark.slow
def test_cli_simulates_a_config_folder(tmp_path):
    from click.testing import CliRunner

    from bot.bench.cli import bench

    (tmp_path / "config.json").write_text(json.dumps(_tiny_configs()["qwen3_moe"]))
    runner = CliRunner()
    out = runner.invoke(bench, ["simulate", "--config", str(tmp_path), "--gpus", "2", "--seq-len", "64", "--json"],
                        env={"SHARDWISE_DATA_DIR": str(tmp_path / "data")})
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["config"]["model"] == tmp_path.name and data["peak_gib"] > 0
    both = runner.invoke(bench, ["simulate", "--config", str(tmp_path), "--model", "tiny", "--gpus", "2"])
    assert both.exit_code != 0 and "either --model or --config" in both.output
    bad = runner.invoke(bench, ["simulate", "--config", str(tmp_path / "nope.json"), "--gpus", "2"])
    assert bad.exit_code != 0 and "no file" in bad.output


def test_catalog_configs_keep_the_cache_key_they_had_before_hf_configs():
    import hashlib
    from dataclasses import asdict

    from bot.bench.simulate import RUN_OPTION_DEFAULTS, SIM_METHOD_VERSION

    cfg = SimConfig("tiny", 4, "fsdp_full_shard", seq_len=128)
    old = {k: v for k, v in asdict(cfg.normalized()).items()
           if k not in ("hf_config", *RUN_OPTION_DEFAULTS)}  # run options at their defaults stay out
    payload = json.dumps({"config": old, "torch": "t", "method": SIM_METHOD_VERSION}, sort_keys=True)
    assert cfg.key("t") == hashlib.sha256(payload.encode()).hexdigest()
    # A catalog entry built with transformers (BERT) is keyed with the transformers method version.
    assert SimConfig("BERT-base", 4, "ddp", seq_len=128).key("t") != SimConfig("GPT-2", 4, "ddp", seq_len=128).key("t")


def test_cli_with_a_hub_id_offline_says_what_to_do(tmp_path):
    from click.testing import CliRunner

    from bot.bench.cli import bench
    from bot.catalog.hf_config import OFFLINE_MESSAGE

    out = CliRunner().invoke(bench, ["simulate", "--config", "Qwen/Qwen3-30B-A3B", "--gpus", "8"],
                             env={"SHARDWISE_DATA_DIR": str(tmp_path)})
    assert out.exit_code != 0 and OFFLINE_MESSAGE in out.output
