"""Understanding: what a question (plus the conversation before it) says, as typed data.

This package owns reading text — prose in Chinese or English, pasted configs and command lines,
error logs — into a ``TrainingSetup`` whose every field carries its provenance, an intent, the
topics asked about and facts observed in logs. ``bot.parse.parse_conversation`` returns a
``Parsed`` that carries these (the types below are the contract the pipeline consumes).

Modules (each one concern; ``reader.read_turn`` runs them in this order):
``text`` (cleaning, caps, refused digit runs), ``logs`` (CUDA OOM, nvidia-smi, DeepSpeed estimates),
``config`` (YAML/JSON/TOML/CLI/env keys, hostfiles, SLURM), ``spans`` (catalog card and model
names), ``names`` (sizes written in names the catalog lacks, names with no size), ``roles``
(clauses that are not the run's: asides, other people's setups), ``prose`` (zh/en sentences: roles
of figures, counts, negations, contradictions), ``intent`` (intent, topics, compared strategies).
``condense`` compresses a long paste to its facts before any of them; ``notes`` words the reader's
notes and contradictions in zh/en. Measured on ``evals/parse_corpus.jsonl`` by
``python -m evals.bench_parse``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Intent = Literal["recommend", "concept", "troubleshoot", "capacity", "out_of_scope"]
# "history": kept from an earlier turn of a follow-up; "carried": kept from an earlier setup into a
# question that names a new one (docs/bot.md, "Conversation rules").
FieldSource = Literal["stated", "config", "log", "history", "carried", "assumed"]

# Topics a question can ask about. The pipeline answers the asked topic first; the knowledge
# layer uses them to pick passages. One vocabulary, shared by parser, evidence and evals.
TOPICS: tuple[str, ...] = (
    "fsdp1_vs_fsdp2",             # FSDP1 or FSDP2 / fully_shard
    "shard_grad_op_vs_full_shard",  # SHARD_GRAD_OP vs FULL_SHARD, ZeRO-2 vs ZeRO-3
    "zero_vs_fsdp",               # DeepSpeed ZeRO stages / offload vs FSDP
    "hybrid_shard",               # should I use HYBRID_SHARD / HSDP
    "activation_checkpointing",   # do I need activation (gradient) checkpointing
    "ddp_memory_knobs",           # gradient_as_bucket_view, fused AdamW, DDP OOM fixes
    "fsdp_slower_than_ddp",       # why is FSDP slower than DDP
    "multi_node_slow",            # two nodes slower than one, slow inter-node link
    "oom",                        # out of memory error / troubleshooting memory
    "memory_not_divided",         # more GPUs (or ZeRO) but the same memory per GPU
    "grad_accumulation",          # gradient accumulation, no_sync
    "cpu_offload",                # CPU offload
    "lora",                       # LoRA/QLoRA with FSDP/DDP
    "multi_model_rl",             # PPO/GRPO/DPO with several models
    "moe",                        # mixture of experts, expert parallel
    "how_many_gpus",              # how many GPUs do I need
    "communication",              # communication volume/bandwidth
    "mixed_precision",            # bf16/fp16/fp32, scaler
    "torch_compile",              # torch.compile with FSDP
    "inference",                  # serving / inference (out of scope for DDP/FSDP)
)


@dataclass(frozen=True)
class Provenance:
    """Where one setup field's value came from: ``span`` is the exact text it was read from."""

    source: FieldSource
    span: str = ""
    confidence: float = 1.0


