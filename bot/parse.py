"""Question text (zh/en) -> TrainingSetup: rule-based, offline, never raises.

``parse_conversation(question, history)`` is what ``bot.ask`` calls: it reads every earlier user
turn and the new question with ``bot.understand.reader.read_turn`` (prose in both languages,
pasted configs and command lines, error logs), merges them (a follow-up such as "换成H100呢"
replaces the GPU and keeps the rest), and reports what the answer needs: the language, problems
(``bot.core.setup.check_setup``), missing fields, intent, topics, per-field provenance, observed facts,
strategies to compare, whether the question is on topic, whether it carries instructions we
refuse to follow, and notices (e.g. truncation). The reading rules live in ``bot/understand/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from bot.catalog import list_gpus
from bot.core.language import answer_language
from bot.core.setup import DEFAULTS, Problem, TrainingSetup, check_setup
from bot.understand import Contradiction, Intent, Observed, Provenance, ReadNote
from bot.understand.asked_axes import asked_parallel_axes
from bot.understand.condense import condense
from bot.understand.intent import asked_strategy, asks_feasibility
from bot.understand.reader import read_turn
from bot.understand.scope import TRAINING_SYSTEM_WORDS
from bot.understand.spans import card_family
from bot.understand.text import MAX_CHARS, MAX_HISTORY_CHARS, MAX_HISTORY_TURNS, clean

# Fields an answer cannot be computed without, in the order we ask about them.
ESSENTIAL = ("params_b", "gpu_memory_gb", "gpu_count")


@dataclass
class Parsed:
    """What one question (plus the conversation before it) says."""

    setup: TrainingSetup
    language: str  # "zh" | "en"
    problems: list[Problem] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # plain-English notes; rendered per language
    on_topic: bool = True
    injection: bool = False  # the text asked us to ignore instructions or reveal secrets
    empty: bool = False
    unknown_model: str | None = None  # a model name we did not recognise (size used instead)
    # The understanding contract (bot/understand): intent, topics asked, per-field provenance,
    # facts observed in logs, strategies the user asks to compare.
    intent: Intent = "recommend"
    topics: list[str] = field(default_factory=list)
    provenance: dict[str, Provenance] = field(default_factory=dict)
    observed: Observed = field(default_factory=Observed)
    compare: tuple[str, ...] = ()
    asked_strategy: str | None = None  # "Should I use HSDP?": the one strategy a yes/no question asks about
    # "Should we add TP / is CP worth it?": the model-parallel axes a question asks about (tp, cp, pp)
    asked_axes: tuple[str, ...] = ()
    asks_if_fits: bool = False  # "够吗?", "Can I train it on this?": whether the setup can train at all
    unknown_gpu: str | None = None  # a card the catalog lacks: the answer asks for its memory
    # A model read from a Hugging Face config.json pasted into the question (bot.catalog.hf_config):
    # the calculator then uses its real shape, not a generic model of its size.
    model_spec: Any = None
    # What the reader did that the answer should say (a code and its values: "7B read from the
    # name", "count implied by 'both'", "kept from the earlier setup"), and readings of one field
    # that contradict each other (each also a problem: the answer asks which, never picks one).
    notes: list[ReadNote] = field(default_factory=list)
    contradictions: list[Contradiction] = field(default_factory=list)


def detect_language(text: str) -> str:
    """"zh" when Chinese characters are at least as many as English words, else "en".

    One Chinese character carries about as much as one English word ("7B模型，8张A100，DDP还是FSDP"
    is Chinese; "is 显存 the same as VRAM?" is English): the one rule, ``bot.core.answer_language``.
    ``parse_conversation`` applies it to the person's own sentences (configs and logs removed).
    """
    return answer_language(text)


# On topic: the in-scope vocabulary (bot.understand.scope, its one home) plus what a reply about a
# run's memory, model or links says without a training word; host memory (内存) of a run, whether it
# is a training run is the scope rule's
_TOPIC = re.compile(
    TRAINING_SYSTEM_WORDS + r"|gpu|train|memory|batch|checkpoint|h800|a800|v100|l40s|h200|模型|model|param|"
    r"通信|communication|node|内存", re.I | re.A)
_INJECTION = re.compile(
    r"ignore\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|your)\s+(?:instructions?|prompts?|rules?)|"
    r"disregard\s+(?:all\s+|the\s+)?(?:previous|prior|above)|"
    r"system\s*prompt|developer\s*message|jailbreak|\bdan\b mode|"
    r"忽略(?:之前|以上|前面|上面|所有)?的?(?:所有)?(?:指令|指示|提示|规则|设定)|系统提示|提示词|"
    r"api[_ -]?key|(?<![a-z])secret(?:s|\s*key)?\b(?!\s+(?:to|of|for|behind)\b)|password|token\s*(?:value|=)|环境变量|"
    r"env(?:ironment)?\s*var|\benv\b|"
    r"密钥|密码|os\.environ|printenv|/etc/passwd|\.env\b|credentials?", re.I | re.A)


def _is_injection(text: str) -> bool:
    return bool(_INJECTION.search(text))


# A follow-up that names no setup field and no topic word still belongs to the conversation only
# when it is nothing but a request to explain the last answer ("why?", "为什么？"). Anything else
# ("What is a good recipe for tomato soup?") is a new, off-topic question, not a reason to repeat
# the earlier setup's answer.
_BARE_FOLLOW_UP = re.compile(
    r"\s*(?:why(?: not)?|how so|really|are you sure|explain(?: (?:that|more|why))?|more details?|go on|"
    r"and(?: then)?|then|so|what else|那(?:个)?呢|然后呢|还有呢|还有吗|"
    r"为什么(?:呢|不行|不用)?|为啥(?:呢)?|真的吗|确定吗|详细说说|展开(?:讲讲|说说)|具体(?:点|一点|说说))"
    r"\s*[?？!！。.]*\s*", re.I | re.A)


_SENTENCE_CJK = re.compile(r"[\u4e00-\u9fff]")
_SENTENCE_WORD = re.compile(r"(?<![A-Za-z0-9_\-./])[A-Za-z]{2,}(?![A-Za-z0-9_\-/])")


def _has_sentences(own_words: str) -> bool:
    """Whether a message has words of its own to tell its language by (a CJK character or three
    English words), not only figures and names ("4* 8 *A800")."""
    return bool(_SENTENCE_CJK.search(own_words)) or len(_SENTENCE_WORD.findall(own_words)) >= 3


def _clean(text: str) -> str:
    return clean(text)


@lru_cache(maxsize=256)
def _read_cached(text: str):
    # earlier turns are re-read on every follow-up; a cached reading keeps a long chat cheap
    return read_turn(text)


def parse_turn(text: str) -> tuple[dict, Parsed]:
    """The fields one message states (a dict of DESIGN field -> value) and its flags."""
    reading = _read_cached(text) if isinstance(text, str) else read_turn(text)
    parsed = Parsed(setup=TrainingSetup(), language=reading.language, notices=list(reading.notices),
                    notes=list(reading.notes), contradictions=list(reading.contradictions),
                    intent=reading.intent, topics=list(reading.topics), provenance=dict(reading.provenance),
                    observed=replace(reading.observed), compare=tuple(reading.compare),
                    unknown_model=reading.unknown_model,
                    unknown_gpu=reading.unknown_gpu)
    parsed.problems = list(reading.problems)
    cleaned = reading.text
    parsed.injection = _is_injection(cleaned)
    parsed.on_topic = (bool(reading.fields) or bool(_TOPIC.search(reading.own_words or cleaned))) and \
        reading.intent != "out_of_scope" or bool(reading.problems)  # "<2000 nines>B model": say the number is unusable
    if reading.problems and parsed.intent == "out_of_scope":
        parsed.intent = "recommend"
    return dict(reading.fields), parsed


# Fields that travel together: when a follow-up states one of a group, the earlier values of the
# others in that group are dropped unless the follow-up restates them ("换成H100呢" forgets "40G").
_GROUPS = [
    ("model", "params_b"),
    ("gpu", "gpu_memory_gb", "intra_node_link"),
    ("gpu_count", "nodes", "gpus_per_node"),
    ("inter_node_link", "inter_node_gbps"),
]


def merge_fields(older: dict, newer: dict) -> dict:
    """Fields of a conversation after a follow-up turn."""
    merged = dict(older)
    for group in _GROUPS:
        # "有NVlink，8卡有机会吗" adds the link between the same cards: only a new card or size
        # replaces the card group
        if "intra_node_link" in group:
            # a restated size of the same card ("13B用32G显存能微调吗" after "4个没有NVLink的V100（32G）")
            # is not a new card either
            if not any(k in newer and newer[k] != older.get(k) for k in ("gpu", "gpu_memory_gb")):
                continue
        if any(k in newer for k in group):
            for key in group:
                merged.pop(key, None)
    merged.update(newer)
    nodes = merged.get("nodes")
    if "nodes" in newer and "gpus_per_node" not in newer and "gpu_count" not in newer:
        # "改成两台机器" keeps the GPUs per node from before: the old machine is the new node.
        if "gpus_per_node" in older:
            merged["gpus_per_node"] = older["gpus_per_node"]
        elif isinstance(older.get("gpu_count"), int) and (older.get("nodes") or 1) == 1:
            merged["gpus_per_node"] = older["gpu_count"]
    count = newer.get("gpu_count")
    if isinstance(count, int) and count > 0 and "gpus_per_node" not in newer:
        if nodes and nodes > 0 and count % nodes == 0:
            merged["gpus_per_node"] = count // nodes
        elif "nodes" not in newer and (older.get("gpus_per_node") or 0) > 0 and count % older["gpus_per_node"] == 0:
            # "我们有16张卡" after "两台机器每台8张": same machines, more of them
            merged["gpus_per_node"] = older["gpus_per_node"]
            merged["nodes"] = count // older["gpus_per_node"]
    return merged


def user_turns(history) -> list[str]:
    turns: list[str] = []
    for item in history or []:
        if isinstance(item, str):
            turns.append(item)
        elif isinstance(item, dict):
            if item.get("role", "user") != "user":
                continue
            content = item.get("content")
            if isinstance(content, list):  # content blocks: [{"type": "text", "text": "..."}]
                content = " ".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
            if isinstance(content, str):
                turns.append(content)
        elif isinstance(item, (list, tuple)) and item and isinstance(item[0], str):
            turns.append(item[0])  # Gradio's old (user, bot) pairs
    return turns


def memory_is_ambiguous(gpu_name: str) -> bool:
    """True when the catalog sells this GPU family in several memory sizes (A100 40/80 GB)."""
    family = card_family(gpu_name)
    sizes = {g.memory_gb for g in list_gpus() if card_family(g.name) == family}
    return len(sizes) > 1


def _missing(fields: dict) -> list[str]:
    missing = []
    if "params_b" not in fields and "model" not in fields:
        missing.append("params_b")
    if "gpu_memory_gb" not in fields and ("gpu" not in fields or memory_is_ambiguous(fields["gpu"])):
        missing.append("gpu_memory_gb")
    if not any(k in fields for k in ("gpu_count",)) and not ("nodes" in fields and "gpus_per_node" in fields):
        missing.append("gpu_count")
    return missing


def _history_within_bounds(turns: list[str]) -> tuple[list[str], bool]:
    """The newest turns that fit ``MAX_HISTORY_TURNS`` and ``MAX_HISTORY_CHARS`` (parse time stays
    bounded whatever a surface sends), oldest first, and whether anything was dropped."""
    kept: list[str] = []
    total = 0
    for turn in reversed(turns[-MAX_HISTORY_TURNS:]):
        turn = condense(turn, MAX_CHARS)[0]
        if total + len(turn) > MAX_HISTORY_CHARS:
            break
        kept.append(turn)
        total += len(turn)
    kept.reverse()
    return kept, len(kept) < len(turns)


def _merge_provenance(older: dict, newer_prov: dict, merged: dict) -> dict:
    out: dict[str, Provenance] = {}
    for key in merged:
        if key in newer_prov:
            out[key] = newer_prov[key]
        elif key in older:
            old = older[key]
            out[key] = old if old.source in ("history", "carried", "assumed") else \
                Provenance("history", old.span, old.confidence)
        else:
            out[key] = Provenance("history", "", 0.8)  # derived while merging (GPUs per node from a total)
    return out


# Where the question says DeepSpeed runs (quoted back in the answer's read-back line).
# What a training framework does by default that PyTorch does not: (field, value, notice code).
# LlamaFactory checkpoints every block unless `disable_gradient_checkpointing: true`
# (ModelArguments.disable_gradient_checkpointing defaults to False:
# https://github.com/hiyouga/LLaMA-Factory/blob/main/src/llamafactory/hparams/model_args.py).
FRAMEWORK_DEFAULTS: dict[str, tuple[tuple[str, Any, str], ...]] = {
    "llamafactory": (("activation_checkpointing", True, "framework_checkpointing"),),
}


_LAUNCH = re.compile(r"(?:^|\s)(?:deepspeed|torchrun|accelerate launch|python3?(?: -m)?)\s+[^\n]{0,200}?\.py\b", re.I | re.M)
_FLAG = re.compile(r"(?<![\w-])--[a-z][\w.-]+", re.I)


def _pasted_command(text: str) -> bool:
    """A whole training command pasted: a launcher and a script followed by at least six flags
    (a one-line mention such as "torchrun train.py --fsdp" says too little about what is off)."""
    m = _LAUNCH.search(text)
    return m is not None and len(_FLAG.findall(text, m.end())) >= 6


def framework_defaults(framework: str | None, fields: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """The defaults of the user's framework for the fields ``fields`` leaves unset, as
    (field, value, notice): assumed for a question, and kept by a setup-panel edit."""
    return [(name, value, notice) for name, value, notice in FRAMEWORK_DEFAULTS.get(framework or "", ())
            if fields.get(name) is None]


_DEEPSPEED_WORDS = re.compile(r"[-\w]*deepspeed[:=]?\s*[\w./-]*|\bds_z[0-3]\w*\.json|zero[-_ ]?(?:stage[-_ ]?)?[0-3]\b|"
                              r"(?<![a-z])dsz?[-_ ]?[0-3](?!\d)|"
                              r"\"?zero_optimization\"?\s*:\s*\{[^}]{0,40}", re.I | re.A)
_FSDP_WORDS = re.compile(r"fsdp|fully_shard|FullyShardedDataParallel", re.I | re.A)


def _merge_observed(older: Observed, newer: Observed) -> Observed:
    data = dict(older.__dict__)
    for key, value in newer.__dict__.items():
        if value is not None and value is not False and value != ():
            data[key] = value
    return Observed(**data)


def parse_conversation(question: str, history=None) -> Parsed:
    """Parse the new question in the context of the earlier user turns. Never raises."""
    question = question if isinstance(question, str) else str(question or "")
    notices: list[str] = []
    read_notes: list[ReadNote] = []
    if len(question) > MAX_CHARS:
        # a long paste: compressed to its facts (repeats, frames and progress bars dropped; the
        # beginning, the end and every line with a question or a fact kept), never cut at the end
        chars = len(question)
        question = condense(question, MAX_CHARS)[0]
        read_notes.append(ReadNote("condensed", {"chars": chars, "kept_chars": len(question)}))
        notices.append("condensed")
    turns, dropped = _history_within_bounds(user_turns(history))
    if dropped:
        notices.append("history_truncated")
    fields: dict = {}
    provenance: dict[str, Provenance] = {}
    observed = Observed()
    any_topic = False
    unknown_model = unknown_gpu = None
    compare: tuple[str, ...] = ()
    for turn in turns:
        turn_fields, flags = parse_turn(turn)
        merged = merge_fields(fields, turn_fields)
        provenance = _merge_provenance(provenance, flags.provenance, merged)
        fields = merged
        observed = _merge_observed(observed, flags.observed)
        any_topic = any_topic or flags.on_topic
        unknown_model = flags.unknown_model or unknown_model
        unknown_gpu = flags.unknown_gpu or unknown_gpu
        compare = flags.compare or compare
    provenance = {k: (v if v.source in ("history", "assumed") else Provenance("history", v.span, v.confidence))
                  for k, v in provenance.items()}
    turn_fields, flags = parse_turn(question)
    weighed = _read_cached(question).weighed_degrees if turns and fields and isinstance(question, str) else {}
    for name, (degree, span) in weighed.items():  # "what if TP=4?" after a setup: the follow-up changes that field
        if name not in turn_fields:
            turn_fields[name] = degree
            flags.provenance = {**flags.provenance, name: Provenance("stated", span)}
    fields, provenance, observed, new_setup = _start_new_setup(fields, provenance, observed, turn_fields)
    if new_setup is not None:
        read_notes.append(new_setup)
    model_spec = pasted_model_config(question)
    if model_spec is not None and "model" not in turn_fields and "params_b" not in turn_fields:
        turn_fields = {**turn_fields, "params_b": round(model_spec.params_b, 3)}
        flags.provenance = {**flags.provenance, "params_b": Provenance("config", "config.json")}
        flags.on_topic = True
        if flags.intent == "out_of_scope":
            flags.intent = "recommend"
        notices.append("model_from_config")
    merged = merge_fields(fields, turn_fields)
    provenance = _merge_provenance(provenance, flags.provenance, merged)
    fields = merged
    if flags.unknown_model or new_setup is not None:
        unknown_model = flags.unknown_model
    if flags.unknown_gpu or "gpu" in turn_fields or "gpu_memory_gb" in turn_fields:
        unknown_gpu = flags.unknown_gpu
    if unknown_gpu and "gpu" in fields:
        unknown_gpu = None
    language = flags.language if question.strip() else "en"
    if turns and not _has_sentences(_read_cached(question).own_words if isinstance(question, str) else question):
        # "4* 8 *A800" after two Chinese turns: the person's language is that of their last sentences
        for turn in reversed(turns):
            if _has_sentences(_read_cached(turn).own_words):
                language = _read_cached(turn).language
                break
    notices.extend(n for n in flags.notices if n not in notices)

    # The question must be on topic by itself (a setup field, a topic word), or be a bare "why?"
    # about an on-topic conversation; an injection never rides on the earlier turns.
    follow_up = any_topic and not flags.injection and len(question) < 80 and \
        bool(_BARE_FOLLOW_UP.fullmatch(_clean(question).strip()))
    if "gpu_count" not in fields and isinstance(fields.get("nodes"), int) and isinstance(fields.get("gpus_per_node"), int) \
            and fields["nodes"] > 0 and fields["gpus_per_node"] > 0:
        # "4* 8 *A800", "on a single node with 4x A40": the total is the product of what was stated
        fields["gpu_count"] = fields["nodes"] * fields["gpus_per_node"]
        per = provenance.get("gpus_per_node") or Provenance("stated", "")
        provenance["gpu_count"] = Provenance(per.source, per.span, per.confidence)
    observed_now = _merge_observed(observed, flags.observed)
    for name, value, notice in framework_defaults(observed_now.framework, fields):
        fields[name] = value
        provenance[name] = Provenance("assumed", "", 0.8)
        notices.append(notice)
    if fields.get("activation_checkpointing") is None and any(_pasted_command(t) for t in (question, *turns)):
        # A whole launch command without a checkpointing flag ran without it: the HF Trainer
        # (TrainingArguments.gradient_checkpointing), DeepSpeed-Chat and the torchrun examples
        # default to False (LlamaFactory, which defaults to True, was set just above).
        fields["activation_checkpointing"] = False
        provenance["activation_checkpointing"] = Provenance("assumed", "", 0.7)
        notices.append("command_checkpointing_off")
    asks_about_fsdp = any(_FSDP_WORDS.search(text) for text in (question, *turns))
    # the words that say so (a stated field always carries the text it was read from)
    said = next((m.group(0) for text in (question, *reversed(turns)) if (m := _DEEPSPEED_WORDS.search(text))), "")
    if observed_now.deepspeed and fields.get("engine") is None and not asks_about_fsdp and said:
        # DeepSpeed runs the job: its ZeRO layout, not FSDP's, sets the sharded strategies' memory
        # (bot.calc.memory.deepspeed_layout, which also says where it applies). A DeepSpeed user
        # asking about FSDP ("would FSDP be better?") gets FSDP's figures: that is the question.
        fields["engine"] = "deepspeed"
        provenance["engine"] = Provenance("stated", said, 0.9)
        # where bot.calc.memory.deepspeed_layout applies, with the setup's defaults for what is unsaid
        said_or_default = {k: fields.get(k, DEFAULTS.get(k)) for k in ("finetune", "precision", "optimizer")}
        if said_or_default["finetune"] == "full" and fields.get("gpu_count") != 1 and \
                said_or_default["precision"] in ("bf16-mixed", "fp16-mixed") and \
                said_or_default["optimizer"] in ("adamw", "sgd"):
            notices.append("deepspeed_layout")
    setup = _build_setup(fields)
    problems = list(flags.problems) + check_setup(setup)
    from bot.core.setup import usable_setup  # (here, not above: the import block is being reworked)

    setup = usable_setup(setup)  # a negative or non-finite value is a problem, never a field shown as read
    intent = _conversation_intent(flags.intent, question, turns, turn_fields)
    on_topic = flags.on_topic or follow_up
    if any_topic and turn_fields and intent == "out_of_scope" and not flags.injection:
        # "and with seq 8192?" changes the setup of an on-topic conversation: it is a follow-up
        intent, on_topic = "recommend", True
    elif follow_up and intent == "out_of_scope":
        intent = "recommend"
    parsed = Parsed(
        setup=setup, language=language, problems=problems, missing=_missing(fields),
        notices=notices, on_topic=on_topic,
        injection=flags.injection, empty=not question.strip() and not turns,
        unknown_model=unknown_model, intent=intent, topics=list(flags.topics),
        provenance={k: v for k, v in provenance.items() if k in setup.model_dump() and getattr(setup, k) is not None},
        observed=observed_now, compare=flags.compare or compare,
        asked_strategy=asked_strategy(question), asks_if_fits=asks_feasibility(question),
        asked_axes=asked_parallel_axes(question),
        unknown_gpu=unknown_gpu, model_spec=model_spec if "params_b" in turn_fields else None,
        notes=[*read_notes, *flags.notes], contradictions=list(flags.contradictions),
    )
    if parsed.empty:
        parsed.on_topic = False
    elif any_topic and not parsed.on_topic:
        parsed.notices.append("earlier_setup_kept")  # the reply points back to the conversation
    if not parsed.on_topic and not follow_up:
        parsed.intent = "out_of_scope"
    return parsed


# Training options of one setup: a question that names a new setup does not inherit them
# (an earlier "LoRA" or "seq 4096" belonged to the earlier model).
_RUN_OPTIONS = ("finetune", "seq_len", "micro_batch", "lora_rank", "lora_targets", "activation_checkpointing",
                "checkpointing_policy", "checkpoint_every", "precision", "optimizer", "optimizer_impl", "grad_accum_steps",
                "base_dtype", "torch_compile", "loss_impl", "ddp_bucket_view", "engine")
_SETUP_HARDWARE = ("gpu", "gpu_memory_gb", "gpu_count", "nodes", "gpus_per_node")


def _start_new_setup(fields: dict, provenance: dict, observed: Observed, turn_fields: dict):
    """The conversation rule for a question that names a new setup (docs/bot.md, "Conversation
    rules"): a model other than the conversation's together with hardware of its own starts from
    what it says. The earlier run options are dropped; the earlier hardware it does not restate is
    kept and marked ``carried``; what the earlier run reported (an OOM) is not this one's.
    Returns (fields, provenance, observed, note or None)."""
    earlier_model = fields.get("model") or fields.get("params_b")
    named = turn_fields.get("model") or turn_fields.get("params_b")
    if not (earlier_model and named and named != earlier_model and any(k in turn_fields for k in _SETUP_HARDWARE)):
        return fields, provenance, observed, None
    dropped = [k for k in fields if k in _RUN_OPTIONS and k not in turn_fields]
    kept = {k: v for k, v in fields.items() if k not in _RUN_OPTIONS and k not in ("model", "params_b")}
    carried = [k for k in kept if k not in turn_fields and not (k in _SETUP_HARDWARE and _group_restated(k, turn_fields))]
    prov = {k: Provenance("carried", provenance[k].span if k in provenance else "", 0.8) for k in carried}
    return {k: kept[k] for k in carried}, prov, Observed(), ReadNote("new_setup", {"carried": carried, "dropped": dropped})


def _group_restated(key: str, turn_fields: dict) -> bool:
    group = next((g for g in _GROUPS if key in g), (key,))
    return any(k in turn_fields for k in group)


def _conversation_intent(intent: Intent, question: str, turns: list[str], turn_fields: dict) -> Intent:
    """The question sentence decides across the conversation too (evals/cases/README.md, "Intent
    labels"): a follow-up that asks nothing ("4* 8 *A800", "And I want to use Llama-3.2-1B", "the
    insufficient CPU memory caused issues") keeps the intent of the last question asked before it.
    A capacity question ("全量微调72B需要多少资源") answered by the person's own hardware in later
    turns becomes a question about that hardware: recommend."""
    if intent == "out_of_scope" or not isinstance(question, str):
        return intent
    readings = [_read_cached(t) for t in [*turns, question]]
    counted = any(k in r.fields for r in readings for k in ("gpu_count", "nodes", "gpus_per_node"))
    carded = any(k in r.fields for r in readings for k in ("gpu", "gpu_memory_gb"))
    if _read_cached(question).intent_asked:
        if intent == "recommend" and _read_cached(question).can_question and carded and not counted:
            return "capacity"  # "Can we use A100 40G to finetune llama-7B?": how many of them is the answer
        return intent
    if not turns:
        return intent
    for n, turn in enumerate(reversed(turns)):
        earlier = _read_cached(turn)
        if not earlier.intent_asked:
            continue
        if earlier.intent == "capacity":
            later = [*turns[len(turns) - n:], question]
            if any(k in _read_cached(t).fields for t in later for k in ("gpu_count", "nodes", "gpus_per_node")) and \
                    not _read_cached(question).symptom:
                return "recommend"
        return earlier.intent
    return intent


_CONFIG_KEYS = ("hidden_size", "num_hidden_layers", "n_embd", "d_model")


def pasted_model_config(text: str) -> Any:
    """The ``ModelSpec`` of a Hugging Face config.json pasted into ``text``, else None. Only JSON
    objects that name a transformer's shape are tried, at most a few, so this stays cheap."""
    import json

    if "{" not in text or not any(k in text for k in _CONFIG_KEYS):
        return None
    from bot.catalog.hf_config import ConfigError, model_from_hf_config

    decoder = json.JSONDecoder()
    start = text.find("{")
    for _ in range(8):
        if start < 0:
            return None
        try:
            obj, _end = decoder.raw_decode(text, start)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and any(k in obj for k in _CONFIG_KEYS):
            try:
                return model_from_hf_config(obj)
            except ConfigError:
                return None
        start = text.find("{", start + 1)
    return None


def _build_setup(fields: dict) -> TrainingSetup:
    """A TrainingSetup from parsed fields; a value of the wrong type is dropped, never raised."""
    from pydantic import ValidationError

    data = dict(fields)
    for _ in range(len(data) + 1):
        try:
            return TrainingSetup(**data)
        except ValidationError as err:
            bad = {str(e["loc"][0]) for e in err.errors() if e.get("loc")}
            if not bad:
                break
            for key in bad:
                data.pop(key, None)
    return TrainingSetup()
