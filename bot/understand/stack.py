"""Whose model code the user's training stack runs: the setup's ``model_code``.

The calculator counts a Llama-family block's saved tensors either as PyTorch-native code builds it
(``"pytorch"``: ``F.rms_norm``, rotary per block, as ``bot/bench/model.py`` and torchtitan do) or as
Hugging Face transformers' ``LlamaDecoderLayer`` does (``"transformers"``: its RMSNorm casts before
the weight multiply, cos/sin shared by the blocks; docs/calc.md "Whose block code"). The two differ
by 6h + 4d bytes per token and block (Llama-2-7B: 185 vs 212 KB). This module reads which one the
text's stack runs, where the text shows it:

- the stacks that build the model with transformers' modelling code: Hugging Face Trainer /
  ``TrainingArguments``, transformers itself, TRL's trainers, PEFT, accelerate (launcher, config or
  ``Accelerator``), LLaMA-Factory, axolotl, unsloth, ms-swift, OpenRLHF (each loads the model with
  ``AutoModelForCausalLM.from_pretrained``), and a traceback through ``transformers/models/...``;
- torchtitan, whose Llama is PyTorch-native (``nn.RMSNorm`` -> ``F.rms_norm``): ``"pytorch"``.
Megatron-LM / NeMo, torchtune and DeepSpeed alone run their own (or the user's) model code, for
which the calculator has no mode: nothing is read. When the text names stacks of both kinds (a
comparison, a migration) nothing is read either: the run's code is then not known.
"""

from __future__ import annotations

import re

# Patterns are data: which words show which model code. ASCII-only matching (re.A) so that a
# Chinese sentence around a name ("用HF的Trainer训练") still matches on the name's own boundaries.
_TRANSFORMERS_STACK = re.compile(
    r"hugging\s?face|\bhf\s*(?:的\s*)?trainer|\btrainer\s*\(|trainingarguments|seq2seqtrainer|"
    r"(?:import|from)\s+transformers\b|\btransformers\s*(?:==|>=|<=|~=|v?\d|库|版本|\s+(?:library|version|trainer))|"
    r"transformers/models/|modeling_llama|automodelforcausallm|"
    r"\btrl\b|sfttrainer|dpotrainer|grpotrainer|ppotrainer|rewardtrainer|"
    r"\bpeft\b|loraconfig|get_peft_model|"
    r"accelerate\s+(?:launch|config)|(?:用|通过|使用)\s*accelerate|(?:import|from)\s+accelerate\b|\baccelerator\s*\(|huggingface[-_ ]accelerate|"
    r"llama-?factory|llamafactory|finetuning_type|\baxolotl\b|\bunsloth\b|ms-swift|\bswift\s+(?:sft|rlhf|pt)\b|openrlhf",
    re.I | re.A,
)
_PYTORCH_NATIVE_STACK = re.compile(r"torchtitan", re.I | re.A)


def model_code_of(text: str) -> tuple[str, str] | None:
    """``(model_code, the words that show it)`` for the stack the text names, or None when it names
    none the calculator has a mode for, or names stacks of both kinds."""
    hf = _TRANSFORMERS_STACK.search(text)
    native = _PYTORCH_NATIVE_STACK.search(text)
    if hf and native:
        return None
    if hf:
        return "transformers", hf.group(0).strip()
    if native:
        return "pytorch", native.group(0)
    return None
