"""Intent classes and diagnosis leads of first-contact batch h (evals/first_contact.md, "Batch
2026-12-02h", failures by class 3, 4 and 5), each a rule over a class of inputs, tested here in
phrasings of our own in both languages (never the threads' sentences):

1. only one card busy (GPU 0, "the first card", 只有0号卡在跑, 其他卡利用率为0) is troubleshooting,
   led by the one-GPU-busy cause (the launcher), never the sizes that fit;
2. a hang in Chinese words (卡住, 卡在这一步, 不动了, 没反应, 超时, 一直等待) on several GPUs is led by
   the hang cause (a collective some ranks never join), not by a request for the error;
3. memory swinging between steps is a symptom (troubleshooting) with its own playbook lead;
4. "how do I train on several cards?" is a how-to (concept);
5. "does each process keep its own copy of the data/model?" is a concept;
6. "how much memory is typical/required?" is capacity even after an OOM; "is this normal?" after a
   reported slowdown or memory figure is troubleshooting;
7. the generation speed of a served model (tokens/s) is out of scope;
8. "would N cards be enough for the memory it requires?" is capacity;
9. a lead matched only on context words (SLURM named in passing) never leads;
10. nn.DataParallel slow, or GPU 0 fuller under it, is led by the use-DDP cause.
"""

from __future__ import annotations

import pytest
from _helpers import answer_offline, lead_of

from bot.knowledge.playbook import PlaybookQuery, match_playbook
from bot.parse import parse_conversation


def intent(text: str) -> str:
    return parse_conversation(text).intent


