"""Launch and data-parallel semantics leads (knowledge/playbook/part8-i-launch.yaml): a multi-node job
where one node works, a batch size that is per GPU, steps per epoch that fall with more GPUs. Each
class in three phrasings per language of this file's own, and the question reads as troubleshooting."""

from __future__ import annotations

import pytest

from bot.knowledge.playbook import match_playbook
from bot.parse import parse_conversation

CASES = {
    "pb-multi-node-launch-every-node": [
        "4个节点每个节点两张卡，但只有一个节点正常工作，其他节点的GPU没有工作，怎么回事？",
        "两台机器做分布式训练，只有主节点在跑，另外一台机器的卡没有占用",
        "三台服务器各8张A100，训练时其余的机器一直空闲，只有一台在训练",
        "We use 3 nodes with 8 GPUs each but only the first node is training, the other machines stay idle. Why?",
        "Two machines with 4 GPUs each: only one node works while the second node's GPUs are not used at all",
        "Multi-node pretraining on 4 servers, but the remaining nodes are idle and only one machine runs",
    ],
    "pb-batch-size-per-process": [
        "单卡batch_size设为8，4张卡时设成8*n就OOM了，每张卡是不是都跑8个？",
        pytest.param("多卡训练时 batch_size 要不要乘以卡数？我乘了之后显存不够了", marks=pytest.mark.xfail(
            reason="intent: a should-I question beside its own OOM report reads as recommend", strict=True)),
        "双卡训练 batch size 设成 16*n 报 out of memory，改回 16 就能跑，每块卡是否都跑16个样本？",
        "On one GPU batch size 16 works; on 4 GPUs I set batch_size = 16 * num_gpus and it runs out of memory. "
        "Is the batch size per GPU?",
        "With 8 cards I multiplied the batch size by the number of GPUs and got CUDA OOM; does DDP split the batch?",
        "batch_size x n gpus OOMs with DDP on 2 GPUs, but batch_size alone runs. Is the batch size per device?",
    ],
    "pb-steps-per-epoch-fall-with-gpus": [
        "With two 4090s the speed does not increase and the epochs changed from 10 to 20. Why?",
        "I added a second GPU, the it/s did not improve and the trainer now runs twice as many epochs",
        "On 4 GPUs the step time is the same as on one and the epoch count went from 5 to 20",
        "加了一张卡速度没有提升，epoch 从 10 变成了 20，为什么？",
        "两张卡训练速度和一张卡一样，步数却翻倍了",
        "用双卡之后 it/s 没有变快，epoch 数变成了原来的两倍",
    ],
}


def _cases():
    for entry_id, texts in CASES.items():
        for text in texts:
            if isinstance(text, str):
                yield pytest.param(entry_id, text)
            else:  # a pytest.param with its mark
                yield pytest.param(entry_id, *text.values, marks=text.marks)


@pytest.mark.parametrize("entry_id,text", _cases())
def test_the_class_leads(entry_id, text):
    parsed = parse_conversation(text)
    assert parsed.intent == "troubleshoot", parsed.intent
    assert [m.id for m in match_playbook(parsed, text=text)][:1] == [entry_id]


@pytest.mark.parametrize("text", [
    "With DDP on 4 GPUs I run out of memory while loading the pretrained weights; the same script works on one GPU",
    "Loading the checkpoint with torch.load in every rank gives CUDA out of memory on a 2-GPU DDP run",
    "OOM when restoring the state_dict under torchrun with 8 processes, single-GPU runs are fine",
    "DDP 多卡训练时加载预训练权重就显存不够，单卡跑同样的代码没问题",
    "四卡 torchrun 启动后，读取 checkpoint 时爆显存，单卡不会",
    "用 DDP 两张卡训练，恢复检查点的时候 OOM 了，一张卡正常",
])
def test_an_oom_while_loading_weights_under_ddp_leads_with_gpu0(text):
    """Every rank loading a checkpoint saved from cuda:0 without ``map_location`` puts its copy on GPU 0."""
    parsed = parse_conversation(text)
    assert [m.id for m in match_playbook(parsed, text=text)][:1] == ["pb-model-on-gpu0"]


@pytest.mark.parametrize("entry_id,text", [
    ("pb-ddp-extra-memory-over-one-gpu", "On a single GPU my model takes 6.1 GB at batch 4; with DistributedDataParallel on two GPUs "
     "(batch 4 each) every card shows 7.4 GB. Why the extra memory with DDP?"),
    ("pb-ddp-extra-memory-over-one-gpu", "Using DDP each GPU uses more memory than the same batch on one GPU, about 1 GB extra. "
     "Is that normal?"),
    pytest.param("pb-ddp-extra-memory-over-one-gpu", "Memory usage of each GPU is 9.2 GB under DDP, while one GPU alone "
                 "used 8.0 GB with the same per-GPU batch. Where does the extra memory come from?",
                 marks=pytest.mark.xfail(reason="intent: two runs' memory figures with a where-from question read as "
                                                "recommend", strict=True)),
    ("pb-ddp-extra-memory-over-one-gpu", "单卡训练显存 7G，换成 DDP 双卡后每张卡 8.5G，batch 一样，正常吗？"),
    ("pb-ddp-extra-memory-over-one-gpu", "用 DDP 之后每张卡比单卡多占了 1G 显存，这是为什么？"),
    ("pb-ddp-extra-memory-over-one-gpu", "同样的 batch，DDP 比单卡多用了不少显存，怎么减少？"),
    ("pb-model-version-more-memory", "Fine-tuning the v2 model with the same LoRA script uses far more memory than v1. Why?"),
    ("pb-model-version-more-memory", "Same QLoRA recipe, but the second-generation model needs much more GPU memory than the first"),
    ("pb-model-version-more-memory", "I enabled gradient_checkpointing but it has no effect on this model's memory"),
    ("pb-model-version-more-memory", "同样的 QLoRA 代码，二代模型训练时显存明显高于一代，为什么？"),
    ("pb-model-version-more-memory", "新版本模型微调显存高很多，用的还是原来的脚本"),
    ("pb-model-version-more-memory", "开了梯度检查点但没有效果，显存还是一样高"),
])
def test_memory_compared_with_another_run_leads(entry_id, text):
    parsed = parse_conversation(text)
    assert parsed.intent == "troubleshoot", parsed.intent
    assert [m.id for m in match_playbook(parsed, text=text)][:1] == [entry_id]