@dataclass(frozen=True)
class ReadNote:
    """Something the reader did that the answer should say, as data: a code and its values
    (wording lives with the answer; ``bot.understand.notes`` has a default zh/en text per code).

    Codes: ``size_from_name`` {name, params_b, span}; ``moe_from_name`` {name, experts, expert_b,
    params_b, active_b}; ``active_from_name`` {name, params_b, active_b}; ``model_unsized`` {name};
    ``count_implied`` {count, span}; ``used_not_capacity`` {gib, span}; ``aside_hardware`` {span};
    ``alternative_weighed`` {option, span}; ``method_asked`` {span}; ``failed_run_setup`` {failed, worked};
    ``failed_run_count`` {failed (a count, or "several"), worked, failed_span, worked_span}; ``memory_alternatives``
    {sizes, span}; ``inference_in_training`` {span}; ``others_setup``
    {span}; ``one_process`` {span}; ``new_setup`` {carried: [fields], dropped: [fields]};
    ``condensed`` {chars, kept_chars}; ``id_number_ignored`` {digits}; ``card_typo`` {span, name, options}
    and ``card_typo_options`` {span, options} (a card typed with one slip); ``contradiction_computed``
    {field, a, b, value} (a contradiction computed on one reading, with one question);
    ``family_sized_as_written`` {name, params_b}; ``inference_quoted`` {span}; ``card_alternatives``
    {cards, span, first} and ``count_alternatives`` {counts, span} (alternatives weighed: a line each);
    ``count_superseded`` {earlier, later, earlier_span, later_span} (a count restated later),
    ``count_baseline`` {span} (one card as a comparison's baseline), ``count_per_process`` {span}
    (one card per process), ``count_fallback`` {count, span} (a count weighed if the first fails), ``count_rest_plus_one``
    {count, span} ("the main card ... the other 3"), ``count_summed`` {count, span} (two kinds of card), ``machines_tried`` {span} (one run tried on
    several machines in turn), ``count_subset`` {used, total, span} (some of the machine's cards) and ``count_from_device_list``
    {count, span} (a weak count from device indices), all from ``bot.understand.count_mentions``;
    ``count_several`` {span} (several cards, no number: asked) from ``bot.understand.prose``;
    ``reference_run`` {span} (an earlier run beside the one asked about) from ``bot.understand.run_roles``.
    ``one_process_visible_devices`` {count, span} (a launch of one process that sees several cards) from the reader.
    """

    code: str
    values: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Contradiction:
    """Two readings of one field that cannot both hold ("my A100 has 24GB", "7B model, 70B model",
    "LoRA full fine-tune", "单卡，8张"): the answer asks which one, it never picks silently."""

    field: str
    values: tuple = ()
    spans: tuple = ()


@dataclass
class Observed:
    """Facts a user reports from a run (an OOM log, nvidia-smi, a DeepSpeed estimate).

    These describe what happened, not the card: an OOM's "79.35 GiB total capacity" is the card's
    memory (kept as ``capacity_gib`` and used for ``gpu_memory_gb``), "77.65 GiB already allocated"
    is what the run used.
    """

    oom: bool = False
    capacity_gib: float | None = None          # "X GiB total capacity"
    allocated_gib: float | None = None         # "X GiB already allocated"
    tried_to_allocate_gib: float | None = None  # "Tried to allocate X GiB"
    used_per_gpu_gib: float | None = None      # "每张卡只占用了13G", "uses 67G per GPU"
    free_gib: float | None = None              # "显存还剩 10G", "12GB spare": memory a run leaves unused
    worked_gpu_count: int | None = None        # "works on 2 GPUs but OOMs on 4": the run that worked (2)
    estimate_gib: float | None = None          # a tool's estimate quoted by the user
    framework: str | None = None               # "deepspeed", "accelerate", "torchrun", "llamafactory", ...
    deepspeed: bool = False                    # the run itself uses DeepSpeed (its launcher, a config, a ZeRO stage)
    zero_stage: int | None = None              # DeepSpeed ZeRO stage 0..3
    zero_offload: bool | None = None           # offload_optimizer / offload_param
    fsdp_strategy: str | None = None           # a strategy id the user runs now ("fsdp_full_shard", ...)
    models: tuple[str, ...] = ()               # roles in a multi-model job: actor, critic, reference, reward


@dataclass
class UnderstandingExtras:
    """What the parser adds beside the setup (kept on ``Parsed`` as attributes of the same names)."""

    intent: Intent = "recommend"
    topics: list[str] = field(default_factory=list)
    provenance: dict[str, Provenance] = field(default_factory=dict)
    observed: Observed = field(default_factory=Observed)
    compare: tuple[str, ...] = ()  # two strategy ids the user asks to choose between, if named
