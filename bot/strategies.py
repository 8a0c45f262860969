"""Strategy ids shared by every part (see DESIGN.md), with their display names; also the display
names of optimizers and fine-tuning modes (one home for each label)."""

from __future__ import annotations

from typing import Literal

StrategyId = Literal[
    "ddp",
    "fsdp_full_shard",
    "fsdp_shard_grad_op",
    "fsdp_hybrid_shard",
    "fsdp_full_shard_offload",
    "none",
    "out_of_scope",
]

# The strategies that train something; `none` and `out_of_scope` are answers, not strategies.
TRAINING_STRATEGIES: tuple[str, ...] = (
    "ddp",
    "fsdp_shard_grad_op",
    "fsdp_full_shard",
    "fsdp_hybrid_shard",
    "fsdp_full_shard_offload",
)
ALL_STRATEGIES: tuple[str, ...] = TRAINING_STRATEGIES + ("none", "out_of_scope")

LABELS_EN = {
    "ddp": "DDP",
    "fsdp_full_shard": "FSDP full shard",
    "fsdp_shard_grad_op": "FSDP shard grad-op",
    "fsdp_hybrid_shard": "HSDP (hybrid shard)",
    "fsdp_full_shard_offload": "FSDP full shard + CPU offload",
    "none": "nothing fits as asked",
    "out_of_scope": "out of scope",
}
LABELS_ZH = {
    "ddp": "DDP",
    "fsdp_full_shard": "FSDP 全分片 (FULL_SHARD)",
    "fsdp_shard_grad_op": "FSDP 梯度+优化器分片 (SHARD_GRAD_OP)",
    "fsdp_hybrid_shard": "HSDP 混合分片 (HYBRID_SHARD)",
    "fsdp_full_shard_offload": "FSDP 全分片 + CPU 卸载",
    "none": "按现有条件放不下",
    "out_of_scope": "不在讨论范围内",
}


def label(strategy: str, language: str = "en") -> str:
    return (LABELS_ZH if language == "zh" else LABELS_EN).get(strategy, strategy)


# Short names for narrow tables (terminal, Slack); the full label is used in prose.
SHORT_EN = {"ddp": "DDP", "fsdp_full_shard": "FSDP full", "fsdp_shard_grad_op": "FSDP grad-op",
            "fsdp_hybrid_shard": "HSDP", "fsdp_full_shard_offload": "FSDP offload"}
SHORT_ZH = {"ddp": "DDP", "fsdp_full_shard": "FSDP 全分片", "fsdp_shard_grad_op": "FSDP 梯度分片",
            "fsdp_hybrid_shard": "HSDP", "fsdp_full_shard_offload": "FSDP 卸载"}


def short_label(strategy: str, language: str = "en") -> str:
    return (SHORT_ZH if language == "zh" else SHORT_EN).get(strategy) or label(strategy, language)


OPTIMIZER_LABELS = {"adamw": "AdamW", "sgd": "SGD momentum", "adam8bit": "8-bit Adam"}
FINETUNE_LABELS = {"full": ("全参微调", "full fine-tune"), "lora": ("LoRA", "LoRA"), "qlora": ("QLoRA", "QLoRA")}


def optimizer_label(optimizer: str | None) -> str:
    return OPTIMIZER_LABELS.get(optimizer or "", str(optimizer))


def finetune_label(finetune: str | None, language: str = "en") -> str:
    zh, en = FINETUNE_LABELS.get(finetune or "full", (str(finetune), str(finetune)))
    return zh if language == "zh" else en



# DeepSpeed ZeRO stage <-> the FSDP strategy that shards the same states (ZeRO paper sec. 5,
# https://arxiv.org/abs/1910.02054; FSDP's docs map FULL_SHARD to ZeRO-3 and SHARD_GRAD_OP to ZeRO-2,
# https://pytorch.org/docs/stable/fsdp.html). ZeRO-1 shards only the optimizer state: FSDP has no
# exact match; SHARD_GRAD_OP is its nearest (it also shards grads).
ZERO_TO_STRATEGY = {0: "ddp", 1: "fsdp_shard_grad_op", 2: "fsdp_shard_grad_op", 3: "fsdp_full_shard"}
STRATEGY_TO_ZERO = {"ddp": 0, "fsdp_shard_grad_op": 2, "fsdp_full_shard": 3, "fsdp_hybrid_shard": 3,
                    "fsdp_full_shard_offload": 3}
# what DeepSpeed adds to the stage for the strategies a bare stage does not name: ZeRO++'s
# hierarchical partitioning (hpZ) keeps a secondary shard per node, as HSDP does
_ZERO_SUFFIX = {"fsdp_hybrid_shard": " + hpZ", "fsdp_full_shard_offload": " + offload"}


def zero_name(strategy: str) -> str:
    """The strategy in DeepSpeed's terms ("ZeRO-3 + offload")."""
    return f"ZeRO-{STRATEGY_TO_ZERO[strategy]}{_ZERO_SUFFIX.get(strategy, '')}"
