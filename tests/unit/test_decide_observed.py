"""The ladder when the user reports what happened (bot/decide.py, docs/decision.md "Reported
out-of-memory"), the fixes it offers, and the properties every decision keeps: the recommended row
always fits, a reported OOM never comes back as the recommendation, the table and the what-ifs
name the same verdict-flipping knobs. Also the answers without a training setup: concept
questions from the docs, serving questions out of scope with their figures."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.setup import SetupError, TrainingSetup, resolve_setup
from bot.decide import GPU_RESIDENT, decide, fits_with_margin, flipped_base
from bot.evidence import CKPT, OPT8, QLORA, build_evidence, evidence_for_resolved
from bot.parse import Parsed
from bot.understand import Observed


def evidence(observed: Observed | None = None, **fields):
    """Evidence for ``fields`` as the user stated them (unstated fields stay None in the parsed
    setup, as the reader leaves them), with what the user reported."""
    ev = evidence_for_resolved(resolve_setup(TrainingSetup(**fields)))
    ev.parsed = Parsed(setup=TrainingSetup(**fields), language="en", observed=observed or Observed())
    return ev


def codes(reasons) -> set[str]:
    return {r.code for r in reasons}


def test_a_thin_fit_is_not_recommended_after_a_real_oom():
    # Falcon-40B-class LoRA on one 80 GB card (litgpt#165): with checkpointing DDP fits only
    # without a margin. Find such a size first, so a calculator change cannot make this vacuous.
    for params_b in (37, 38, 39, 40, 40.5):
        fields = dict(params_b=params_b, gpu="A100 80GB SXM", gpu_count=1, finetune="lora", micro_batch=1)
        plain = evidence(**fields)
        gpu_rows = [c for c in plain.configs if c.strategy == "ddp"]
        if not any(fits_with_margin(c) for c in gpu_rows) and any(c.fits for c in gpu_rows):
            break
    else:
        pytest.fail("no size between 37B and 40.5B fits DDP only without a margin")
    before = decide(plain)
    assert before.strategy == "ddp" and "tight" in codes(before.reasons)  # no OOM reported: thin but ok
    d = decide(evidence(Observed(oom=True), **fields))
    assert d.strategy in ("none", "fsdp_full_shard_offload")
    assert "thin_after_oom" in codes(d.reasons)
    assert d.chosen is None or fits_with_margin(d.chosen)


def test_a_named_oom_strategy_with_unstated_checkpointing_yields_to_an_untried_one():
    # ZeRO-2 ran out of memory at 4k context on 8 x A100 40GB (DeepSpeed#3901); the user did not
    # say whether checkpointing was on, so SHARD_GRAD_OP + checkpointing is not the answer while
    # another strategy fits.
    fields = dict(params_b=7, gpu="A100 40GB SXM", gpu_count=8, seq_len=4096)
    ev = evidence(Observed(oom=True, zero_stage=2), **fields)
    others = [c for c in ev.configs if c.strategy in GPU_RESIDENT and c.strategy != "fsdp_shard_grad_op"
              and fits_with_margin(c)]
    assert others, "precondition: another strategy fits with a margin"
    d = decide(ev)
    assert d.strategy != "fsdp_shard_grad_op" and d.chosen in others
    oom = [r for r in d.reasons if r.code == "observed_oom"]
    assert oom and oom[0].values["any_checkpointing"] is True
    assert oom[0].values["stage"] == 2  # worded in the user's terms: "ZeRO-2 (i.e. FSDP grad-op)"
    # ... and no what-if offers it back ("with checkpointing, FSDP shard grad-op fits")
    offered = [w.values["config"].strategy for w in d.what_ifs if w.code == "knob_flips"]
    assert "fsdp_shard_grad_op" not in offered
    assert any(c.strategy == "fsdp_shard_grad_op" and flipped_base(ev, c) is not None for c in d.rows)


def test_a_stated_checkpointing_off_keeps_its_checkpointing_variant_as_the_fix():
    fields = dict(params_b=7, gpu="A100 40GB SXM", gpu_count=8, seq_len=4096, activation_checkpointing=False)
    d = decide(evidence(Observed(oom=True, zero_stage=2), **fields))
    oom = [r for r in d.reasons if r.code == "observed_oom"]
    assert oom and oom[0].values["any_checkpointing"] is False
    assert not (d.strategy == "fsdp_shard_grad_op" and d.variant == "")


def test_the_named_strategy_with_checkpointing_is_the_fallback_when_nothing_else_fits():
    # 72B full fine-tune with ZeRO-3 on 4 x 8 A800 80GB (Qwen#755): only full shard fits (with
    # checkpointing); it stays the recommendation.
    fields = dict(params_b=72, gpu="A800 80GB SXM", nodes=4, gpus_per_node=8, gpu_count=32,
                  inter_node_link="infiniband")
    ev = evidence(Observed(oom=True, zero_stage=3), **fields)
    fitting = {c.strategy for c in ev.configs if c.strategy in GPU_RESIDENT and c.fits}
    if fitting != {"fsdp_full_shard"}:
        pytest.skip(f"the calculator now fits {fitting}: not the fallback branch")
    d = decide(ev)
    assert d.strategy == "fsdp_full_shard" and d.variant == CKPT


def test_after_zero3_runs_out_nothing_that_holds_more_is_recommended():
    # Qwen#634: 14B full fine-tune, 4 x 8 A800 80GB, ZeRO-3 "still runs out of memory"; the
    # sequence length (16k in the thread) is not given as a setting. At the assumed 2048 tokens
    # ZeRO-3 needs a third of the card, so the OOM says the run was bigger than assumed; ZeRO-2
    # and HSDP keep more per GPU with the same activations and would run out too.
    fields = dict(params_b=14, gpu="A800 80GB SXM", nodes=4, gpus_per_node=8, gpu_count=32)
    ev = evidence(Observed(oom=True, zero_stage=3), **fields)
    full = ev.config("fsdp_full_shard")
    assert full is not None and fits_with_margin(full), "precondition: the estimate says ZeRO-3 fits"
    d = decide(ev)
    assert (d.strategy, d.variant) == ("fsdp_full_shard", CKPT)  # the most headroom: turn checkpointing on
    assert d.alternatives == [] and d.confidence != "high"
    dominated = next(r for r in d.reasons if r.code == "oom_dominated")
    assert set(dominated.values["others"]) == {"fsdp_shard_grad_op", "fsdp_hybrid_shard"}
    unexplained = next(r for r in d.reasons if r.code == "oom_unexplained")
    assert unexplained.values["config"] is full and unexplained.values["assumed"] == ["seq_len", "micro_batch"]
    assert {"seq_len", "micro_batch"} <= set(d.questions)


def test_an_unexplained_oom_puts_the_checkpointing_rows_first():
    # The shape of DeepSpeedExamples#411 before the calculator knew BLOOM's eager attention: a 7B
    # LoRA at micro-batch 4 x 2048 on 4 x A100 80GB ran out with ZeRO-0 (DDP) and no checkpointing
    # while the estimate says DDP fits with room to spare. The estimate has missed the real peak, so
    # the fix the maintainer gave (checkpointing) goes first.
    fields = dict(model="Llama-2-7B", gpu="A100 80GB SXM", gpu_count=4, finetune="lora", lora_rank=128,
                  seq_len=2048, micro_batch=4, activation_checkpointing=False)
    ev = evidence(Observed(oom=True, zero_stage=0), **fields)
    ddp = ev.config("ddp")
    assert ddp is not None and fits_with_margin(ddp), "precondition: the estimate says DDP fits"
    faster = [c for c in ev.configs if c.strategy in GPU_RESIDENT and c.variant == "" and c.strategy != "ddp"
              and fits_with_margin(c)]
    assert faster, "precondition: an uncheckpointed row fits and would win on throughput"
    d = decide(ev)
    assert (d.strategy, d.variant) == ("ddp", CKPT)
    assert {"oom_unexplained", "needs_checkpointing"} <= codes(d.reasons)
    assert next(r for r in d.reasons if r.code == "throughput").values["among"] == "checkpointing"


def test_an_oom_the_stated_setup_explains_asks_nothing_more():
    # The same report with the sizes stated and large enough that ZeRO-3 does not fit with a margin
    # (32k tokens, micro-batch 4, no checkpointing): nothing is unexplained, nothing is asked.
    fields = dict(params_b=14, gpu="A800 80GB SXM", nodes=4, gpus_per_node=8, gpu_count=32,
                  seq_len=32768, micro_batch=4, activation_checkpointing=False)
    ev = evidence(Observed(oom=True, zero_stage=3), **fields)
    full = ev.config("fsdp_full_shard")
    assert full is not None and not fits_with_margin(full), "precondition: the estimate explains the OOM"
    d = decide(ev)
    assert "oom_unexplained" not in codes(d.reasons)
    assert "seq_len" not in d.questions


def test_qlora_is_offered_when_lora_does_not_fit():
    ev = evidence(params_b=70, gpu="A100 80GB SXM", gpu_count=1, finetune="lora", micro_batch=1)
    assert QLORA in ev.variants
    d = decide(ev)
    assert not any(c.fits for c in ev.configs if c.strategy == "ddp" and c.variant == "")
    fixes = [r for r in d.what_ifs if r.code == "finetune_fits"]
    assert fixes and fixes[0].values["finetune"] == "qlora"


def test_the_table_and_the_what_ifs_name_the_same_verdict_flipping_knobs():
    ev = evidence(params_b=7, gpu="RTX 4090 24GB", gpu_count=8, seq_len=4096)
    d = decide(ev)
    flipping = [c for c in d.rows if c is not d.chosen and flipped_base(ev, c) is not None]
    worded = [r.values["config"] for r in d.what_ifs if r.code == "knob_flips"]
    assert flipping == worded
    assert all(c in d.rows for c in ev.configs if flipped_base(ev, c) is not None)


setups = st.fixed_dictionaries({
    "params_b": st.sampled_from([0.5, 1, 7, 13, 34, 40, 70]),
    "gpu_memory_gb": st.sampled_from([16, 24, 40, 80]),
    "gpu_count": st.sampled_from([1, 2, 4, 8]),
    "seq_len": st.sampled_from([2048, 4096]),
    "finetune": st.sampled_from(["full", "lora", "qlora"]),
    "activation_checkpointing": st.sampled_from([None, False, True]),
})
reports = st.builds(Observed, oom=st.booleans(), zero_stage=st.sampled_from([None, 2, 3]),
                    fsdp_strategy=st.sampled_from([None, "fsdp_full_shard"]))


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setups, reports)
def test_the_recommended_row_always_fits_and_is_never_the_reported_oom(fields, observed):
    try:
        ev = evidence(observed, **fields)
    except SetupError:
        return
    d = decide(ev)
    reasons = codes(d.reasons)
    if d.chosen is not None:  # never a row that does not fit (unless at a smaller micro-batch, said)
        assert d.chosen.fits or ("accumulate" in reasons and d.chosen.max_micro_batch >= 1)
        assert d.strategy == d.chosen.strategy and d.variant == d.chosen.variant
        assert d.chosen in d.rows
        if ev.resolved.gpu_count == 1 and d.chosen.strategy in GPU_RESIDENT:  # nothing to shard across
            assert d.chosen.strategy == "ddp"
    else:
        assert d.strategy == "none"
    if observed.oom and "observed_oom" in reasons:  # the run that failed is not recommended as it ran
        ran = next(r.values["strategy"] for r in d.reasons if r.code == "observed_oom")
        assert not (d.strategy == ran and d.variant == "" and not ev.resolved.setup.activation_checkpointing)
    if observed.oom and d.chosen is not None and d.chosen.strategy in GPU_RESIDENT:
        assert fits_with_margin(d.chosen) or "accumulate" in reasons  # no thin fit after a real OOM
    if "observed_oom" in reasons and d.chosen is not None and d.chosen.strategy in GPU_RESIDENT:
        # nor a row holding at least as much as the run that failed, checkpointing set alike
        ran = next(r.values["strategy"] for r in d.reasons if r.code == "observed_oom")
        ckpt_as_run = bool(ev.resolved.setup.activation_checkpointing)
        if d.chosen.strategy != ran and d.chosen.variant == "" and not ckpt_as_run:
            as_run = ev.config(ran)
            assert as_run is None or d.chosen.total_gib < as_run.total_gib


def test_every_computed_answer_carries_the_ddp_rows_fit():
    from bot.compose import compose

    ev = evidence(params_b=13, gpu="A100 40GB SXM", gpu_count=4)
    a = compose(ev, decide(ev))
    assert a.numbers["memory.ddp.fits"] is False and "memory.fsdp_full_shard.fits" in a.numbers


@pytest.mark.parametrize("topics,compare,status", [
    (["zero_vs_fsdp", "fsdp1_vs_fsdp2"], (), "ok"),
    ([], ("ddp", "fsdp_full_shard"), "needs_info"),
])
def test_a_concept_question_without_setup_is_answered_from_the_docs(topics, compare, status):
    from bot.knowledge.answering import Passage

    parsed = Parsed(setup=TrainingSetup(), language="en", intent="recommend", topics=topics, compare=compare,
                    missing=["params_b", "gpu_memory_gb", "gpu_count"])
    ev = build_evidence(parsed, with_knowledge=False)
    ev.passages = [Passage(id="doc-x", kind="doc", title="t", url="https://example.org", lang="en",
                           quote="FSDP2 keeps parameters gathered after forward with reshard_after_forward=False.",
                           score=1.0)]
    d = decide(ev)
    assert d.status == status
    assert (d.questions == []) == (status == "ok")


@pytest.mark.parametrize("lang,words", [
    ("zh", ["张量并行", "vLLM", "int4", "量化"]),
    ("en", ["tensor parallelism", "vLLM", "INT4", "AWQ"]),
])
def test_a_serving_question_is_out_of_scope_with_weights_by_dtype(lang, words):
    from bot.compose import compose

    parsed = Parsed(setup=TrainingSetup(model="Llama-2-70B"), language=lang, intent="out_of_scope",
                    topics=["inference"], on_topic=False)
    ev = build_evidence(parsed, with_knowledge=False)
    a = compose(ev, decide(ev))
    assert a.status == "out_of_scope"
    for key in ("inference.weights_gib", "inference.kv_cache_gib", "inference.int8.weights_gib",
                "inference.int4.weights_gib"):
        assert key in a.numbers
    assert a.numbers["inference.int4.weights_gib"] == pytest.approx(a.numbers["inference.weights_gib"] / 4, rel=1e-3)
    for w in words:
        assert w in a.text, w


def test_an_out_of_scope_question_naming_a_model_gets_the_serving_figure():
    # "how much memory to run Qwen-72B?" is out of scope and has no "inference" word: the figure
    # people want is still the weights + KV cache; a TPU question gets the XLA pointer instead.
    from bot.compose import compose

    parsed = Parsed(setup=TrainingSetup(params_b=72), language="zh", intent="out_of_scope", on_topic=False)
    ev = build_evidence(parsed, with_knowledge=False)
    assert ev.inference is not None and set(ev.inference_quantized) == {"int8", "int4"}
    a = compose(ev, decide(ev))
    assert a.status == "out_of_scope" and "张量并行" in a.text and "inference.int4.total_gib" in a.numbers
    tpu = build_evidence(Parsed(setup=TrainingSetup(model="Llama-2-7B"), language="en", intent="out_of_scope",
                                on_topic=False), question="Train Llama-2-7B on TPU v4 with JAX?", with_knowledge=False)
    assert "XLA" in compose(tpu, decide(tpu)).text


@pytest.mark.parametrize("finetune,said", [("lora", True), ("full", False)])
def test_zero2_vs_zero3_under_lora_says_only_the_frozen_base_is_sharded(finetune, said):
    parsed = Parsed(setup=TrainingSetup(finetune=finetune, gpu_count=2, gpu_memory_gb=40), language="en",
                    intent="troubleshoot", compare=("fsdp_shard_grad_op", "fsdp_full_shard"),
                    missing=["params_b"])
    d = decide(build_evidence(parsed, with_knowledge=False))
    assert ("lora_sharding_gain" in codes(d.direct)) is said


def test_an_oom_the_estimate_also_predicts_says_so_with_its_figure():
    # DeepSpeedExamples#411 with BLOOM's eager attention counted: DDP at micro-batch 4 needs more
    # than the card by the estimate too, so the OOM sentence carries that figure.
    fields = dict(model="BLOOM-7B1", gpu="A100 80GB SXM", gpu_count=4, finetune="lora", lora_rank=128,
                  seq_len=2048, micro_batch=4, activation_checkpointing=False)
    d = decide(evidence(Observed(oom=True, zero_stage=0), **fields))
    oom = next(r for r in d.reasons if r.code == "observed_oom")
    assert oom.values["config"] is not None and not oom.values["config"].fits
    assert "oom_unexplained" not in codes(d.reasons)
    assert (d.strategy, d.variant) == ("ddp", CKPT)


def test_after_a_full_fine_tune_oom_the_8bit_optimizer_is_offered_with_its_figure():
    # LlamaFactory#4199: a 9B full fine-tune with ZeRO-3 on 4 x A40 48GB ran out of memory; the
    # maintainer's fix was an 8-bit optimizer (paged_adamw_8bit), which keeps full fine-tuning.
    fields = dict(params_b=9, gpu="A40 48GB", gpu_count=4, finetune="full")
    ev = evidence(Observed(oom=True, zero_stage=3), **fields)
    d = decide(ev)
    offer = next(r for r in d.what_ifs if r.code == "optimizer_8bit")
    s = offer.values["strategy"]
    assert ev.variants[OPT8].estimate.memory[s].total_gib < ev.estimate.memory[s].total_gib
    # not offered without an OOM when the setup fits, nor to an adapter run (no full moments)
    assert not any(r.code == "optimizer_8bit" for r in decide(evidence(**fields)).what_ifs)
    lora = evidence(Observed(oom=True, zero_stage=3), **{**fields, "finetune": "lora"})
    assert OPT8 not in lora.variants
