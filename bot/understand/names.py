"""Model names the catalog lacks: the size written in the name, and names with no size at all.

People name the model they train, and many names are not in the catalog (a fine-tune's own name,
a new family, a vision backbone). The size written in the name is then the best fact there is, and
it is said in the answer as read from the name ("7B read from the name `foo2_7b_chat`"):

- ``foo2_7b_chat`` is 7B: a digit glued to the family's letters is its version ("foo2", "qwen2"),
  so an underscore after it separates, it is not a decimal point; ``internlm2-chat-1_8b`` is 1.8B
  and ``coder_6_7b`` 6.7B (the integer stands alone, and Hugging Face ids write the point as ``_``);
  ``internlm2_5_7b`` is 7B (``2_5`` is the version 2.5, and a decimal never continues it);
- ``xxx-1.8B``, ``13b``, ``0.5B``, ``pythia-410m`` (0.41B) as written;
- ``8x7B``: a mixture of experts, 8 experts of a 7B model's FFN that share its attention and
  embeddings. Mixtral-8x7B has 46.7B parameters in total, 12.9B active per token (top-2 routing),
  against Mistral-7B's 7.24B: the shared part is about 22% of the dense model
  (https://mistral.ai/news/mixtral-of-experts, https://huggingface.co/mistralai/Mixtral-8x7B-v0.1).
  The total is estimated with that share: ``e * (SHARED + n * (1 - SHARED))``;
- ``30B-A3B``: 30B in total, 3B active per token (the Qwen3 MoE naming,
  https://huggingface.co/Qwen/Qwen3-30B-A3B).

``unsized_name(text)`` finds the name of a model the person trains when no size can be read
from it ("fine-tune Aria", "训练一个ResNet-50", "MiniCPM-Llama3-V-2_5"): the answer keeps the name
and asks for its size (one question), never a blank "how big is the model?".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Share of a dense model that the experts of its MoE version share (attention, embeddings, norms):
# Mixtral-8x7B = 46.7B = 7.24 * (s + 8 (1 - s)) gives s = 0.22 (source in the module docstring).
MOE_SHARED_SHARE = 0.22
MOE_TOP_K = 2  # experts per token when the name does not say (Mixtral's top-2 routing)


@dataclass(frozen=True)
class NameSize:
    """A model size read from a name: total parameters in billions and the text it came from."""

    params_b: float
    span: str
    experts: int | None = None      # "8x7B": 8
    expert_b: float | None = None   # "8x7B": 7
    active_b: float | None = None   # "A3B": 3 (or the top-2 estimate for "8x7B")


_MOE = re.compile(r"(?<![A-Za-z0-9.])(\d{1,3})\s*[x×*]\s*(\d{1,4}(?:\.\d{1,3})?)\s*b(?![a-z0-9])", re.I | re.A)
# "30B-A3B", "235b_a22b": total then active
_ACTIVE = re.compile(r"(\d{1,4}(?:\.\d{1,3})?)\s*b[-_ ]?a(\d{1,3}(?:\.\d{1,3})?)\s*b(?![a-z0-9])", re.I | re.A)
# a size standing alone: not glued to a letter before it ("1.8B", "-7b", "_13B"); a decimal written
# with "_" never continues a version ("internlm2_5_7b" is version 2.5 at 7B, not 5.7B)
_ALONE_DECIMAL = re.compile(r"(?<![A-Za-z0-9.])(?<!\d_)(\d{1,4}[._]\d{1,3})\s?b(?![a-z0-9])", re.I | re.A)
_ALONE = re.compile(r"(?<![A-Za-z0-9.])(\d{1,4})\s?b(?![a-z0-9])", re.I | re.A)
# a size glued to the family's letters ("mistral7b", "qwen2_7b"): the digits right before "b" only
_GLUED = re.compile(r"(?<=[A-Za-z_\-])(\d{1,4})b(?![a-z0-9])", re.I | re.A)
_MILLIONS = re.compile(r"(?<![A-Za-z0-9.])(\d{2,4}(?:\.\d{1,2})?)\s?m(?![a-z0-9])", re.I | re.A)


def size_from_name(name: str) -> NameSize | None:
    """The size written in a model name (see the module docstring), else None."""
    if not name:
        return None
    if m := _ACTIVE.search(name):
        total, active = float(m.group(1)), float(m.group(2))
        if 0 < active < total:
            return NameSize(total, m.group(0), active_b=active)
    if m := _MOE.search(name):
        n, e = int(m.group(1)), float(m.group(2))
        if n >= 2 and e > 0:
            total = e * (MOE_SHARED_SHARE + n * (1 - MOE_SHARED_SHARE))
            active = e * (MOE_SHARED_SHARE + min(n, MOE_TOP_K) * (1 - MOE_SHARED_SHARE))
            return NameSize(round(total, 1), m.group(0), experts=n, expert_b=e, active_b=round(active, 1))
    for pattern in (_ALONE_DECIMAL, _ALONE, _GLUED):
        for m in pattern.finditer(name):
            value = float(m.group(1).replace("_", "."))
            if value > 0:
                return NameSize(value, m.group(0))
    if m := _MILLIONS.search(name):
        value = float(m.group(1))
        if value > 0:
            return NameSize(round(value / 1000, 4), m.group(0))
    return None


# The object of a training verb, or a name given as the model: "fine-tune Aria", "训练一个ResNet-50",
# "model: MiniCPM-V", "模型是InternVL2".
_VERB = (r"(?:fine-?tun\w*|finetun\w*|train\w*|pre-?train\w*|sft|lora|qlora|微调|训练|全参微调|全量微调|预训练|跑)"
         r"\s*(?:of\s+)?(?:an?\s+|the\s+|my\s+|our\s+|一个|个|下)?")
_NAME = r"([A-Za-z][A-Za-z0-9]*(?:[-_./][A-Za-z0-9]+)*)"
_OBJECT = re.compile(_VERB + _NAME, re.I | re.A)
_LABELLED = re.compile(r"(?:\bmodel\s*(?:is|:|=)|模型(?:是|为|[:：]))\s*" + _NAME, re.I | re.A)
_NAMED_MODEL = re.compile(_NAME + r"\s*(?:model\b|模型)", re.I | re.A)
# a name right before what is done to it: "MiniCPM-Llama3-V-2_5 finetune", "InternVL2 全参微调"
_SUBJECT = re.compile(_NAME + r"\s*(?:的)?\s*(?:fine-?tun\w*|finetun\w*|training|lora|qlora|全参|全量|微调|训练|sft)", re.I | re.A)
# Words that follow a training verb or precede "model" without naming one
_NOT_NAMES = re.compile(
    r"(?:a|an|the|it|this|that|them|my|our|with|on|using|use|in|for|and|or|to|of|model|models|llm|llms|network|"
    r"net|job|run|runs|data|dataset|datasets|from|via|by|at|is|was|will|can|large|big|small|new|base|own|"
    r"ddp|fsdp|fsdp1|fsdp2|hsdp|zero\d?|deepspeed|megatron|lora|qlora|peft|sft|rlhf|ppo|dpo|grpo|full|fully|"
    r"parameters?|params?|script|scripts|code|loop|speed|time|memory|gpus?|cards?|nodes?|bf16|fp16|fp32|amp|"
    r"torchrun|accelerate|pytorch|torch|transformers|trainer|hf|huggingface|stage\d?|mode|step|steps|"
    r"mixed|precision|only|just|also|again|faster|slower|well|properly|successfully|locally)",
    re.I | re.A)


def unsized_name(text: str) -> str | None:
    """The name of the model trained when the text names one without a size, else None."""
    for pattern in (_LABELLED, _OBJECT, _NAMED_MODEL, _SUBJECT):
        for m in pattern.finditer(text):
            name = m.group(1).strip("-_./")
            if len(name) < 3 or _NOT_NAMES.fullmatch(name) or re.fullmatch(r"\d+[a-z]?", name, re.I):
                continue
            if not (re.search(r"\d|[A-Z].*[A-Z]|-", name) or pattern in (_LABELLED, _OBJECT) and name[0].isupper()):
                continue  # "train faster", "微调 model": a word, not a name
            if re.search(r"\.(?:py|sh|json|ya?ml|toml|txt)$", name, re.I):
                continue  # a script or file
            return name[:80]
    return None