def _zh(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


ONE_GPU_BUSY = [
    "Our box has four cards but only the first GPU does any work during training; the rest stay at 0% utilization. How do I fix it?",
    "nvidia-smi shows only cuda:0 busy while my other three cards are idle. What should I change?",
    "Training on a 2-GPU workstation, yet only GPU 0 is used and the second card sits empty. Why?",
    "服务器上有4张卡，训练时只有0号卡在跑，其余的卡利用率为0，怎么办？",
    "我有两块3090，训练时只用到了第一张卡，另一张一直空着，这是为什么？",
    "8卡机器上跑训练，nvidia-smi 里只有卡0有负载，其他卡利用率都是0%，要怎么改？",
    "4张卡只有0号卡的利用率是100%，其余都是0",
    "训练只用到了GPU0，另外几张显卡完全没动",  # "另外几张" is "the other few", not "how many"
    "Only GPU 0 shows utilization; GPUs 1, 2 and 3 stay at 0%.",
]


@pytest.mark.parametrize("text", ONE_GPU_BUSY)
def test_one_gpu_busy_is_troubleshooting_led_by_the_launcher(text):
    assert intent(text) == "troubleshoot"
    got, sentence = lead_of(text)
    assert got == "pb-launcher-single-process", sentence


HANGS_ZH = [
    "四卡DDP训练跑到第二个epoch就卡住了，也不报错，是什么原因？",
    "多卡训练的时候程序一直等待，过了半小时报了超时，怎么解决？",
    "双卡训练到验证那一步就不动了，单卡没有这个问题",
    "用8张卡训练，跑着跑着就没反应了，GPU利用率还是满的",
    "两张卡分布式训练时卡在这一步，不继续往下走了，请问怎么回事？",
    "用4块3090训练，第一个epoch结束后就没反应了",
]
HANGS_EN = [
    "My 4-GPU DDP run freezes after a few hundred steps with no error at all. What could cause it?",
    "Training on two GPUs just sits there after the first epoch and eventually hits an NCCL timeout.",
    "With 8 cards the job stops progressing at the validation step, while a single GPU is fine. Why?",
]


@pytest.mark.parametrize("text", HANGS_ZH + HANGS_EN)
def test_a_multi_gpu_hang_is_led_by_the_hang_cause(text):
    assert intent(text) == "troubleshoot"
    got, sentence = lead_of(text)
    assert got in ("pb-collective-hang-mid-run", "pb-ddp-rank-without-loss"), sentence


MEMORY_SWINGS = [
    "GPU memory goes up and down every step while training, from 20 GB to 70 GB. How do I keep it stable?",
    "The VRAM usage fluctuates wildly between iterations during fine-tuning; can it be held at a constant value?",
    "On 4 A100s the memory keeps swinging between steps, sometimes close to full. Why does it vary so much?",
    "训练时显存忽高忽低，每一步都不一样，怎么让它稳定下来？",
    "每个step显存都在变，从30G跳到70G，这是为什么？",
    "微调过程中显存占用波动很大，有时候快满了，有什么办法固定住？",
    "GPU memory jumps up and down between iterations, sometimes close to OOM.",
]


@pytest.mark.parametrize("text", MEMORY_SWINGS)
def test_memory_swinging_between_steps_is_a_symptom_with_its_lead(text):
    assert intent(text) == "troubleshoot"
    got, sentence = lead_of(text)
    assert got == "pb-memory-swings-per-step", sentence


@pytest.mark.parametrize("text", [
    "How do I train on several cards?",
    "How to enable multi-GPU training?",
    "What is the way to run the training across multiple GPUs?",
    "请问怎样开启多卡训练？",
    "想用多张显卡一起训练，应该怎么做？",
    "多GPU训练要怎么开启？",
    "怎么使用多张GPU训练模型？",
])
def test_how_to_train_on_several_cards_is_a_how_to(text):
    assert intent(text) == "concept"


@pytest.mark.parametrize("text", [
    "With DDP, does every process hold its own copy of the dataset in RAM?",
    "Does each rank load a full replica of the model under DistributedDataParallel?",
    "When I launch with accelerate on one machine, will each worker process keep a separate copy of the training data?",
    "DDP训练时每个进程都会加载一份完整的数据集吗？",
    "用torchrun多卡训练，每张卡上的进程是不是各自保存一份模型副本？",
    "多进程训练时数据集会在进程之间共享，还是每个进程各存一份？",
])
def test_does_each_process_keep_its_own_copy_is_a_concept(text):
    assert intent(text) == "concept"


@pytest.mark.parametrize("text", [
    "I got CUDA out of memory fine-tuning it on one A100. How much GPU memory does this usually need?",
    "After an OOM on my 24GB card, it would help to know what amount of VRAM is typically required to train the base model.",
    "It ran out of memory on a single GPU; I would like to know how much memory the large version normally takes.",
    "单卡A100上微调就OOM了，一般需要多少显存？",
    "训练时爆显存了，想知道通常要多大的显存才能训练这个模型？",
    "24G的卡显存不足，请问训练这个模型一般需要多少资源？",
])
def test_how_much_memory_is_typical_is_capacity_even_after_an_oom(text):
    assert intent(text) == "capacity"


@pytest.mark.parametrize("text", [
    "Training on 4 GPUs is barely faster than on one, is that normal?",
    "Memory climbs to 70GB on every card after a few steps with DDP. Is this expected?",
    "Two nodes train at half the speed of one node; is this behaviour normal?",
    "两张卡训练比单卡只快了一点点，这种情况正常吗？",
    "四卡训练速度和单卡差不多，请问属于正常现象吗？",
    "显存占用比预想的高很多，每张卡都到了70G，这样算正常么？",
])
def test_is_this_normal_after_a_reported_symptom_is_troubleshooting(text):
    assert intent(text) == "troubleshoot"


@pytest.mark.parametrize("text", [
    "Serving a 14B model on two 3090s I only get 25 tokens/s, the same as on one card. Why no speed-up?",
    "My generation speed is 30 tok/s on 2 GPUs with an fp8 checkpoint, how can I make it faster?",
    "Why is the decode speed of my quantized model only 15 tokens per second on two cards?",
    "用两张4090跑Qwen 14B，输出速度只有30 token/s，为什么没有提升？",
    "双卡跑int4量化模型，每秒只出20个token，跟单卡一样",
    "两张卡跑fp8模型，生成速度才15 tokens/s，怎么加速？",
])
def test_generation_speed_of_a_model_is_out_of_scope(text):
    assert intent(text) == "out_of_scope"


@pytest.mark.parametrize("text", [
    "Would 2 x RTX 3090 be enough for the memory a 13B LoRA fine-tune requires?",
    "Is 4x A6000 enough, or does a full fine-tune of a 7B model need more VRAM than that?",
    "Would three 4090s cover the memory needed to train a 7B model with LoRA?",
    "两张4090的显存够训练7B全参所需的显存吗？",
    "4张3090能满足LoRA微调13B所需的显存吗？",
    "8卡V100训练7B够不够，需要的显存是多少？",
])
def test_would_n_cards_cover_the_required_memory_is_capacity(text):
    assert intent(text) == "capacity"


@pytest.mark.parametrize("text", [
    "Would 2 x RTX 4090 be enough for the memory this training requires?",
    "两张4090的显存够训练所需的显存吗？",
])
def test_capacity_without_a_model_asks_for_the_model(text):
    answer = answer_offline(text)
    assert answer.intent == "capacity"
    assert answer.status == "needs_info"
    assert "params_b" in answer.missing


# 9. context words (the scheduler, named in passing) never lead over the symptom the asker names
@pytest.mark.parametrize("text", [
    "We run on SLURM with 8 A100s; the dataloader is the bottleneck and the GPUs wait for data. How do I speed it up?",
    "Our cluster uses sbatch; GPU utilization is low, around 30%, on 4 cards. Why?",
    "Jobs go through srun on our cluster; the data loading is slow and the GPUs are idle between steps.",
    "我们用SLURM提交作业，8张A100，GPU利用率只有30%，数据加载跟不上，怎么办？",
    "集群用sbatch调度，4张卡训练时数据读取很慢，GPU一直在等数据",
    "在slurm上跑两个节点，数据预处理是瓶颈，显卡利用率很低",
])
def test_a_lead_matched_on_context_only_never_leads(text):
    got, sentence = lead_of(text)
    assert got != "pb-slurm-ntasks-per-node", sentence
    assert got == "pb-dataloader-starves-gpu", sentence


@pytest.mark.parametrize("text", [
    "We train on SLURM with 4 GPUs and the loss is NaN after a few steps in fp16.",
    "我们在slurm集群上用4张卡训练，fp16下几步之后loss就变成NaN了",
])
def test_context_alone_surfaces_no_entry(text):
    ids = [m.id for m in match_playbook(PlaybookQuery(text=text, intent="troubleshoot", gpu_count=4), limit=0)]
    assert "pb-slurm-ntasks-per-node" not in ids


def test_context_adds_below_a_symptom():
    """A context word adds to an entry a symptom already surfaced, and weighs less than one."""
    with_context = match_playbook(PlaybookQuery(text="srun with --ntasks-per-node=1 and 8 GPUs per node",
                                                intent="troubleshoot", gpu_count=8), limit=0)
    alone = match_playbook(PlaybookQuery(text="--ntasks-per-node=1 and 8 GPUs per node",
                                         intent="troubleshoot", gpu_count=8), limit=0)
    a = next(m for m in with_context if m.id == "pb-slurm-ntasks-per-node")
    b = next(m for m in alone if m.id == "pb-slurm-ntasks-per-node")
    assert b.score < a.score < b.score + 1.0
    assert a.matched_context and not b.matched_context


@pytest.mark.parametrize("text", [
    "Training with nn.DataParallel on 4 GPUs is hardly faster than one GPU. How can I speed it up?",
    "Under DataParallel GPU 0 uses much more memory than the other cards and is the slowest, why?",
    "Is DataParallel supposed to be this slow on 8 cards? The epoch time barely dropped.",
    "用DataParallel在4张卡上训练，速度比单卡快不了多少，怎么办？",
    "DataParallel多卡训练时0号卡显存比其他卡高很多，速度也慢",
    "nn.DataParallel 跑8卡和跑2卡速度差不多，为什么？",
])
def test_dataparallel_slow_or_gpu0_fuller_is_led_by_use_ddp(text):
    assert intent(text) == "troubleshoot"
    got, sentence = lead_of(text)
    assert got in ("pb-dataparallel-gather-gpu0", "pb-dataparallel-slow-use-ddp"), sentence


def test_every_class_has_three_phrasings_in_each_language():
    for group in (ONE_GPU_BUSY, HANGS_ZH + HANGS_EN, MEMORY_SWINGS):
        zh = [t for t in group if _zh(t)]
        assert len(zh) >= 3 and len(group) - len(zh) >= 3


# 9b. words inside a file name, a path or a URL are the asker's files, not a symptom
@pytest.mark.parametrize("text", [
    "Running scripts/dataparallel_train.sh on 4 GPUs, every rank is killed with exit code -9 while loading checkpoint shards.",
    "With configs/nn_dataparallel.yaml on 4 GPUs the processes get SIGKILL while the model loads, before any step.",
    "I launch https://example.com/repo/blob/main/dataparallel_demo.py on 4 GPUs and the oom-killer kills python while loading the checkpoint.",
    "用 scripts/dataparallel_train.sh 在4张卡上训练，加载checkpoint shards的时候进程被杀，exit code -9",
    "用 configs/nn_dataparallel.yaml 跑四张卡，加载模型时被系统kill了，还没开始训练",
    "我用 tools/dataparallel_demo.py 在四张卡上训练，加载模型权重时进程被杀，dmesg显示oom-killer",
])
def test_a_symptom_word_inside_a_file_name_matches_nothing(text):
    ids = [m.id for m in match_playbook(PlaybookQuery(text=text, intent="troubleshoot", gpu_count=4), limit=0)]
    assert not {"pb-dataparallel-gather-gpu0", "pb-dataparallel-slow-use-ddp"} & set(ids), ids
    got, sentence = lead_of(text)
    assert got == "pb-host-ram-loading-every-rank", sentence


def test_the_same_word_outside_a_file_name_still_matches():
    text = "Training with nn.DataParallel on 4 GPUs is hardly faster than one GPU; I launch it from scripts/train.sh."
    ids = [m.id for m in match_playbook(PlaybookQuery(text=text, intent="troubleshoot", gpu_count=4), limit=0)]
    assert "pb-dataparallel-slow-use-ddp" in ids


# 9c. low GPU utilisation, also written "GPU占用率" in Chinese, is the data pipeline's symptom
@pytest.mark.parametrize("text", [
    "四张卡训练时GPU占用率只有20%，数据读取好像跟不上",
    "8卡训练，显卡占用率一直很低，大部分时间在等数据",
    "用两张卡训练，GPU占用率只有30%左右，怎么提高？",
    "My 4-GPU run shows GPU utilization around 25%, is the data loader the bottleneck?",
    "On 8 cards the GPU utilization stays low, around 30%, and the GPUs wait for data.",
    "Two GPUs, utilization is poor and the data loading is slow; how do I speed it up?",
])
def test_low_gpu_utilisation_is_led_by_the_data_pipeline(text):
    assert intent(text) == "troubleshoot"
    got, sentence = lead_of(text)
    assert got == "pb-dataloader-starves-gpu", sentence
