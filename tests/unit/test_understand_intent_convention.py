"""The intent convention of evals/cases/README.md ("Intent labels"): the question sentence decides,
reported symptoms are context. One test per class, each with phrasings in both languages."""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation
from bot.understand.intent import read_intent
from bot.understand.sentences import sentences_of


def intent(text: str, history: list[str] | None = None) -> str:
    return parse_conversation(text, history).intent


# --- "how many / how much do I need" is capacity, also beside an OOM in the same message ------------

@pytest.mark.parametrize("text", [
    "您好，请问全参数微调 baichuan-7b 模型至少需要多少显存资源？目前在单张 A100 80G 上会出现 OOM 的问题",
    "8*A100 (80G) deepspeed zero3 全量微调72B遇到OOM，问下需要怎样的配置和资源才能全量微调72B？还是说72B只能lora方式微调？",
    "I failed using 4 H20 (96GB) GPUs with trl. I would like to know how many H20 GPUs are needed.",
    "I have a question about the minimal hardware requirement to run PPO on 7B models. Is it possible with 4 40G A100?",
    "请问微调一个模型（例如7B）需要多大的显存？",
    "Suppose I'm using A100 80G (1 node with 8 gpus), then I need 4 nodes with totally 32 gpus?",
])
def test_a_quantity_asked_is_capacity_even_with_an_oom(text):
    assert intent(text) == "capacity"


# --- a setup plus "can I / is it enough / should I / which" is recommend ----------------------------

@pytest.mark.parametrize("text", [
    "请问4*A100 40G能全参数微调Baichuan-13B吗？",
    "双机16卡A800，跑QWen 72B全量微调，跑通了吗",
    "8 X A100 (80GB) for 13B finetune is sufficient ?",
    "I have A100 80GB and a 7B model. I guess this will fit onto the GPU right?",
    "Training Llama-2-13B with DDP on 8 GPUs and I get OOM. Should I switch to FSDP?",
    "lora微调14b-chat可以用deepspeed zero 3 吗？显卡是8 x V100(16G)，zero2和zero3 都存在OOM",
])
def test_can_my_setup_do_it_is_recommend(text):
    assert intent(text) == "recommend"


def test_can_i_use_a_card_with_no_count_asks_how_many():
    assert intent("Can we use A100 40G to finetune llama-7B? Is there anyone try that?") == "capacity"
    assert intent("4090-24G 是否能微调7B呢") == "capacity"
    # with the count in an earlier turn it is a question about that setup again
    assert intent("那么13B用32G显存能微调吗？", ["如果是4个没有NVLink的V100（32G显存），13B能微调吗？"]) == "recommend"


# --- asking how to fix a run, or why it failed, is troubleshoot ---------------------------------------

@pytest.mark.parametrize("text", [
    "全参数微调需要单张卡的显存多少？我batchsize=1也会超显存，有没有办法将模型分到两张卡上做训练？",
    "lora微调，单张A100比2张A100速度快，请问是什么原因呢？",
    "How many GPUs are needed for 7B? use 8*H800 train qwen2-vl-7B, but OOM. Any other way to save GPU memory？",
    "OOM with DDP on 4x 3090 for a 7B full finetune, what should I change?",
    "I have multiple nodes of 8 40G A100 and zero3 is slow. Is there a way to control zero3 to speed up training?",
    "你好，我在使用 2机，每机6卡的时候，训练速度为原来的 1/5，请问可能是哪个地方出错的？",
])
def test_fixing_a_run_is_troubleshoot(text):
    assert intent(text) == "troubleshoot"


@pytest.mark.parametrize("text", [
    "我现在用2台2*80G的A800多机多卡来lora微调baichuan2-13B，训练速度有点奇怪，4卡预估时间却接近两倍。",
    "继续微调Llama-2-70B：2节点共16卡（2*8*A100 40GB），大大慢于1节点8卡的训练速度",
    "I encountered the problem of running out of GPU memory. I was using 4 A100s(40GB).",
    "I even can not load the llama 2 70b to GPU with 8*a-100 (80gb) and 1T memory.",
])
def test_a_reported_failure_with_no_question_is_troubleshoot(text):
    assert intent(text) == "troubleshoot"


# --- no setup needed: concept -----------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    'How is "Full finetune 8B on 24GB card" achieved? I would appreciate knowing the exact techniques.',
    "Are there plans to re-introduce hybrid sharding (or is there some other way to accomplish it)? "
    "Or is this an area that FSDP2 doesn't have parity yet?",
    "discussion: FSDP2 is basically a PyTorch-native version of ZeRO-3. However, switching to FSDP2 means "
    "there is no option to run the equivalence of ZeRO-1 and ZeRO-2.",
    "HYBRID_SHARD does not work when you can't fit the model on one node. It would be beneficial if we can have "
    "HYBRID_SHARD apply full sharding within each group of 4 nodes.",
    "为什么FSDP的显存比DDP少那么多？原理是什么",
    "SHARD_GRAD_OP vs FULL_SHARD: when is each better?",
])
def test_questions_that_need_no_setup_are_concept(text):
    assert intent(text) == "concept"


# --- inference / serving is out of scope --------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "问一下 Qwen1.5-72B-Chat 至少需要多少显存才可以跑呀，我 8*A10 还是没办法跑起来",
    "请问 InternVL2-Llama3-76B的训练和推理大概需要多少显存？我这边报内存不够。目前测试的是推理。",
    "How much memory does Llama-3-70B-Instruct need for inference only?",
])
def test_running_a_model_for_inference_is_out_of_scope(text):
    assert intent(text) == "out_of_scope"


def test_running_a_training_config_is_not_inference():
    assert intent("这个应该8卡A800能跑吧，--model_type qwen_72b_chat --sft_type lora") != "out_of_scope"
    assert intent("双击没跑通，三机24卡A800才跑通") != "out_of_scope"


# --- the question sentence decides across a conversation ----------------------------------------------

def test_a_follow_up_without_a_question_keeps_the_question_asked():
    history = ["Is is possible to train 70b model on 8*A100 80G with full fine tunning?"]
    follow = "I attempted deepspeed 3 with CPU offload, but the insufficient CPU memory caused issues. The node has 1024GB."
    assert intent(follow, history) == "recommend"
    history = ["When I increase --context_length it ends with OOM. I'm wondering why fully sharded FSDP doesn't work as expected",
               "I tried with 8 x A40 each 48GB"]
    assert intent("And I want to use meta-llama/Llama-3.2-1B", history) == "troubleshoot"


def test_hardware_given_after_a_capacity_question_asks_about_that_hardware():
    history = ["全量微调 72B 需要多少资源呢", "4台 A800 机器，用给定的 zero3，OOM"]
    assert intent("4* 8 *A800", history) == "recommend"


def test_sentences_keep_a_continuation_with_its_question():
    parts = sentences_of("问下需要怎样的配置和资源？还是说72B只能lora方式微调？我用8卡。")
    assert len(parts) == 2 and parts[0].endswith("微调？")
    reading = read_intent("why is my FSDP run so slow?", has_setup=False, oom=False)
    assert reading.asked and reading.intent == "troubleshoot"


def test_a_comparison_asked_in_general_is_concept_and_about_a_run_is_troubleshoot():
    assert intent("Is an H100 faster than an A100 for 7B?") == "concept"
    assert intent("Why FSDP is much slower than normal data Parallel? I change the ddp-backend to fully_sharded") == "troubleshoot"
    assert intent("Can a single A100 train 7B?") == "recommend"
