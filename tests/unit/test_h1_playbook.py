"""Brief H, helper h1: troubleshooting leads the playbook lacked (knowledge/playbook/part7-h1-playbook.yaml),
each the FIRST sentence where its symptoms show: nn.DataParallel loading GPU 0, no speed-up for want of a
DistributedSampler, a rank whose batch gives no loss (DDP hangs or errors), a GPU left in a bad state, an
OOM at the save step after LoRA training. Also: an RL passage never opens an answer whose text names no
RL method. Phrasings are ours (en and zh). No retrieval (``with_knowledge=False``) except where stated."""

from __future__ import annotations

import pytest
from _helpers import lead_of

DP, SAMPLER, NOLOSS = "pb-dataparallel-gather-gpu0", "pb-no-distributed-sampler", "pb-ddp-rank-without-loss"
BADGPU, LORASAVE = "pb-gpu-bad-state", "pb-lora-save-merge-oom"

CASES = {
    DP: [
        "I wrapped my ResNet in nn.DataParallel on 4 GPUs and GPU 0 uses far more memory than the other three, then it OOMs",
        "With DataParallel over two 3090s the first card is almost full while the second sits at half, and batch 64 crashes",
        "Using torch.nn.DataParallel on 8 V100, memory is very uneven across cards and it grows until CUDA out of memory",
        "用nn.DataParallel跑4张卡，0号卡显存比其他卡多很多，最后爆显存",
        "两张3090用DataParallel训练，第一张卡显存占得高，另一张只用了一半，batch调大就OOM",
        "DataParallel 多卡训练显存分配不均，0号卡总是先显存不足",
    ],
    SAMPLER: [
        "I moved my training to 4 GPUs with DDP but there is no speed-up at all, each epoch takes as long as on one GPU",
        "Training on 2 A100s with torchrun is not any faster than a single card; the number of steps per epoch is the same",
        "With 8 GPUs in DDP the epoch time is the same as with one GPU, every rank seems to go through the whole dataset",
        "用DDP开了4张卡，训练速度和单卡差不多，一个epoch的时间没变",
        "两张A100多卡训练并没有加速，每张卡好像都跑了整个数据集",
        "8张卡torchrun启动后没有变快，每个epoch的step数和单卡一样",
    ],
    NOLOSS: [
        "My detector trains on 4 GPUs with DDP and hangs at some step; some images have no annotations so that rank returns a zero loss",
        "DDP on 2 GPUs freezes when one rank gets a batch with empty targets and I skip the loss for it",
        "Multi-task model on 8 GPUs: one head is skipped when the batch has no labels for it, and DDP errors after a few hundred steps",
        "4卡DDP训练检测模型，有的图片没有标注，那个进程的loss直接返回0，然后训练就卡住了",
        "两张卡DDP训练时，某个进程拿到的batch标签为空，跳过了loss计算，之后就hang住",
        "多任务模型8卡训练，数据里有的batch会跳过一个分支，某张卡没有梯度，DDP报错",
    ],
    BADGPU: [
        "nvidia-smi shows GPU utilization at 100% with no process running and about 20 GB of memory already used before I start",
        "Yesterday my fine-tuning on the RTX 4090 ran fine, today with the same script it suddenly gives CUDA out of memory at once",
        "After I killed a run, a zombie python process seems to keep the A100's memory and the next job OOMs right away",
        "没有跑任何程序，nvidia-smi显示显存被占了20G，利用率100%",
        "昨天还能正常训练的脚本，今天突然爆显存，代码没改",
        "上次训练被kill之后有残留进程，显存一直占着，新任务一启动就显存不足",
    ],
    LORASAVE: [
        "LoRA fine-tuning a 13B model on one A100 trains fine but at the end it runs out of memory while merging the adapter to save",
        "QLoRA training on a 24GB card finished, then merge_and_unload before save_pretrained gives CUDA out of memory",
        "My LoRA script does a deepcopy of the model to save a checkpoint and OOMs at the save step",
        "单卡LoRA微调7B，训练都跑完了，最后合并权重保存的时候爆显存",
        "QLoRA训练结束后调用merge_and_unload再保存，显存不足",
        "LoRA训练正常，保存模型的时候OOM了，脚本里先复制了一份完整模型再保存",
    ],
}


@pytest.mark.parametrize(("expected", "question"), [(k, q) for k, qs in CASES.items() for q in qs])
def test_the_first_sentence_names_the_cause(expected, question):
    got, sentence = lead_of(question)
    assert got == expected, sentence


def test_every_class_has_three_phrasings_in_each_language():
    for questions in CASES.values():
        zh = [q for q in questions if any("\u4e00" <= ch <= "\u9fff" for ch in q)]
        assert len(zh) >= 3 and len(questions) - len(zh) >= 3


