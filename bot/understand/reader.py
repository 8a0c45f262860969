"""One message -> setup fields with provenance, observed facts, intent, topics, comparison.

Order (each stage consumes what it read, so no figure is read twice in two roles):
1. ``text.prepare``: printable ASCII digits, capped length, long digit runs refused;
2. ``logs.read_logs``: OOM messages, nvidia-smi rows, DeepSpeed estimates -> ``Observed``;
3. ``config.read_config``: YAML/JSON/TOML/CLI/env settings -> fields from a config;
4. ``spans``: catalog model and card names (their digits are then hidden from prose rules);
5. ``prose.read_prose``: what the person wrote in their own sentences.
Hardware comes from the person's sentences first (a config's CUDA_VISIBLE_DEVICES is weaker than
"4 * A800 80G"); training options from the config first (it is what actually runs).
Contradictions and alternatives (a figure given twice) are ``bot.understand.contradictions``'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.catalog import UnknownNameError, lookup_model
from bot.catalog.names import size_in_name
from bot.core.language import CJK, EN_WORD, answer_language
from bot.understand import Contradiction, FieldSource, Observed, Provenance, ReadNote
from bot.understand.config import read_config, visible_devices
from bot.understand.contradictions import read_alternatives, roles_and_contradictions
from bot.understand.count_mentions import mixed_cards
from bot.understand.counts import GPU, MODEL
from bot.understand.degrees import read_degrees
from bot.understand.intent import compare_of, read_intent, topics_of
from bot.understand.logs import card_size_gb, read_logs
from bot.understand.names import NameSize, size_from_name, unsized_name
from bot.understand.prose import read_prose
from bot.understand.roles import set_aside
from bot.understand.run_roles import reference_run
from bot.understand.scope import asks_training_beside_inference
from bot.understand.sentences import sentences_of
from bot.understand.spans import (
    NameMention,
    _resolve_gpu,
    card_family,
    find_card_typos,
    find_gpus,
    find_models,
    find_unknown_cards,
    model_params_b,
)
from bot.understand.stack import model_code_of
from bot.understand.text import GAP, blank, gap_free, origin, prepare

# A command, config or code line (language is read from the other lines). No nested whitespace
# quantifiers: a line of 8,000 spaces must cost one pass, not millions of backtracking steps.
_CODE_LINE = re.compile(r"(?:#{2,}|[-*][ \t]+`|(?:torchrun|deepspeed|python3?|accelerate|swift|llamafactory-cli|tune|srun|"
                        r"bash|sh|export|CUDA_VISIBLE_DEVICES|NPROC_PER_NODE|NNODES|MASTER_\w+|[A-Z_]{3,}=)\b|--\w|"
                        r"[A-Za-z0-9_.\"']+[ \t]*[:=][ \t]*\S*$|[{}\[\]])")
_HARDWARE = ("gpu", "gpu_memory_gb", "gpu_count", "gpus_per_node", "nodes", "intra_node_link", "inter_node_link",
             "inter_node_gbps", "cpu_ram_gb")
_NAME_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_.\-/]{1,120}")
# "ds3" / "ds-2": DeepSpeed's stage as people write it ("测试ds3 还是会显存OOM", Qwen issue 200)
# A bare "z3" is a stage only right after "deepspeed" ("启动deepspeed z3 offload", LlamaFactory#7528);
# alone ("Z0", a model or part name) it is not.
_ZERO = re.compile(r"(?:zero|zreo|ds_z|(?<![a-z])dsz?|(?<=deepspeed )z|(?<=deepspeed)z)[-_ ]?(?:stage[-_ ]?)?([0-3])(?!\d)|"
                   r"zero[-_ ]?stage\s*[:=]?\s*([0-3])\b", re.I | re.A)
_RL_ROLES = (("actor", r"(?<![a-z])actor(?![a-z])|策略模型|policy model"), ("critic", r"(?<![a-z])critic(?![a-z])|价值模型|value model"),
             ("reference", r"(?<![a-z])reference(?: model)?(?![a-z])|(?<![a-z])ref_|参考模型|ref模型"),
             ("reward", r"reward model|reward_pretrain|reward_num|奖励模型|rm_url"))
_RL_ALGOS = {"ppo": ("actor", "critic", "reference", "reward"), "grpo": ("actor", "reference"),
             "dpo": ("policy", "reference"), "rloo": ("actor", "reference"), "rlhf": ("actor", "critic", "reference", "reward")}
_FRAMEWORKS = (("llamafactory", r"llama-?factory|llamafactory|train_bash\.py|finetuning_type"),
               ("ms-swift", r"\bswift (?:sft|rlhf|pt)\b|ms-swift"), ("torchtune", r"torchtune|\btune run\b"),
               ("axolotl", r"axolotl"), ("deepspeed", r"deepspeed"), ("accelerate", r"accelerate launch|accelerate"),
               ("torchrun", r"torchrun|torch\.distributed\.(?:run|launch)"), ("openrlhf", r"openrlhf"),
               ("trl", r"\btrl\b|GRPOTrainer|SFTTrainer|DPOTrainer"), ("torchtitan", r"torchtitan"))

# ZeRO offload named in prose or a config; ``_NO_OFFLOAD`` right after it says the device is
# none ("offload_optimizer_device: none" in an accelerate config is offload turned off).
_PROSE_OFFLOAD = re.compile(r"zero[-_ ]?3?[-_ ]?offload|offload[-_ ]?cpu|cpu[-_ ]?offload|offload_optimizer", re.I | re.A)
_NO_OFFLOAD = re.compile(r"(?:_device)?[\"']?\s*[:=]\s*(?:\{[^}]{0,80}device[\"']?\s*:\s*)?[\"']?none\b", re.I | re.A)
# DeepSpeed running the job: its launcher at the start of a command, or a DeepSpeed config file.
_DEEPSPEED_RUN = re.compile(r"(?m)^\s*deepspeed\s+(?:--|[\w./-]+\.py)|\bds_z[0-3]\w*\.json|\bds_config\w*\.json",
                            re.I | re.A)


@dataclass
class Reading:
    fields: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    observed: Observed = field(default_factory=Observed)
    problems: list = field(default_factory=list)  # bot.core.setup.Problem, worded by the message catalogs
    notices: list = field(default_factory=list)
    unknown_model: str | None = None
    unknown_gpu: str | None = None
    notes: list = field(default_factory=list)           # ReadNote: what the answer should say it read
    contradictions: list = field(default_factory=list)  # Contradiction: asked about, never picked
    intent: str = "recommend"
    topics: list = field(default_factory=list)
    compare: tuple = ()
    language: str = "en"
    intent_asked: bool = False  # a question sentence decided the intent (bot.understand.intent)
    symptom: bool = False       # the message reports a failure or a slowdown
    can_question: bool = False  # "can I do it on <card>?" (bot.understand.intent.IntentReading)
    own_words: str = ""  # the text minus configs and logs
    weighed_degrees: dict = field(default_factory=dict)  # "Should we add TP=8?": field -> (degree, span), not the setup
    text: str = ""       # the cleaned, capped text every span refers to


_ALTERNATIVE_SIZE = re.compile(r"\s*(?:/|or|或者?|和|、)\s*(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])", re.A)


_NAME_SIZE = re.compile(r"(\d+(?:\.\d+)?)B$")  # the size a catalog name ends with ("Llama-2-7B": 7)


def _family_size(name: str, size_b: float) -> str | None:
    """The catalog model of ``name``'s family at ``size_b`` when it is the larger one
    ("Llama-2-7B", 13 -> "Llama-2-13B"), else None."""
    own = _NAME_SIZE.search(name)
    if not own or size_b <= float(own.group(1)):
        return None
    candidate = name[: own.start(1)] + f"{size_b:g}B"
    try:
        return lookup_model(candidate).name
    except UnknownNameError:
        return None


# LlamaFactory's example configs (examples/train_lora|train_qlora|train_full/llama3_*.yaml) all train
# meta-llama/Meta-Llama-3-8B-Instruct at cutoff_len 2048, per_device_train_batch_size 1, e.g.
# https://github.com/hiyouga/LLaMA-Factory/blob/main/examples/train_lora/llama3_lora_sft_ds3.yaml
_LLAMAFACTORY_EXAMPLE = re.compile(r"examples/train_(lora|qlora|full)/llama3_[a-z0-9_]*?\.yaml", re.I | re.A)


def _llamafactory_example(match: re.Match[str]) -> dict[str, object]:
    method = match.group(1).lower()
    return {"model": "Llama-3.1-8B", "finetune": "full" if method == "full" else method, "seq_len": 2048,
            "micro_batch": 1}


# Run options a question may propose rather than report: "Would fused AdamW fix my OOM?", "开
# torch.compile 会不会省显存？". Named after a modal inside a question, they are not the run's setup.
_ASKABLE_OPTIONS = ("ddp_bucket_view", "optimizer_impl", "torch_compile", "loss_impl")
_MODAL = re.compile(r"(?<![a-z])(?:would|will|could|can|does|do|should|might|if|what if|how about)(?![a-z])|"
                    r"会不会|能不能|能否|是否|如果|要不要|可不可以", re.I | re.A)


def _asked_about(span: str, text: str) -> bool:
    """``span`` sits in a question after a modal ("Would X fix it?", "Does X save memory?") or
    right before a Chinese one ("开 X 能不能省显存？", "X 会不会有用")."""
    if not span:
        return False
    for sentence in re.split(r"(?<=[.!?])\s+|(?<=[。！？；\n])", text):
        at = sentence.find(span)
        if at < 0 or not sentence.rstrip().endswith(("?", "？", "吗", "呢")):
            continue
        modal = _MODAL.search(sentence)
        if modal and modal.start() < at:
            return True
        if re.match(r"[^，,。；;]{0,24}?(?:会不会|能不能|能否|是否|有没有用|有用吗|管用吗|有效吗)", sentence[at + len(span):], re.S):
            return True
    return False

# Inference inside a training run: evaluation during training, a check before it, or "training works
# but inference OOMs" — a training question, not a serving one (first-contact batch b/c class 10).
# Serving words anywhere ("deploy", "vLLM", "部署") leave the text as it is.
_INFER = r"(?:推理|inference|generation|生成)"
_TRAINING = r"(?:训练|微调|training|fine-?tuning|train)"
_INFERENCE_IN_TRAINING = re.compile(
    r"(?:(?:baseline|eval\w*|validation|sanity[- ]check)\s+)?inference\s+(?:during|while|in|before|prior to|ahead of|after each|"
    r"at the start of|between)\s+(?:the\s+|my\s+)?(?:\w+\s+)?(?:training|fine-?tuning|eval\w*|validation|epochs?|steps?)|"
    r"(?:eval\w*|validation|baseline)\s+inference|"
    r"(?:训练|微调)(?:过程)?(?:中|时|里|期间|阶段)的?(?:评估|验证|eval)?(?:的)?推理|(?:评估|验证|eval)(?:阶段|时|的时候)?的?推理|"
    + _TRAINING + r"[^.。!?！？\n]{0,24}?(?:works?|fine|ok|正常|没问题|能跑|可以)[^.。!?！？\n]{0,16}?" + _INFER + r"|"
    + _INFER + r"[^.。!?！？\n]{0,16}?(?:oom\w*|爆显存|显存不够|out of memory|报错|溢出)[^.。!?！？\n]{0,6}?[,，;；]\s*" + _TRAINING
    + r"[^.。!?！？\n]{0,6}?(?:正常|没问题|works?|fine|ok)", re.I | re.A)
_SERVING = re.compile(r"\bserv(?:e|ing)\b|\bdeploy|部署|上线|vllm|\btgi\b|sglang|tensorrt|llama\.cpp|ollama|\bapi\b", re.I | re.A)


def inference_in_training(text: str) -> list[re.Match]:
    """The inference mentions of a training question ("OOM when I run baseline inference before
    training", "训练正常，推理时爆显存"); none when the text is about serving."""
    if _SERVING.search(text) or not re.search(_TRAINING, text, re.I | re.A):
        return []
    return list(_INFERENCE_IN_TRAINING.finditer(text))


def _without_inference_words(text: str, found: list[re.Match]) -> str:
    """``text`` with the inference words inside the matched training clauses blanked (same length)."""
    chars = list(text)
    for m in found:
        for w in re.finditer(_INFER + r"|\binfer\b", m.group(0), re.I | re.A):
            for i in range(m.start() + w.start(), m.start() + w.end()):
                chars[i] = " "
    return "".join(chars)


# One node said in the singular: "a 4 x P40 node", "on one server", "一台机器", "单机"
_ONE_NODE = re.compile(r"\b(?:a|an|one|single|my|our)\s+(?:[^\s.,;]+\s+){0,4}?(?:node|machine|server|box|host)\b(?!s)|"
                       r"一台(?:机器|服务器|主机)|单机|单节点", re.I | re.A)


# A launch that runs on one node: torchrun's --standalone or --nnodes=1, or --nproc_per_node with no
# flag that joins other nodes (https://pytorch.org/docs/stable/elastic/run.html)
_ONE_NODE_FLAG = re.compile(r"--standalone\b|--nnodes[=\s]+1(?![\d:])", re.A)
_MULTI_NODE_FLAG = re.compile(r"--(?:nnodes|node[_-]rank|master[_-]addr|rdzv[_-](?:endpoint|backend|id)|hostfile|num[_-]machines|"
                              r"machine[_-]rank|main[_-]process[_-]ip)\b|\bMASTER_ADDR\b|\bslots\s*=", re.A)


def _single_node_launch(work: str, cfg_fields: dict) -> str:
    """The words of a launch command that runs on one node ("" for none)."""
    if m := _ONE_NODE_FLAG.search(work):
        return m.group(0)
    if "gpus_per_node" in cfg_fields and (m := re.search(r"--nproc[_-]per[_-]node[=\s]+\d+", work, re.A)) \
            and not _MULTI_NODE_FLAG.search(work):
        return m.group(0)
    return ""

_CLAUSE_END = re.compile(r"[.;；。!?！？\n，,]")


def _clause_asks(text: str, at: int) -> bool:
    """Whether the clause holding position ``at`` ends with a question mark."""
    end = _CLAUSE_END.search(text, at)
    return end is not None and end.group(0) in "?？"


def _mark(text: str, mentions: list[NameMention], char: str) -> str:
    if not mentions:
        return text
    chars = list(text)
    for m in mentions:
        for i in range(m.start, m.end):
            chars[i] = char
    return "".join(chars)


def _size_from_name(value: str) -> tuple[float, str] | None:
    read = size_from_name(value)
    return (read.params_b, read.span) if read else None


def _size_note(name: str, read: NameSize) -> ReadNote:
    """What the answer says about a size read from a name (bot.understand.names)."""
    if read.experts:
        return ReadNote("moe_from_name", {"name": name, "experts": read.experts, "expert_b": read.expert_b,
                                          "params_b": read.params_b, "active_b": read.active_b, "span": read.span})
    if read.active_b:
        return ReadNote("active_from_name", {"name": name, "params_b": read.params_b, "active_b": read.active_b,
                                             "span": read.span})
    return ReadNote("size_from_name", {"name": name, "params_b": read.params_b, "span": read.span})


_NAME_CHARS = re.compile(r"[A-Za-z0-9._\-]")


def _enclosing_name(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole name token around a catalog match ("TinyLlama-1.1B" around "TinyLlama")."""
    while start > 0 and _NAME_CHARS.match(text[start - 1]):
        start -= 1
    while end < len(text) and _NAME_CHARS.match(text[end]):
        end += 1
    while end > start and text[end - 1] in "._-":
        end -= 1
    return start, end


def _foreign_family(text: str, mention: NameMention) -> tuple[str, NameSize] | None:
    """A catalog alias inside a longer name whose own size differs from the catalog model's
    ("TinyLlama-1.1B" holds the alias "tiny-llama", "MiniCPM-Llama3-V-8B" holds "llama3"): the
    name is another family, sized from its name (never a contradiction that stops the answer)."""
    start, end = _enclosing_name(text, mention.start, mention.end)
    if (start, end) == (mention.start, mention.end) or not mention.name:
        return None
    token = text[start:end]
    read = size_from_name(token)
    if read is None:
        return None
    own = model_params_b(mention.name)
    if own and abs(own - read.params_b) <= 0.15 * max(own, read.params_b):
        return None  # "my-llama2-7b-custom": a fine-tune of the catalog model, same shape
    return token, read


# Path segments that name no model: a checkpoint or step folder, a weights file's generic name, the
# usual folders models are kept in, a version or a hash
_GENERIC_SEGMENT = re.compile(r"(?:checkpoint|ckpt|step|global_step|epoch|iter|run)[-_]?\d*|\d+|v\d+(?:\.\d+)*|"
                              r"models?|weights?|ckpts?|checkpoints?|hf|hf_models?|huggingface|hub|snapshots?|final|latest|best|"
                              r"outputs?|merged|pytorch_model|model(?:[-_.]\d+(?:-of-\d+)?)?|adapter_model|consolidated(?:\.\d+)?|"
                              r"[0-9a-f]{12,}|~|\.{1,2}|data\d*|mnt|home|root|tmp|users?|workspace|share|shared|disk\d*|nas\d*",
                              re.I | re.A)
_WEIGHT_FILE = re.compile(r"\.(?:bin|safetensors|pt|pth|ckpt|gguf|h5|msgpack|index\.json|json|tar|gz|zip)$", re.I | re.A)


def model_segment(value: str) -> str | None:
    """The last meaningful segment of a model path or id: "/data/x/Meta-Llama-3-8B-Instruct" ->
    "Meta-Llama-3-8B-Instruct", "models/llama-13b.bin" -> "llama-13b", ".../Llama-2-7b-hf/checkpoint-500"
    -> "Llama-2-7b-hf" (a checkpoint folder, a weights file's generic name or a storage folder names
    no model); None when no segment has a name."""
    for part in reversed([p for p in re.split(r"[/\\]+", value.strip().strip("\"'")) if p]):
        while (bare := _WEIGHT_FILE.sub("", part)) != part:
            part = bare
        if (re.search(r"[A-Za-z]{2}", part) or size_from_name(part)) and not _GENERIC_SEGMENT.fullmatch(part):
            return part  # a name, or a bare size ("model: 7B")
    return None


def _catalog_memory(name: str | None) -> float | None:
    if not name:
        return None
    try:
        from bot.catalog import lookup_gpu

        return float(lookup_gpu(name).memory_gb)
    except Exception:  # noqa: BLE001 - a name the catalog lacks has no size to compare with
        return None


_HEDGE = re.compile(r"^\s*(?:左右|上下|这样|级别|量级|的模型都|class|-class|ish\b|or so)|(?:约|大约|大概|差不多|around|about|roughly|~)\s*$",
                    re.I | re.A)


def _hedged(span: str, marked: str) -> bool:
    """A size written as an approximation ("30b左右", "about 30B"): a rule of thumb, not a model."""
    i = marked.find(span)
    if i < 0:
        return False
    return bool(_HEDGE.match(marked[i + len(span): i + len(span) + 8]) or _HEDGE.search(marked[max(0, i - 8): i]))


def _put_model_code(put, text: str, own: str, log_spans) -> None:
    """The setup's ``model_code`` from the training stack the message shows (``bot.understand.stack``):
    in the person's words "stated", in a pasted log (a traceback through transformers' modelling
    code) "log", else "config"."""
    read = model_code_of(text)
    if read is None:
        return
    code, words = read
    source: FieldSource = "stated" if words.lower() in own.lower() else \
        "log" if any(words.lower() in text[a:b].lower() for a, b in log_spans) else "config"
    put("model_code", code, source, words)


def read_turn(raw: object) -> Reading:
    prep = prepare(raw)
    text = prep.text
    out = Reading(notices=list(prep.notices), problems=list(prep.problems))
    logs = read_logs(text)
    work = blank(text, logs.spans)
    cfg = read_config(work)
    own = blank(work, cfg.consumed)
    out.own_words = own
    out.text = text
    degrees = read_degrees(own)  # "TP=8", "--pipeline-model-parallel-size 2": never a count or a size
    asked_text, own = own, blank(own, degrees.consumed)
    out.weighed_degrees = dict(degrees.weighed)

    models = find_models(own)
    foreign = [(m, hit) for m in models if (hit := _foreign_family(own, m))]
    if foreign:
        models = [m for m in models if m not in {x for x, _ in foreign}]
    marked = _mark(own, models, MODEL)
    # unknown model names carrying a size ("Qwen-1_8B", "internlm2-chat-20b"): the size only
    unknown_models: list[NameMention] = []
    if foreign and not models:
        m, (token, _read) = foreign[0]
        start = own.find(token)
        unknown_models.append(NameMention(start, start + len(token), token, None))
    elif not models:
        for tok in _NAME_TOKEN.finditer(marked):
            value = tok.group(0)
            if not re.search(r"[A-Za-z]{2}", value) or GPU in value or "/" in value or \
                    re.search(r"\.(?:sh|py|json|ya?ml|toml|txt)\b", value, re.I | re.A):
                continue  # a script or file path names no model
            size = _size_from_name(value)
            if size and re.search(r"[A-Za-z]{2}.*\d", value[: value.find(size[1]) + 1] or value):
                unknown_models.append(NameMention(tok.start(), tok.end(), value, None))
                break
    marked = _mark(marked, unknown_models, MODEL)
    gpus = find_gpus(marked)
    typos = find_card_typos(marked, gpus)
    # a card typed with one slip ("A10O", "A00 40G"): read as the one card it can be, said in a note;
    # with several candidates it stays unknown and the answer asks which (never another card silently)
    gpus = sorted(gpus + [t.mention for t in typos if t.mention.name], key=lambda g: g.start)
    unknown_cards = [t.mention for t in typos if not t.mention.name]
    unknown_cards += find_unknown_cards(marked, gpus + unknown_cards)
    for t in typos:
        out.notes.append(ReadNote("card_typo" if t.mention.name else "card_typo_options",
                                  {"span": t.mention.raw.strip(), "name": t.mention.name or "",
                                   "options": list(t.options)}))
    marked = _mark(marked, gpus + unknown_cards, GPU)
    before_aside = marked
    marked, aside_notes = set_aside(marked)  # "we also have some V100s", "the recipe uses 4 nodes"
    # the intent is not read from an aside either ("还有几台V100" says "a few", it asks no count),
    # unless the aside is itself a question
    intent_text = asked_text if before_aside == marked else "".join(
        " " if m == " " and b != " " and not _clause_asks(before_aside, i) else o
        for i, (o, b, m) in enumerate(zip(asked_text, before_aside, marked, strict=False)))
    # an earlier run beside the one asked about ("I ran a 3B on one H100 fine, now I want 7B on 4 A100s"):
    # its model, size and card are a reference, not the setup (never a contradiction with it)
    marked, earlier, earlier_words = reference_run(marked, own)
    if earlier:
        models = [m for m in models if not any(s <= m.start < e for s, e in earlier)]
        unknown_models = [m for m in unknown_models if not any(s <= m.start < e for s, e in earlier)]
        aside_notes = [*aside_notes, *(("reference_run", {"span": w}) for w in earlier_words)]
    gpus = [g for g in gpus if marked[g.start] == GPU]
    unknown_cards = [g for g in unknown_cards if marked[g.start] == GPU]
    prose = read_prose(marked)

    f: dict = {}
    prov: dict[str, Provenance] = {}

    def put(name: str, value, source: FieldSource, span: str, confidence: float = 1.0) -> None:
        if value is None or name in f:
            return
        f[name] = value
        prov[name] = Provenance(source=source, span=span, confidence=confidence)

    # --- model -----------------------------------------------------------------------------
    if models:
        put("model", models[0].name, "stated", models[0].raw)
    elif cfg.model_text:
        # the last meaningful segment of a path names the model ("/data/x/Meta-Llama-3-8B-Instruct",
        # "models/llama-13b.bin", "/mnt/ckpt/qwen2-7b-chat/", ".../Llama-2-7b-hf/checkpoint-500")
        base = model_segment(cfg.model_text)
        cm = (find_models(base) if base else []) or find_models(cfg.model_text)
        if cm:
            put("model", cm[0].name, "config", cfg.spans.get("model_text", cfg.model_text))
        elif base and (size := _size_from_name(base)):
            put("params_b", size[0], "config", cfg.spans.get("model_text", cfg.model_text))
            out.unknown_model = base[:80]
        elif base:
            # "model_name_or_path: org/SomeVisionModel": the name is kept and its size asked
            out.notes.append(ReadNote("model_unsized", {"name": base[:80]}))
    if "model" not in f and "params_b" not in f and (example := _LLAMAFACTORY_EXAMPLE.search(text)):
        # A LlamaFactory example config named on the command line is that example's setup
        for example_field, example_value in _llamafactory_example(example).items():
            put(example_field, example_value, "config", example.group(0))
    if unknown_models and "model" not in f:
        name_read = size_from_name(unknown_models[0].raw)
        if name_read:
            put("params_b", name_read.params_b, "stated", unknown_models[0].raw)
            out.unknown_model = unknown_models[0].raw[:80]
            out.notes.append(_size_note(out.unknown_model, name_read))
    elif out.unknown_model and prov.get("params_b") is not None and prov["params_b"].source == "config" and \
            (name_read := size_from_name(out.unknown_model)):
        out.notes.append(_size_note(out.unknown_model, name_read))
    if logs.params_b is not None and "params_b" not in f and "model" not in f:
        put("params_b", logs.params_b, "log", logs.params_span)  # the estimator counted the real model
    if models and models[0].name and (alt := _ALTERNATIVE_SIZE.match(text, models[0].end)):
        # "llama2 7B/13B": two sizes of one family asked about together; the larger is computed
        # (the smaller needs less), and the answer says so
        bigger = _family_size(models[0].name, float(alt.group(1)))
        named_size = _NAME_SIZE.search(models[0].name)
        if bigger is not None:
            f["model"] = bigger
        if bigger is not None or (named_size and float(alt.group(1)) < float(named_size.group(1))):
            prov["model"] = Provenance("stated", text[models[0].start: alt.end()], 1.0)
            out.notices.append("larger_of_two_sizes")
            prose.fields.pop("params_b", None)
    if "params_b" in prose.fields and "params_b" not in f and not ("model" in f and _hedged(prose.spans["params_b"], marked)):
        # a named catalog model carries its own size: "30b左右全参半精度不是300g就够了" beside
        # "qwen-2.5-32b" is a rule of thumb, not the model trained
        put("params_b", prose.fields["params_b"], "stated", origin(prose.spans["params_b"], marked, text))
        if prose.larger_of_sizes:
            out.notices.append("larger_of_two_sizes")
    if models and f.get("model") == models[0].name and "params_b" in f and prov["params_b"].source == "stated" and \
            size_in_name(models[0].raw) is None and models[0].name and (spec_b := model_params_b(models[0].name)) and \
            abs(spec_b - float(f["params_b"])) / spec_b > 0.25:
        # "a 10B Bert", "10 billion ... params Bert": a family named without its size beside a size
        # written for it names the architecture, not the catalog's checkpoint of another size: the
        # size written is computed, and said (never "10B contradicts BERT-base")
        out.notes.append(ReadNote("family_sized_as_written", {"name": models[0].raw.strip(),
                                                              "params_b": float(f["params_b"])}))
        f.pop("model")
        prov.pop("model", None)
    if "model" not in f and "params_b" not in f and not out.unknown_model and \
            not any(n.code == "model_unsized" for n in out.notes) and (unsized := unsized_name(marked)):
        # "fine-tune Aria", "训练一个ResNet-50": the name is kept (in the note) and its size asked, one
        # question. Not ``unknown_model``: that says "the estimate uses its parameter count", and
        # there is no count to use.
        out.notes.append(ReadNote("model_unsized", {"name": unsized}))

    # --- hardware: the person's words first, then the config --------------------------------
    if gpus:
        g = gpus[0]
        if g.memory_gb is None:  # "4张A800 ... GPU type: A800-SXM4-80GB": the same card, named with its size
            g = next((x for x in gpus[1:] if x.memory_gb is not None and x.name and g.name
                      and card_family(x.name) == card_family(g.name)), g)
        memory = prose.fields.get("gpu_memory_gb") if g.memory_gb is None else g.memory_gb
        name = (_resolve_gpu(g.raw, memory, g.form) if memory else g.name) or g.name
        catalog_gb = _catalog_memory(name)
        standalone = prose.fields.get("gpu_memory_gb")
        variant = None  # a size the user gave the card that the catalog's card does not have
        if g.memory_gb is not None and catalog_gb and abs(g.memory_gb - catalog_gb) > 0.5:
            variant = (g.memory_gb, g.raw)
        elif g.memory_gb is None and standalone is not None and catalog_gb and \
                0.5 < abs(float(standalone) - catalog_gb) <= 0.03 * catalog_gb:
            variant = (float(standalone), origin(prose.spans["gpu_memory_gb"], marked, text))
        if variant is not None:
            # "910b 32G" where the catalog only has the 64 GB card, "H100 ... 96G显存" beside the catalog's
            # 94 GB H100 NVL: a variant it lacks, so the card is unknown and the user's size stands (never a
            # "contradiction" with our own catalog, never our figure over theirs)
            out.unknown_gpu = g.raw
            stated_gb, span = variant
            put("gpu_memory_gb", int(stated_gb) if float(stated_gb).is_integer() else stated_gb, "stated", span)
            prose.fields.pop("gpu_memory_gb", None)
            if catalog_gb and abs(float(stated_gb) - catalog_gb) > 0.03 * catalog_gb and g.memory_gb is not None:
                # "A100 24GB": no card of that family has that size; computed as written, and said
                out.contradictions.append(Contradiction("gpu_memory_gb", (card_family(name or g.raw).upper(), float(stated_gb)),
                                                        (re.split(r"[-_ ]*\d+\s*(?:gb|gib|g)", g.raw, flags=re.I)[0] or g.raw,
                                                         (re.search(r"\d+\s*(?:gb|gib|g)", span, re.I) or [span])[0])))
        else:
            put("gpu", name, "stated", g.raw)
            if g.memory_gb is not None and catalog_gb and g.memory_gb != catalog_gb:
                pass  # "H100 NVL 96GB" for the catalog's 94 GB card: the named card's size is used (assumed below)
            elif g.memory_gb is not None:
                put("gpu_memory_gb", int(g.memory_gb) if float(g.memory_gb).is_integer() else g.memory_gb, "stated", g.raw)
            if standalone is not None and catalog_gb and float(standalone) != catalog_gb and (
                    abs(float(standalone) - catalog_gb) / catalog_gb <= 0.03 or not prose.card_explicit):
                # "limited to 16GB" beside an A40 is not the card's size; "96G" beside an H100 NVL (94 GB)
                # names that card: its catalog size is used
                prose.fields.pop("gpu_memory_gb")
        pcie = next((x for x in gpus if (x.form.startswith("pcie") or "pcie" in x.raw.lower())
                     and x.name and name and card_family(x.name) == card_family(name)), None)
        if pcie is not None:
            put("intra_node_link", "pcie", "stated", pcie.raw)
    elif unknown_cards:
        out.unknown_gpu = unknown_cards[0].raw
    for key in ("gpu_memory_gb", "gpu_count", "gpus_per_node", "nodes", "intra_node_link", "inter_node_link",
                "inter_node_gbps", "cpu_ram_gb"):
        if key in prose.fields:
            if key == "gpu_memory_gb" and "gpu_memory_gb" in f and gpus and gpus[0].memory_gb is not None:
                # "8x A100 80GB, 单卡40G": keep the standalone figure too, so the contradiction is reported
                if prose.fields[key] != f[key] and card_size_gb(float(prose.fields[key])) == float(prose.fields[key]):
                    f[key] = prose.fields[key]
                    prov[key] = Provenance("stated", origin(prose.spans[key], marked, text))
                continue
            put(key, prose.fields[key], "stated", origin(prose.spans[key], marked, text))
    if logs.gpu_memory_gb is not None:
        put("gpu_memory_gb", int(logs.gpu_memory_gb), "log", logs.memory_span)
    if prov.get("gpu_count") is not None and prov["gpu_count"].source == "stated" and \
            (mixed := mixed_cards(marked, {g.start: g.name or g.raw for g in gpus})):
        # "two 40G A100s and one 80G GPU": both kinds of card are the run's
        f["gpu_count"], prov["gpu_count"] = mixed[0], Provenance("stated", text[mixed[2][0]: mixed[2][1]].strip())
        out.notes.append(ReadNote("count_summed", {"count": mixed[0], "span": text[mixed[2][0]: mixed[2][1]].strip()}))
    read_alternatives(f, prov, out.notes, prose, own, marked, gpus)
    weak_single = prov.get("gpu_count") is not None and f.get("gpu_count") == 1 and re.search(
        r"单|single|one|一", prov["gpu_count"].span, re.I | re.A)
    launcher = "nodes" in cfg.fields and "gpus_per_node" in cfg.fields and "gpu_count" in cfg.fields
    if (weak_single and "gpu_count" in cfg.fields) or (launcher and cfg.fields["nodes"] > 1):
        for key in ("gpu_count", "gpus_per_node", "nodes"):
            f.pop(key, None)
            prov.pop(key, None)
    if prov.get("gpu_count") is not None and prov["gpu_count"].source == "stated" and "nodes" not in f and \
            (vis := visible_devices(work)) and 0 < vis[0] < f["gpu_count"] and cfg.fields.get("gpu_count") in (None, vis[0]):
        # "I only have 10 A40s" beside "CUDA_VISIBLE_DEVICES=2,3,4,5,6,7,8,9": the run sees 8 of them
        out.notes.append(ReadNote("count_subset", {"used": vis[0], "total": f["gpu_count"], "span": vis[1]}))
        f["gpu_count"], prov["gpu_count"] = vis[0], Provenance("config", vis[1])
    prose_counts = any(k in f for k in ("gpu_count", "gpus_per_node"))
    for key in ("gpu_count", "gpus_per_node", "nodes"):
        if key in cfg.fields and not (key == "gpu_count" and prose_counts and "nodes" not in cfg.fields):
            put(key, cfg.fields[key], "config", cfg.spans.get(key, ""))
    if (f.get("nodes") or 1) > 1 and prov["nodes"].source == "stated" and (one_node := _single_node_launch(work, cfg.fields)):
        # "two A40 machines" beside "torchrun --standalone --nproc_per_node=2": the launch runs on one
        # node, so the run is that node's GPUs (first-contact batch f)
        f["nodes"], prov["nodes"] = 1, Provenance("config", one_node)
        if "gpus_per_node" in cfg.fields:
            f["gpus_per_node"] = f["gpu_count"] = cfg.fields["gpus_per_node"]
            prov["gpus_per_node"] = prov["gpu_count"] = Provenance("config", cfg.spans.get("gpus_per_node", one_node))
    if logs.nodes and "nodes" not in f:
        put("nodes", logs.nodes, "log", logs.hw_span)
        if "gpu_count" not in f:
            put("gpu_count", logs.nodes * (logs.gpus_per_node or 0) or None, "log", logs.hw_span)
    if f.get("gpus_per_node") == 1 and prov["gpus_per_node"].source == "config" and (vis := visible_devices(work)) \
            and vis[0] > 1 and not _MULTI_NODE_FLAG.search(work) and (f.get("nodes") or 1) == 1 \
            and f.get("gpu_count") in (None, 1):
        # "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node=1": one process on one node that sees both
        # cards (first-contact batch k): the count is the visible devices, never two nodes of one GPU
        f.pop("gpus_per_node")
        prov.pop("gpus_per_node")
        f.pop("gpu_count", None)
        prov.pop("gpu_count", None)
        put("gpu_count", vis[0], "config", vis[1])
        put("nodes", 1, "config", vis[1])
        out.notes.append(ReadNote("one_process_visible_devices", {"count": vis[0], "span": vis[1]}))
    if "gpu_count" not in f and "gpus_per_node" in f and "nodes" not in f and prov["gpus_per_node"].source == "config":
        put("gpu_count", f["gpus_per_node"], "config", prov["gpus_per_node"].span)  # torchrun's default: one node
    if "gpu_count" not in f and (world := degrees.world_size()):  # torchtitan: dp_replicate x dp_shard x cp x tp x pp
        put("gpu_count", world, "config", "; ".join(degrees.spans.values()) or "data_parallel_shard_degree")
    if "gpu_count" not in f and "gpus_per_node" in f and "nodes" not in f and _ONE_NODE.search(own):
        # "a 4 x P40 node", "my server with 8 A100s": one node, so its GPUs are the run's
        put("gpu_count", f["gpus_per_node"], prov["gpus_per_node"].source, prov["gpus_per_node"].span)
    if "gpu_count" not in f and not ("gpus_per_node" in f and "nodes" in f) and (vis := visible_devices(work)):
        put("gpu_count", vis[0], "config", vis[1], confidence=0.6)
        out.notes.append(ReadNote("count_from_device_list", {"count": vis[0], "span": vis[1]}))
        if not _MULTI_NODE_FLAG.search(work):
            put("nodes", 1, "config", vis[1], confidence=0.6)  # the device list of one machine: one node
    if "gpu_count" not in f and not ("gpus_per_node" in f and "nodes" in f) and (ids := prose.observed.get("device_list_count")):
        # "GPUs 0 and 1", "0,1号卡": as weak as CUDA_VISIBLE_DEVICES, and said to come from the list
        put("gpu_count", ids[0], "stated", origin(ids[1], marked, text), confidence=0.6)
        out.notes.append(ReadNote("count_from_device_list", {"count": ids[0], "span": origin(ids[1], marked, text)}))
    if prose.total_memory_gb and "gpu_memory_gb" not in f:
        count = f.get("gpu_count") or ((f.get("nodes") or 0) * (f.get("gpus_per_node") or 0)) or None
        if count and count > 0:
            per = prose.total_memory_gb / count
            if card_size_gb(per) == per:
                put("gpu_memory_gb", int(per) if per.is_integer() else round(per, 2), "stated",
                    origin(prose.total_span, marked, text), confidence=0.8)
    if "gpu" in f and "gpu_memory_gb" not in f:
        from bot.catalog import list_gpus

        family = card_family(f["gpu"])
        card_sizes = {x.memory_gb for x in list_gpus() if card_family(x.name) == family}
        if len(card_sizes) == 1:
            mem = next(iter(card_sizes))
            put("gpu_memory_gb", int(mem) if float(mem).is_integer() else mem, "assumed", prov["gpu"].span, 0.9)

    # --- training options: the config first, then the person's words ------------------------
    for key, value in cfg.fields.items():
        if key not in _HARDWARE:
            put(key, value, "config", cfg.spans.get(key, ""))
    for key, value in prose.fields.items():
        if key not in _HARDWARE and key != "params_b":
            put(key, value, "stated", origin(prose.spans[key], marked, text))
    for axis_field, degree in degrees.fields.items():
        put(axis_field, degree, "config" if degrees.sources[axis_field] == "config" else "stated", degrees.spans[axis_field])
    _put_model_code(put, text, own, logs.spans)
    if f.get("base_dtype") == "nf4" and f.get("finetune") == "lora":
        f["finetune"] = "qlora"
    if "lora_targets" in f and f.get("finetune") not in ("lora", "qlora"):
        f.pop("lora_targets")  # "--lora_target c_attn" beside "--finetuning_type full" targets nothing
        prov.pop("lora_targets", None)

    # --- observed ------------------------------------------------------------------------------
    obs = logs.observed
    for key in ("used_per_gpu_gib", "estimate_gib", "free_gib"):
        if getattr(obs, key) is None and key in prose.observed:
            setattr(obs, key, float(prose.observed[key]))
    if "worked_gpu_count" in prose.observed:
        obs.worked_gpu_count = int(prose.observed["worked_gpu_count"])
    for key in ("zero_stage", "zero_offload", "fsdp_strategy", "framework"):
        if key in cfg.observed and getattr(obs, key) is None:
            setattr(obs, key, cfg.observed[key])
    if obs.zero_stage is None:
        # a stage the run uses, not one offered as an alternative ("FSDP还是DeepSpeed ZeRO-3")
        stages = {int(m.group(1) or m.group(2)) for m in _ZERO.finditer(work)
                  if not re.search(r"(?:还是|\bor\b|\band\b|\bvs\.?|versus|或者?|和|与|version of|like|similar to|类似|相当于)\s*"
                                   r"(?:deepspeed\s*)?$", work[max(0, m.start() - 16): m.start()], re.I | re.A)
                  # "zero2还是zero3" offers two; "ds3 还是会OOM" is "still" (a word follows, not an option)
                  and not re.match(r"\s*(?:还是\s*[A-Za-z]|\bor\b|\bvs)", work[m.end(): m.end() + 8], re.I | re.A)}
        if len(stages) == 1 and not re.search(r"stage\s*:?\s*0\s*,\s*1", own, re.I | re.A):
            obs.zero_stage = stages.pop()
    if obs.zero_offload is None and any(not _NO_OFFLOAD.match(own, m.end()) for m in _PROSE_OFFLOAD.finditer(own)):
        obs.zero_offload = True
    low = text.lower()
    if obs.framework is None:
        for name, pat in _FRAMEWORKS:
            if re.search(pat, text, re.I | re.A):
                obs.framework = name
                break
    # The run uses DeepSpeed: a deepspeed config in the config, a ZeRO stage the run uses (read
    # above, never one offered as an alternative), its launcher or a ds_config file named.
    obs.deepspeed = cfg.observed.get("framework") == "deepspeed" or obs.zero_stage is not None or \
        bool(_DEEPSPEED_RUN.search(text))
    if obs.framework == "deepspeed" and re.search(dict(_FRAMEWORKS)["llamafactory"], text, re.I | re.A):
        # A LlamaFactory config or script that names a DeepSpeed config ("deepspeed:
        # examples/deepspeed/ds_z3_config.json", "--deepspeed ds_config.json"): LlamaFactory runs
        # the training, so its defaults (activation checkpointing) apply.
        obs.framework = "llamafactory"
    roles = [r for r, pat in _RL_ROLES if re.search(pat, low)]
    algo = next((a for a in _RL_ALGOS if re.search(r"(?<![a-z])" + a + r"(?![a-z])", low) or cfg.observed.get("rl") == a), None)
    if algo is None and re.search(r"num_generations|reward_funcs", low):
        algo = "grpo"
    if algo or len(roles) >= 2 or {"actor", "critic"} & set(roles) or "deepspeed chat" in low:
        obs.models = tuple(dict.fromkeys([*(_RL_ALGOS.get(algo or "", ())), *roles])) or ("actor", "critic", "reference", "reward")

    prov = {k: (Provenance(v.source, gap_free(v.span), v.confidence) if GAP in v.span else v) for k, v in prov.items()}
    out.fields, out.provenance, out.observed = f, prov, obs
    roles_and_contradictions(out, prose, aside_notes, cfg, gpus, marked, before_aside)
    lines = [ln for ln in own.splitlines()
             if len(ln) > 400 or not (_CODE_LINE.match(ln.strip()) or ln.rstrip().endswith("\\"))]
    words = "\n".join(lines)
    if not (EN_WORD.search(words) or CJK.search(words)):
        words = own if (EN_WORD.search(own) or CJK.search(own)) else text
    out.language = answer_language(words)
    if in_training := inference_in_training(own):
        # the inference is part of the training run: neither the intent nor the topics are serving
        intent_text = _without_inference_words(intent_text, in_training) if len(intent_text) == len(own) else intent_text
        out.notes.append(ReadNote("inference_in_training", {"span": in_training[0].group(0).strip()}))
    out.topics = topics_of(_without_inference_words(own, in_training))
    if not in_training and "inference" in out.topics and asks_training_beside_inference(intent_text):
        # a quoted warning or doc line about inference, then a training question: answered as training
        said = next((x for x in sentences_of(intent_text) if topics_of(x).count("inference")), "")
        out.topics.remove("inference")
        out.notes.append(ReadNote("inference_quoted", {"span": " ".join(said.split())[:80]}))
    if obs.oom and "oom" not in out.topics:
        out.topics.append("oom")
    if obs.models and "multi_model_rl" not in out.topics:
        out.topics.append("multi_model_rl")
    out.compare = compare_of(own)
    hardware_or_model = {"model", "params_b", "gpu", "gpu_count", "gpu_memory_gb", "nodes", "gpus_per_node"}
    reading = read_intent(intent_text, has_setup=bool(hardware_or_model & set(f)), oom=obs.oom)
    out.intent, out.intent_asked, out.symptom = reading.intent, reading.asked, reading.symptom
    out.can_question = reading.can_question
    for key in _ASKABLE_OPTIONS:  # "Would gradient_as_bucket_view=True fix it?" asks; the run does not use it yet
        if key in prov and prov[key].source in ("stated", "config") and _asked_about(prov[key].span, text):
            f.pop(key, None)
            prov.pop(key, None)
    if out.intent == "concept" and not (hardware_or_model & set(f)):
        # "What is activation checkpointing?" names a technique; it does not say the run uses it
        for key in ("activation_checkpointing", "torch_compile", "finetune", "optimizer_impl"):
            if prov.get(key) is not None and prov[key].source == "stated":
                f.pop(key, None)
                prov.pop(key, None)
    return out
