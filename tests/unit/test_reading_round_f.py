"""Round f reading classes (brief R2), each in phrasings of our own, en and zh.

1. Somebody else's card (the authors', the paper's, the README's) beside the asker's own: the
   asker's cards are the setup, the other one is a reference.
2. A sequence length written as tokens per sequence or sample; tokens per step, batch or second
   stay out of ``seq_len``.
"""

from __future__ import annotations

import pytest
from _helpers import answer_offline

from bot.parse import parse_conversation


def _setup(question: str):
    return parse_conversation(question).setup


# (question, the asker's card family, the asker's count)
OTHERS_CARD = [
    ("The authors tested on 80 GB A100s; on my 4 RTX 4090 the run goes out of memory", "4090", 4),
    ("The README says it was trained on 8x H100, but my 8 RTX 3090 run out of memory", "3090", 8),
    ("The paper benchmarked it on H100 80GB cards but my 2 RTX 3090 hit CUDA OOM", "3090", 2),
    ("It was evaluated on A100 80GB. I have 4 RTX 4090 and training OOMs", "4090", 4),
    ("The original authors trained it on 8 H100s. I only have 2 RTX 4090, what can I run?", "4090", 2),
    ("官方在A100 80G上测试的，我用4张4090训练就爆显存了", "4090", 4),
    ("作者用的是8张A800，我只有两张3090，一跑就OOM", "3090", 2),
    ("论文里是在8张H100上训练的，我的4张3090显存不够", "3090", 4),
    ("原作者用8张A100训练的，我手上只有两张4090", "4090", 2),
    ("项目是在H100上验证的，我的四张4090跑不起来", "4090", 4),
]


@pytest.mark.parametrize(("question", "family", "count"), OTHERS_CARD)
def test_the_askers_card_is_the_setup_not_the_tested_one(question, family, count):
    s = _setup(question)
    assert s.gpu and family in s.gpu, (question, s.gpu)
    assert s.gpu_count == count
    assert s.gpu_memory_gb == 24


# the asker's own "trained on" is still the run's
OWN_CARD = [
    ("I trained it on 4 A100 80GB and it was fine", "A100", 4),
    ("We tested on 8 H100 and it runs out of memory", "H100", 8),
    ("It was trained by me on 2 RTX 4090", "4090", 2),
    ("我是在4张A100上训练的，显存够吗", "A100", 4),
    ("我们在8张H100上测试的，显存不够", "H100", 8),
    ("我用两张4090训练的，会OOM吗", "4090", 2),
]


@pytest.mark.parametrize(("question", "family", "count"), OWN_CARD)
def test_the_askers_own_tested_card_stays(question, family, count):
    s = _setup(question)
    assert s.gpu and family in s.gpu, (question, s.gpu)
    assert s.gpu_count == count


SEQ_PER_SAMPLE = [
    ("Training a 7B model with 131072 tokens per sequence on 8 H100", 131072),
    ("7B on 8 A100, 8k tokens each sample", 8192),
    ("each sample has about 16k tokens; 7B full fine-tune on 8 H100", 16384),
    ("sequences of 32k tokens, 7B on 8 A100", 32768),
    ("context of 128k, 8 H100, 7B", 131072),
    ("每条样本 8192 个 token，8张A100训练7B", 8192),
    ("每条数据约 4096 个 token，4张4090 训练7B", 4096),
    ("单条 32k token，8张H100训练7B模型", 32768),
    ("上下文长度 32K，8张H100训练7B模型", 32768),
    ("每条序列 16k 个 token，8张H100训练7B", 16384),
]


@pytest.mark.parametrize(("question", "tokens"), SEQ_PER_SAMPLE)
def test_tokens_per_sequence_is_the_sequence_length(question, tokens):
    assert _setup(question).seq_len == tokens


NOT_SEQ = [
    "7B on 8 A100 with 4096 tokens per step",
    "7B on 8 A100 with 2M tokens per batch",
    "7B on 8 H100 at 3000 tokens per second per GPU",
    "每个step 100万 token，8张A100训练7B",
    "每卡每秒 3000 个 token，8张H100训练7B",
    "全局 batch 每步 4096 个 token，8张A100训练7B",
]


@pytest.mark.parametrize("question", NOT_SEQ)
def test_tokens_per_step_batch_or_second_are_not_a_sequence_length(question):
    assert _setup(question).seq_len is None


# 3. "How many GPUs with TP=8 and PP=2?" with no count given: the capacity search answers it; no
# asked-axis sentence and no fit-or-not verdict is judged on the count assumed in its place.
COUNT_ASKED = [
    "How many H100s do I need with TP=8 and PP=2 to train Llama-3-70B?",
    "With tensor parallel 8 and pipeline parallel 2, how many H100 GPUs does a Llama-3-70B full fine-tune take?",
    "How many A100 80GB cards would I need to pretrain a 70B model using TP 4 and PP 4?",
    "用TP=8、PP=2训练Llama-3-70B需要多少张H100？",
    "张量并行8、流水线并行2，全参微调Llama-3-70B至少要几张H100？",
    "70B模型预训练，TP 4 PP 4，需要多少张A100 80G？",
]


# the asked-axis sentences (direct.asked_parallel_*) open with these; a verdict on the assumed count
# says one of JUDGED
ASKED_AXIS_OPENERS = ("Yes:", "Not ", "No,", "No:", "需要：", "不是", "不需要", "不行：")
JUDGED = ("does not fit as asked", "no plan on these GPUs", "按现在的配置放不下", "这些卡上也没有放得下")


@pytest.mark.parametrize("question", COUNT_ASKED)
def test_an_unstated_count_that_is_asked_is_answered_not_assumed(question):
    parsed = parse_conversation(question)
    assert parsed.setup.gpu_count is None and parsed.asked_axes  # the count is unstated, the axes read
    ans = answer_offline(question)
    first = ans.text.strip()
    assert first.startswith(("At least", "至少")), first[:200]  # the capacity answer leads
    assert not any(j in ans.full_text for j in JUDGED), ans.full_text[:400]


STATED_COUNT = [
    "We train Llama-3-70B on 8 H100 with TP=8 and PP=2, should we add CP?",
    "Is pipeline parallelism needed for a 70B full fine-tune on 16 H100?",
    "我们用8张H100、TP=8 PP=2训练Llama-3-70B，要不要加上下文并行？",
    "16张H100全参微调70B，需要流水线并行吗？",
]


@pytest.mark.parametrize("question", STATED_COUNT)
def test_a_stated_count_keeps_the_asked_axis_verdict(question):
    assert answer_offline(question).text.strip().startswith(ASKED_AXIS_OPENERS)
