"""A memory figure in a per-step training-log line is GPU memory the run used (an observation),
never host RAM nor the card's size (issue 27: a log's ``mem=61.2GiB`` shown as stated host RAM)."""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation

STEP_LOGS = [
    # (log line, GiB used)
    ("[10:22:13] step 340/10000 loss=1.873 lr=2.0e-05 mem=58.4GiB tok/s=2310", 58.4),
    ("iter     1200 | lm loss 2.11 | grad norm 0.83 | memory: 41.5GB | elapsed 812ms", 41.5),
    ("Epoch 2:  45%|####      | 900/2000 [12:01<14:40, loss=0.62, gpu_mem=19.8G]", 19.8),
    ("[rank3] global_step=77 loss=3.01 max_memory_allocated=66.0GB", 66.0),
    ("第 300 步 loss=1.52 lr=1e-5 mem=44.7GiB", 44.7),
    ("epoch 1 | step 50 | loss 2.03 | 显存 61.2G | 1.9s/it", 61.2),
]


@pytest.mark.parametrize("line,used", STEP_LOGS)
@pytest.mark.parametrize("question", [
    "Fine-tuning a 13B model on 4x A100 80GB with FSDP, why is it this slow?",
    "我们在 8 张 H800 上全参微调 13B，为什么吞吐这么低？",
])
def test_step_log_memory_is_used_gpu_memory(line, used, question):
    parsed = parse_conversation(f"{line}\n{question}")
    assert parsed.setup.cpu_ram_gb is None
    assert parsed.setup.gpu_memory_gb == 80
    assert parsed.observed.used_per_gpu_gib == pytest.approx(used)


def test_the_largest_field_of_a_step_is_the_peak():
    text = ("it 90 | loss 1.2 | memory_allocated 38.0GB | max_reserved 70G\n"
            "2 张 A100 80G 做 7B 全参，能不能把 batch 开大？")
    parsed = parse_conversation(text)
    assert parsed.observed.used_per_gpu_gib == pytest.approx(70.0)
    assert parsed.setup.gpu_memory_gb == 80 and parsed.setup.cpu_ram_gb is None


@pytest.mark.parametrize("text,ram", [
    ("step=30 loss=2.2 cpu_mem=200G gpu_mem=30.5G\nTraining 13B LoRA on 2x A100 80G, how to speed it up?", 200),
    ("服务器内存 512G，4 张 4090，7B 全参能跑吗？", 512),
    ("I have 64GB RAM and 2x RTX 4090; can I fine-tune a 7B model?", 64),
])
def test_host_ram_still_reads_as_host_ram(text, ram):
    assert parse_conversation(text).setup.cpu_ram_gb == ram


@pytest.mark.parametrize("text", [
    "训练到第 3 个 epoch 时，显存 48G 的卡就 OOM 了，4 张卡训 13B 怎么办？",
    "Epoch time is long. My GPU memory is 24GB; which strategy for a 7B LoRA?",
    "每张卡显存 48G，一共 4 张，训练 13B 用哪个策略？",
])
def test_a_card_size_in_prose_is_still_the_card(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_memory_gb in (24, 48)
    assert parsed.observed.used_per_gpu_gib is None
