"""One decision, said once (issue 25): over generated setups, the answer's sentences agree with
its own table (evals/consistency.py lists what is checked). The setups come from hypothesis over
the catalog's models and cards, GPU counts, fine-tuning modes, sequence lengths and micro-batches;
the knowledge layer is left out (with_knowledge=False), so no index or embedding model is loaded."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.assistant import answer_for_setup
from bot.core.setup import TrainingSetup
from evals.consistency import contradictions

MODELS = ["Llama-2-7B", "Llama-2-13B", "Llama-3.1-70B", "Qwen2.5-1.5B", "GPT-2 XL", "Mistral-7B", "Qwen2.5-32B"]
GPUS = ["A100 40GB SXM", "A100 80GB SXM", "RTX 4090 24GB", "H100 80GB SXM", "V100 32GB SXM2", "L4 24GB"]

setups = st.builds(
    lambda model, gpu, count, finetune, seq, mb, ckpt, lang: (TrainingSetup(
        model=model, gpu=gpu, gpu_count=count, nodes=2 if count == 16 else 1, finetune=finetune, seq_len=seq,
        micro_batch=mb, activation_checkpointing=ckpt), lang),
    st.sampled_from(MODELS), st.sampled_from(GPUS), st.sampled_from([1, 2, 4, 8, 16]),
    st.sampled_from(["full", "lora", "qlora"]), st.sampled_from([512, 2048, 8192]), st.sampled_from([1, 2, 8]),
    st.booleans(), st.sampled_from(["en", "zh"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setups)
def test_sentences_agree_with_the_table(case):
    setup, lang = case
    answer = answer_for_setup(setup, lang, with_knowledge=False)
    assert answer.status in ("ok", "needs_info", "invalid"), answer.text[:200]
    assert contradictions(answer) == [], answer.text[:600]


def test_the_checker_finds_a_contradiction():
    """The checker can fail: a headline naming another strategy than the table's pick is found."""
    answer = answer_for_setup(TrainingSetup(model="Llama-2-7B", gpu="A100 80GB SXM", gpu_count=8), "en",
                              with_knowledge=False)
    assert contradictions(answer) == []
    answer.sections.headline = "Recommendation: DDP (confidence: high)"
    answer.recommendation.strategy = "fsdp_full_shard" if answer.recommendation.strategy != "fsdp_full_shard" \
        else "fsdp_shard_grad_op"
    assert contradictions(answer)
