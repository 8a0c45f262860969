"""Strategy ids shared by every part (see DESIGN.md), with their display names; also the display
names of optimizers and fine-tuning modes. The names are wording, kept in the message catalogs
(``strategy.*`` in bot/answer/messages, both languages); this module owns the ids and looks them up."""

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


def _words(language: str, group: str) -> dict[str, str]:
    """The names in the message catalogs (``strategy.<group>.*``, both languages). Imported on
    first use: importing the ids loads neither YAML nor Jinja (bot.answer imports this module)."""
    from bot.answer.catalog import words_in

    return words_in(language, f"strategy.{group}.")


def label(strategy: str, language: str = "en") -> str:
    """A strategy's name in prose (``strategy.label.*``); an unknown id is its own name."""
    return _words(language, "label").get(strategy, strategy)


def short_label(strategy: str, language: str = "en") -> str:
    """Its short name for narrow tables (terminal, Slack; ``strategy.short.*``), else the full label."""
    return _words(language, "short").get(strategy) or label(strategy, language)


def optimizer_label(optimizer: str | None, language: str = "en") -> str:
    return _words(language, "optimizer").get(optimizer or "", str(optimizer))


def finetune_label(finetune: str | None, language: str = "en") -> str:
    return _words(language, "finetune").get(finetune or "full", str(finetune))


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
