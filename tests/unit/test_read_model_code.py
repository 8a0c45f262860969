"""The reader states ``model_code`` from the user's training stack (bot.understand.stack): the
transformers-based stacks run Hugging Face's LlamaDecoderLayer, torchtitan runs PyTorch-native blocks,
Megatron/NeMo/torchtune have no calculator mode, and two kinds of stack named together leave it unset."""

import pytest

from bot.understand.reader import read_turn
from bot.understand.stack import model_code_of

TRANSFORMERS = [
    "Fine-tuning Llama-2-7B with the Hugging Face Trainer and FSDP on 8x A100 80GB, does it fit?",
    "我用HF的Trainer在4张A800上全参微调Qwen2.5-7B，FSDP还是DDP？",
    "Running SFTTrainer from TRL on 2x 4090 with LoRA for Llama 3 8B — which strategy?",
    "用 LLaMA-Factory 在 8 张 H100 上训练 llama3-8b，显存够吗",
    "axolotl config, 4x A100 40GB, Mistral 7B QLoRA: FSDP or DeepSpeed?",
    "我们用unsloth在一张3090上跑qlora，模型是llama2-7b",
    "accelerate launch --config_file fsdp.yaml train.py on 8 H100s, Llama-3.1-8B full fine-tune",
    "用 peft 的 get_peft_model 包了一下 llama-2-13b，8卡A100，显存多少",
    "transformers==4.46.0, torch 2.5, 8x H100, Llama-3-8B full shard OOM",
]
PYTORCH = [
    "torchtitan on 8x H100, Llama 3.1 8B, FSDP2 with activation checkpointing: how much memory?",
    "我们用 torchtitan 在 64 张 H100 上预训练 llama3-70b，要不要 HSDP？",
    "Launching torchtitan's llama3 8b toml on 2 nodes of 8 A100s",
]
NONE = [
    "Llama-2-7B on 8x A100 80GB, FSDP or DDP?",
    "Megatron-LM 在 16 张 A100 上训 llama2-13b，FSDP 和 Megatron 哪个好？",
    "NeMo on 8 H100s for Llama 3 70B, memory per GPU?",
    "Should we move from the HF Trainer to torchtitan for Llama-3-8B on 8x H100?",
    "我们想把 LLaMA-Factory 换成 torchtitan，8卡H100，llama3-8b",
    "How do transformers models scale in memory with sequence length on 8 GPUs?",
    "Will accelerate training help with 4 A100s for Llama-2-7B?",
]


@pytest.mark.parametrize("text", TRANSFORMERS)
def test_transformers_stacks_state_transformers_code(text):
    reading = read_turn(text)
    assert reading.fields.get("model_code") == "transformers", text
    assert reading.provenance["model_code"].source == "stated"


@pytest.mark.parametrize("text", PYTORCH)
def test_torchtitan_states_pytorch_native_code(text):
    assert read_turn(text).fields.get("model_code") == "pytorch", text


@pytest.mark.parametrize("text", NONE)
def test_no_stack_or_both_kinds_leave_it_unset(text):
    assert "model_code" not in read_turn(text).fields, text


def test_a_traceback_through_transformers_is_read_from_the_log():
    text = ("8x A100 80GB, Llama-2-7B, FSDP full shard:\n"
            '  File "/usr/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py", line 300, in forward\n'
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert model_code_of(text) == ("transformers", "transformers/models/")
    assert read_turn(text).fields.get("model_code") == "transformers"


def test_the_calculator_takes_the_read_field():
    """The field the reader sets moves the estimate (Llama-2-7B full shard: 6h + 4d B less per token
    and block with transformers' code)."""
    from bot.calc import estimate_setup
    from bot.core.setup import TrainingSetup

    base = dict(model="llama2-7b", gpu="a100-80gb", gpu_count=8, precision="bf16-mixed", seq_len=2048)
    native = estimate_setup(TrainingSetup(**base)).memory["fsdp_full_shard"].activations_gib
    hf = estimate_setup(TrainingSetup(**base, model_code=read_turn(TRANSFORMERS[0]).fields["model_code"]))
    assert hf.memory["fsdp_full_shard"].activations_gib < native