# Each cause keeps to its own class: the neighbours it must not take over
NOT_THIS = [
    # GPU 0 fuller in a DDP run, DataParallel not named: the model placed on GPU 0
    (DP, "In my 4-GPU DDP run GPU 0 uses much more memory than the others"),
    (DP, "DDP训练时0号卡显存比其他卡高很多"),
    (DP, "Memory is uneven across 8 GPUs with DistributedDataParallel, cuda:0 is nearly full"),
    # the same time per step on more cards is the per-device throughput question
    (SAMPLER, "Going from 2 to 4 GPUs the time per step is identical, why no speed-up?"),
    (SAMPLER, "从2卡加到4卡，每步耗时没变，为什么没有加速？"),
    # an OOM while training LoRA (not at the save) is not the save step
    (LORASAVE, "LoRA on a 7B model with batch 8 on one RTX 4090 gives CUDA out of memory at the first step"),
    (LORASAVE, "单张4090做7B的LoRA，batch设为8，第一步就爆显存"),
]


@pytest.mark.parametrize(("cause", "question"), NOT_THIS)
def test_a_neighbouring_failure_is_not_led_by_this_cause(cause, question):
    got, sentence = lead_of(question)
    assert got != cause, sentence


# (6) an RL passage (the PPO/GRPO doc, or a quote naming an RL method) never answers a message that
# names no RL method; where the message names one it may. BM25 weights only, no index built.
from bot.knowledge import answering  # noqa: E402
from bot.knowledge.answering import Passage, select_passages  # noqa: E402
from bot.understand.intent import names_rl  # noqa: E402


def _cand(entry_id: str, quote: str, lang: str = "en", kind: str = "doc") -> Passage:
    return Passage(id=entry_id, kind=kind, title=entry_id, url="https://example.org", quote=quote,
                   score=0.1, lang=lang, relevance=0.9)


RL_EN = _cand("doc-rl-multi-model-memory", "PPO keeps four networks: policy, critic, reference and reward model.")
RL_ZH = _cand("doc-rl-multi-model-memory-zh", "PPO 要放四个模型：策略、critic、参考模型和奖励模型。", lang="zh")
HSDP_EN = _cand("doc-hsdp", "HSDP splits the GPUs into groups (usually one group per node).")
HSDP_ZH = _cand("doc-hsdp-zh", "HSDP 把 GPU 分成若干组（通常每个节点一组）。", lang="zh")
RL_QUOTE = _cand("doc-activation-memory", "In GRPO the rollout batch adds activation memory on every card.")


@pytest.mark.parametrize(("question", "lang"), [
    ("My DDP run on 4 GPUs hangs after a few hundred steps with no error", "en"),
    ("Why does GPU 0 use more memory than the others during fine-tuning?", "en"),
    ("Full fine-tuning a 7B model on 8 A100 runs out of memory at the optimizer step", "en"),
    ("4卡DDP训练跑了几百步就卡住了，没有报错", "zh"),
    ("微调的时候0号卡显存比其他卡多很多", "zh"),
    ("8张A100全参微调7B，优化器那一步显存不足", "zh"),
])
def test_an_rl_passage_never_answers_a_message_naming_no_rl_method(question, lang, monkeypatch):
    monkeypatch.setattr(answering, "_searcher", answering._keyword)
    cands = [RL_EN, RL_QUOTE, HSDP_EN] if lang == "en" else [RL_ZH, HSDP_ZH]
    picked = select_passages(cands, question=question, language=lang, k=3, threshold=0.0)
    assert not names_rl(question)
    assert [p.id for p in picked] == (["doc-hsdp"] if lang == "en" else ["doc-hsdp-zh"])


@pytest.mark.parametrize(("question", "lang"), [
    ("PPO on a 7B policy with a 7B reward model runs out of memory", "en"),
    ("GRPO training with vLLM rollouts hangs on 8 GPUs", "en"),
    ("Our RLHF job OOMs when the reference model loads", "en"),
    ("PPO训练7B模型加奖励模型时显存不足", "zh"),
    ("用GRPO做强化学习，8卡训练卡住", "zh"),
    ("强化学习微调时参考模型加载就OOM", "zh"),
])
def test_a_message_naming_an_rl_method_may_quote_the_rl_passage(question, lang, monkeypatch):
    monkeypatch.setattr(answering, "_searcher", answering._keyword)
    cands = [RL_EN, HSDP_EN] if lang == "en" else [RL_ZH, HSDP_ZH]
    picked = select_passages(cands, question=question, language=lang, k=3, threshold=0.0)
    assert names_rl(question)
    assert picked and picked[0].id.startswith("doc-rl-multi-model-memory")
