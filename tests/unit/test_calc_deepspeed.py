"""DeepSpeed ZeRO-2's memory layout (``engine="deepspeed"``), checked against a published log, and
where the reader takes a run to be DeepSpeed's (bot/calc/memory.py ``deepspeed_layout``).

The log is LlamaFactory issue 1158 (https://github.com/hiyouga/LlamaFactory/issues/1158):
Baichuan2-13B, full fine-tuning in bf16 with ZeRO-2 on 4 x A800 80GB, which ran out of memory at
the optimizer step with "Tried to allocate 12.94 GiB ... 77.65 GiB already allocated".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.calc import _mem_inputs, estimate_setup
from bot.calc.memory import GIB, deepspeed_layout, phases
from bot.core.setup import TrainingSetup, resolve_setup
from bot.parse import parse_conversation

ROOT = Path(__file__).resolve().parents[2]
LF1158 = dict(model="Baichuan2-13B", gpu="A800 80GB", gpu_count=4, seq_len=1536, micro_batch=1,
              precision="bf16-mixed", finetune="full", activation_checkpointing=True)


def step_phase(**kw):
    inputs = _mem_inputs(resolve_setup(TrainingSetup(**{**LF1158, **kw})))
    return next(ph for ph in phases(inputs, "fsdp_shard_grad_op")[0] if ph.name == "optimizer_step"), inputs


def test_zero2_step_reproduces_the_published_oom_log():
    phase, inputs = step_phase(engine="deepspeed")
    params = inputs.model.params
    fp32_copy = 4 * params / 4  # the allocation that failed: this rank's gradient partition in fp32
    assert fp32_copy / GIB == pytest.approx(12.94, abs=0.01)
    before = phase.total(1) - fp32_copy  # what was allocated when it was asked for
    assert before / GIB == pytest.approx(77.65, abs=0.05)
    # The card (79.35 GiB total capacity in the log) cannot hold both
    assert phase.total(1) / GIB > 79.35


def test_zero2_layout_only_where_it_applies():
    est = estimate_setup(TrainingSetup(**LF1158, engine="deepspeed"))
    torch_est = estimate_setup(TrainingSetup(**LF1158))
    ds, fsdp = est.memory["fsdp_shard_grad_op"], torch_est.memory["fsdp_shard_grad_op"]
    assert not ds.fits and fsdp.fits  # FSDP's SHARD_GRAD_OP reshards its weights; ZeRO-2 keeps them all
    assert ds.params_gib == pytest.approx(2 * est.inputs["params"] / GIB, rel=1e-6)  # 16-bit weights, all
    for strategy in ("ddp", "fsdp_full_shard", "fsdp_hybrid_shard", "fsdp_full_shard_offload"):
        assert est.memory[strategy] == torch_est.memory[strategy], strategy
    inputs = _mem_inputs(resolve_setup(TrainingSetup(**LF1158, engine="deepspeed")))
    assert deepspeed_layout(inputs, "fsdp_shard_grad_op")
    for other in (dict(finetune="lora"), dict(precision="bf16"), dict(gpu_count=1)):
        assert not deepspeed_layout(_mem_inputs(resolve_setup(TrainingSetup(**{**LF1158, **other},
                                                                            engine="deepspeed"))),
                                    "fsdp_shard_grad_op"), other


def _gold(case_id: str) -> str:
    for line in (ROOT / "evals/cases/gold_threads.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["id"].startswith(case_id):
            return case["turns"][0]
    raise KeyError(case_id)


@pytest.mark.parametrize("case_id", ["lf1158", "lf5977"])
def test_a_llamafactory_deepspeed_run_is_read_as_both(case_id):
    # a LlamaFactory config naming a DeepSpeed config: LlamaFactory's checkpointing default applies,
    # and DeepSpeed's layout
    parsed = parse_conversation(_gold(case_id))
    assert parsed.observed.framework == "llamafactory" and parsed.observed.deepspeed
    assert parsed.setup.engine == "deepspeed"
    assert parsed.setup.activation_checkpointing is True
    assert parsed.provenance["activation_checkpointing"].source == "assumed"
    span = parsed.provenance["engine"].span
    assert span and span in _gold(case_id)
    assert "deepspeed_layout" in parsed.notices


@pytest.mark.parametrize("text", [
    "DeepSpeed ZeRO-3 or FSDP for Llama-2-7B on 8 A100?",          # a choice, not a run
    "用 DeepSpeed 还是 DDP 训练 Llama-2-7B？8张A100 80G",              # the same, without FSDP named
    "I train with ZeRO-2 (ds_config.json) on 8 A100 40GB, 13B full. Would FSDP be better?",  # asks about FSDP
    "Llama-2-7B on 8 x A100 80GB, full fine-tune",
])
def test_no_deepspeed_layout_when_the_question_is_about_fsdp_or_no_deepspeed_run(text):
    assert parse_conversation(text).setup.engine is None


def test_a_deepspeed_launch_is_a_deepspeed_run():
    parsed = parse_conversation("deepspeed --num_gpus 8 train.py --deepspeed ds_config.json\n"
                                "Llama-2-13B full fine-tune on 8 x A100 40GB runs out of memory")
    assert parsed.setup.engine == "deepspeed"


def test_a_model_path_names_the_catalog_model():
    # LlamaFactory issue 5977: the model is a local path to Meta's Llama 3 checkpoint
    parsed = parse_conversation(_gold("lf5977"))
    assert parsed.setup.model == "Llama-3.1-8B"
    assert "Meta-Llama-3-8B" in parsed.provenance["model"].span


def test_the_answer_names_the_failed_allocation_in_the_users_log():
    from bot import ask

    answer = ask(_gold("lf1158"))
    key = "memory.fsdp_shard_grad_op.zero2_fp32_grad_copy_gib"
    assert answer.numbers[key] == pytest.approx(12.94, abs=0.01)
    assert "Tried to allocate 12.94 GiB" in answer.full_text and "ZeRO-2" in answer.full_text
    keys = [f.key for f in answer.figures if f.printed == "12.94"]
    assert "turn" in keys and key in keys  # the log's figure and ours, each bound to its source
    assert not [f for f in answer.figures if f.key == "unbound"]
    # checkpointing is already on (LlamaFactory's default): the what-if does not offer it again
    assert "更大就加卡或用梯度累积" in answer.full_text and "更大就开激活检查点" not in answer.full_text


def test_an_allocation_that_is_not_the_step_copy_is_not_explained_as_one():
    from bot import ask

    log = _gold("lf1158").replace("Tried to allocate 12.94 GiB", "Tried to allocate 2.10 GiB")
    answer = ask(log)
    assert answer.numbers.get("memory.fsdp_shard_grad_op.zero2_fp32_grad_copy_gib")
    assert "Tried to allocate 2.10 GiB" not in answer.full_text


def test_an_offload_device_of_none_is_no_offload():
    # DeepSpeed#4953's accelerate config: ZeRO-3 with both offload devices "none"
    config = ("deepspeed_config:\n  offload_optimizer_device: none\n  offload_param_device: none\n  zero_stage: 3\n"
              "distributed_type: DEEPSPEED\nmixed_precision: bf16\nnum_processes: 1\n7B model on a single A100-80GB")
    assert parse_conversation(config).observed.zero_offload is None
    assert parse_conversation(config.replace("offload_optimizer_device: none",
                                             "offload_optimizer_device: cpu")).observed.zero_offload is True
    assert parse_conversation("用 zero3 offload 跑 7B，8张A100").observed.zero_offload is True


def test_a_dpo_job_names_no_critic():
    from bot.render import multi_model_text

    dpo = multi_model_text(("reference",), "en")
    assert "critic" not in dpo and "reference" in dpo
    assert "critic" in multi_model_text(("actor", "critic", "reference", "reward"), "en")
    assert "critic" not in multi_model_text(("reference",), "zh")
