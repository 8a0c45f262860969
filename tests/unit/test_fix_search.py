"""The combined what-if search (bot/fix_search.py; issue 25 "fixes combined, not one at a time"):
the cost order, the search over fakes (no single change fits but a pair does; only offload fits
with the host RAM unknown; nothing fits), and the answers the real calculator's setups get, in
both languages: the cheapest combination with its figure, a question for the host RAM, and
"nothing fits" only when no combination does."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bot.calc import estimate
from bot.compose import compose
from bot.core.setup import TrainingSetup, resolve_setup
from bot.decide import Code, decide
from bot.evidence import _variant, evidence_for_resolved
from bot.fix_search import CHANGE_RANK, combinations, cost_key, search_fixes
from bot.render import question_text

# --------------------------------------------------------------------------------------------
# The cost order
# --------------------------------------------------------------------------------------------


def test_a_change_costs_more_than_any_number_of_cheaper_ones():
    assert cost_key(("checkpointing", "accumulate", "chunked_loss", "optimizer_8bit")) < cost_key(("lora",))
    assert cost_key(("lora",)) < cost_key(("lora", "checkpointing"))  # a superset costs more
    assert cost_key(("qlora", "checkpointing")) < cost_key(("offload",)) < cost_key(("more_gpus",))
    ordered = combinations(CHANGE_RANK)
    assert ordered[0] == ("checkpointing",)
    assert all(cost_key(a) <= cost_key(b) for a, b in zip(ordered, ordered[1:], strict=False))
    # one fine-tuning mode at a time; an 8-bit optimizer is for the full model's moments only
    assert not any({"lora", "qlora"} <= set(c) or {"optimizer_8bit", "lora"} <= set(c) for c in ordered)


# --------------------------------------------------------------------------------------------
# The search over a fake calculator
# --------------------------------------------------------------------------------------------

USABLE = 60.0


def fake_calculator(need: float, savings: dict[str, float], offload_fits: bool = False):
    """A resolve/estimate pair: each change (as the setup fields it sets) takes its saving off
    ``need`` GiB per GPU; CPU offload fits only when ``offload_fits``."""
    def resolve(changes):
        return SimpleNamespace(changes=dict(changes), gpu_count=changes.get("gpu_count", 2), nodes=1)

    def field_savings(ch) -> float:
        total = savings.get("checkpointing", 0) if ch.get("activation_checkpointing") else 0
        total += savings.get("optimizer_8bit", 0) if ch.get("optimizer") == "adam8bit" else 0
        total += savings.get(ch.get("finetune"), 0) if ch.get("finetune") else 0
        total += savings.get("chunked_loss", 0) if ch.get("loss_impl") == "chunked" else 0
        return total

    def est(r):
        total = need - field_savings(r.changes)
        gpu = SimpleNamespace(fits=total <= USABLE, total_gib=total, usable_gib=USABLE, max_micro_batch=0,
                              host_ram_gib=0.0)
        off = SimpleNamespace(fits=offload_fits, total_gib=10.0, usable_gib=USABLE, max_micro_batch=0,
                              host_ram_gib=300.0)
        return SimpleNamespace(memory={"ddp": gpu, "fsdp_shard_grad_op": gpu, "fsdp_full_shard": gpu,
                                       "fsdp_hybrid_shard": gpu, "fsdp_full_shard_offload": off})
    return resolve, est


def asked(**fields):
    return resolve_setup(TrainingSetup(params_b=13, gpu="A100 40GB SXM", gpu_count=2, micro_batch=1, **fields))


def test_no_single_change_fits_but_a_pair_does():
    resolve, est = fake_calculator(100, {"checkpointing": 30, "optimizer_8bit": 25, "lora": 35, "qlora": 38})
    found = search_fixes(asked(cpu_ram_gb=64), resolve, est, lambda n: None)
    assert found.fix is not None
    # each alone leaves 62-75 GiB of 60; checkpointing + the 8-bit optimizer leave 45 (and are
    # cheaper than checkpointing + LoRA, which changes what is trained)
    assert found.fix.changes == ("checkpointing", "optimizer_8bit")
    assert found.fix.total_gib == 45
    assert found.numbers["fix.memory.ddp.total_gib"] == 45


def test_only_offload_fits_with_the_host_ram_unknown():
    resolve, est = fake_calculator(100, {"checkpointing": 5}, offload_fits=True)
    found = search_fixes(asked(), resolve, est, lambda n: {"gpu_count": n, "gpus_per_node": n, "nodes": 1})
    assert found.fix is not None and found.fix.changes == ("offload",)  # cheaper than more GPUs
    assert found.fix.host_ram_unknown
    assert found.numbers["fix.memory.fsdp_full_shard_offload.host_ram_gib"] == 300.0
    stated = search_fixes(asked(cpu_ram_gb=512), resolve, est, lambda n: None)
    assert stated.fix is not None and not stated.fix.host_ram_unknown


def test_nothing_fits_when_no_combination_does():
    resolve, est = fake_calculator(1000, {"checkpointing": 30, "lora": 300})
    found = search_fixes(asked(), resolve, est, lambda n: {"gpu_count": n, "gpus_per_node": 8, "nodes": 1})
    assert found.fix is None and found.numbers == {}
    assert {"checkpointing", "lora", "offload", "more_gpus"} <= set(found.tried)


def test_more_gpus_takes_the_fewest_gpus_then_the_cheapest_companions():
    # with more GPUs the need drops with the count: 2 -> 100, 4 -> 50 (with checkpointing 20 off)
    def resolve(changes):
        return SimpleNamespace(changes=dict(changes), gpu_count=changes.get("gpu_count", 2), nodes=1)

    def est(r):
        total = 200 / r.gpu_count - (20 if r.changes.get("activation_checkpointing") else 0)
        m = SimpleNamespace(fits=total <= 35, total_gib=total, usable_gib=USABLE, max_micro_batch=0, host_ram_gib=0.0)
        off = SimpleNamespace(fits=False, total_gib=1.0, usable_gib=USABLE, max_micro_batch=0, host_ram_gib=0.0)
        return SimpleNamespace(memory={s: m for s in ("ddp", "fsdp_shard_grad_op", "fsdp_full_shard",
                                                      "fsdp_hybrid_shard")} | {"fsdp_full_shard_offload": off})

    found = search_fixes(asked(), resolve, est, lambda n: {"gpu_count": n, "gpus_per_node": n, "nodes": 1})
    assert found.fix is not None
    assert (found.fix.changes, found.fix.gpu_count) == (("checkpointing", "more_gpus"), 4)
    assert found.numbers["fix.gpu_count"] == 4


# --------------------------------------------------------------------------------------------
# Answers on the real calculator
# --------------------------------------------------------------------------------------------


def answer_for(lang: str, **fields):
    ev = evidence_for_resolved(resolve_setup(TrainingSetup(**fields)), language=lang)
    d = decide(ev)
    return ev, d, compose(ev, d)


PAIR = dict(params_b=13, gpu="RTX 4090 24GB", gpu_count=1, cpu_ram_gb=64)


def test_the_real_pair_fits_where_no_single_change_does():
    r = resolve_setup(TrainingSetup(**PAIR))

    def fits(changes):  # one card: DDP's row is plain training
        return estimate(_variant(r, changes)).memory["ddp"].fits
    assert not estimate(r).memory["fsdp_full_shard_offload"].fits  # offload alone: 64 GB of RAM is short
    singles = [{"activation_checkpointing": True}, {"finetune": "lora", "base_dtype": None},
               {"finetune": "qlora", "base_dtype": None}, {"optimizer": "adam8bit", "optimizer_impl": None},
               {"loss_impl": "chunked"}]
    assert not any(fits(c) for c in singles)  # on one card: no single change is enough
    pair = {"activation_checkpointing": True, "finetune": "qlora", "base_dtype": None}
    assert fits(pair)
    want = estimate(_variant(r, pair)).memory["ddp"].total_gib
    ev, d, _ = answer_for("en", **PAIR)
    assert d.strategy == "none" and ev.fixes.fix.changes == ("checkpointing", "qlora")
    assert ev.numbers()["fix.memory.ddp.total_gib"] == pytest.approx(want, abs=0.01)


@pytest.mark.parametrize("lang, nothing", [("en", "nothing fits"), ("zh", "哪种策略都放不下")])
def test_the_answer_names_the_cheapest_combination_with_its_figure(lang, nothing):
    ev, d, answer = answer_for(lang, **PAIR)
    assert d.what_ifs[0].code == Code.COMBINED_FIX
    figure = f"{ev.numbers()['fix.memory.ddp.total_gib']:.2f}".rstrip("0").rstrip(".")
    assert figure in answer.sections.what_ifs[0]
    assert "QLoRA" in answer.sections.what_ifs[0] and "QLoRA" in answer.sections.headline
    assert nothing not in answer.full_text  # a combination fits: the answer never says nothing does
    bound = answer.sections.figure_keys[answer.sections.what_ifs[0]]
    assert "fix.memory.ddp.total_gib" in bound


# QLoRA of a 180B model on one 80 GB card: only CPU offload fits, and the host RAM is not stated
OFFLOAD_ONLY = dict(params_b=180, gpu="A100 80GB SXM", gpu_count=1, finetune="qlora", activation_checkpointing=True)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fields", [OFFLOAD_ONLY, dict(OFFLOAD_ONLY, params_b=405, gpu_count=2, gpu="H100 80GB SXM"),
                                    dict(model="Llama-2-70B", gpu="RTX 4090 24GB", gpu_count=1, finetune="qlora",
                                         activation_checkpointing=True)])
def test_only_offload_fits_and_the_host_ram_is_asked(lang, fields):
    ev, d, answer = answer_for(lang, **fields)
    assert ev.fixes.fix is not None and ev.fixes.fix.changes == ("offload",)
    assert "cpu_ram_gb" in d.questions and "cpu_ram_gb" in answer.questions
    assert question_text("cpu_ram_gb", lang) in answer.text  # asked in the short form


def test_a_stated_host_ram_is_not_asked_again():
    ev, d, answer = answer_for("en", **dict(OFFLOAD_ONLY, cpu_ram_gb=512))
    assert "cpu_ram_gb" not in d.questions


# 70B at a million tokens on 4 x A100 80GB: no GPU count divides one sequence's activations
NOTHING = dict(model="Llama-2-70B", gpu="A100 80GB SXM", gpu_count=4, seq_len=1_000_000, cpu_ram_gb=1024)


@pytest.mark.parametrize("lang, nothing", [("en", "nothing fits"), ("zh", "哪种策略都放不下")])
def test_nothing_fits_only_when_no_combination_fits(lang, nothing):
    ev, d, answer = answer_for(lang, **NOTHING)
    assert ev.fixes is not None and ev.fixes.fix is None
    assert d.strategy == "none"
    assert Code.NO_COMBINATION_FITS in {r.code for r in d.reasons}
    assert Code.COMBINED_FIX not in {r.code for r in d.what_ifs}
    assert nothing in answer.sections.headline


def test_a_setup_that_fits_runs_no_search():
    ev, d, _ = answer_for("en", model="Llama-2-7B", gpu="A100 80GB SXM", gpu_count=8)
    assert ev.fixes is None and not any(k.startswith("fix.") for k in ev.numbers())
