"""Settings pasted as configuration: ``key: value`` YAML, ``--flag value`` command lines, JSON,
TOML, ``KEY=value`` environment lines, Python keyword arguments.

These are the most precise setups users give (LlamaFactory YAML, HF TrainingArguments, ms-swift
and torchrun command lines, accelerate/FSDP and DeepSpeed configs, torchtitan TOML). Only keys
this module knows are read; each becomes a setup field or an observed fact with the exact text
it came from. The model a script loads is read from its setting, the variable that setting refers to
("--model_name_or_path $MODEL" beside "MODEL=/data/Qwen2.5-7B") or a from_pretrained call.
``read_config`` also returns the spans it consumed (and the spans of unknown keys
whose values are paths) so prose rules do not read "--output_dir saves/Qwen-72B" as a model size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.understand.text import MAX_DIGITS

# key (lower case, dashes as underscores) -> setup field or observed fact
_INT_KEYS = {
    "per_device_train_batch_size": "micro_batch", "train_micro_batch_size_per_gpu": "micro_batch",
    "micro_batch_size": "micro_batch", "micro_train_batch_size": "micro_batch", "batch_size_training": "micro_batch",
    "gradient_accumulation_steps": "grad_accum_steps", "gradient_accumulate_every": "grad_accum_steps",
    "grad_accum_steps": "grad_accum_steps", "accumulate_grad_batches": "grad_accum_steps",
    "cutoff_len": "seq_len", "max_seq_length": "seq_len", "max_seq_len": "seq_len", "model_max_length": "seq_len",
    "seq_len": "seq_len", "seq_length": "seq_len", "sequence_len": "seq_len", "block_size": "seq_len",
    "context_length": "seq_len", "max_length": "seq_len", "maxlen": "seq_len", "max_len": "seq_len",
    "max_words": "seq_len",  # LLaMA-Adapter / LLaMA2-Accessory: tokens per sample, despite the name
    "lora_rank": "lora_rank", "lora_r": "lora_rank", "lora_dim": "lora_rank",  # lora_dim: DeepSpeed-Chat
    "nproc_per_node": "gpus_per_node", "num_gpus": "num_gpus", "n_gpus": "gpu_count", "gpus": "gpu_count",
    "gpu_count": "gpu_count", "num_processes": "gpu_count",
    "world_size": "gpu_count", "devices": "gpu_count",
    "nnodes": "nodes", "num_nodes": "nodes", "num_machines": "nodes", "nodes": "nodes",
    "zero_stage": "zero_stage", "quantization_bit": "quant_bits",
}
# keys whose value is a plain integer but that need a context word to mean anything
_BATCH_KEYS = {"batch_size"}  # ms-swift 2.x / nanoGPT: per-device batch
_SEQ_PRIORITY = ("cutoff_len", "max_seq_length", "max_seq_len", "model_max_length", "seq_len", "seq_length",
                 "sequence_len", "context_length", "block_size", "maxlen", "max_len", "max_length", "max_words")
_BOOL_KEYS = {
    "gradient_checkpointing": "activation_checkpointing", "enable_activation_checkpointing": "activation_checkpointing",
    "activation_checkpointing": "activation_checkpointing", "use_gradient_checkpointing": "activation_checkpointing",
    "fsdp_activation_checkpointing": "activation_checkpointing",
    "disable_gradient_checkpointing": "disable_checkpointing",  # LlamaFactory: true turns it off
    "torch_compile": "torch_compile", "compile": "torch_compile", "use_compile": "torch_compile",
    "bf16": "bf16", "fp16": "fp16", "pure_bf16": "pure_bf16", "use_fp16": "fp16", "half": "fp16",
    "load_in_4bit": "load_in_4bit", "load_in_8bit": "load_in_8bit", "use_lora": "use_lora", "use_peft": "use_lora",
    "enable_fsdp": "enable_fsdp", "fused": "fused", "adam_offload": "offload",
    "fsdp_offload_params": "offload", "gradient_as_bucket_view": "ddp_bucket_view",
}
_STR_KEYS = {
    "finetuning_type": "method", "train_type": "method", "sft_type": "method", "adapter": "method",
    "peft_method": "method", "tuner_type": "method",
    "optim": "optim", "optimizer": "optim", "type": "optim_type",
    "lora_target": "lora_target", "target_modules": "lora_target", "lora_target_modules": "lora_target",
    "deepspeed": "deepspeed", "ds_config": "deepspeed", "deepspeed_config": "deepspeed",
    "fsdp": "fsdp", "fsdp_sharding_strategy": "fsdp", "sharding_strategy": "fsdp",
    "mixed_precision": "mixed_precision", "mixed_precision_param": "mixed_precision", "precision": "mixed_precision",
    "dtype": "dtype", "torch_dtype": "dtype", "model_dtype": "dtype",
    "distributed_type": "distributed_type", "stage": "stage", "mode": "mode",
    "model_name_or_path": "model", "model": "model", "base_model": "model", "model_name": "model",
    "model_id_or_path": "model", "model_type": "model", "pretrain": "model", "model_path": "model",
    # TencentPretrain / Linly, PEFT scripts, FastChat and others name the weights they start from
    "pretrained_model_path": "model", "pretrained_model_name_or_path": "model", "base_model_name_or_path": "model",
    "base_model_path": "model", "model_dir": "model", "model_name_path": "model", "hf_model_path": "model",
    "rlhf_type": "rl", "rl": "rl", "include": "include",
    # the attention kernel (transformers from_pretrained / config.json, axolotl, TRL): issue 26
    "attn_implementation": "attn_implementation", "_attn_implementation": "attn_implementation",
}
# attn_implementation values -> the setup field (flash 2/3 and flex keep no s x s scores, like flash)
_ATTN_IMPLEMENTATIONS = {"eager": "eager", "sdpa": "sdpa", "flash_attention_2": "flash_attention_2",
                         "flash_attention_3": "flash_attention_2", "flex_attention": "flash_attention_2"}
_ALL = {**_INT_KEYS, **_BOOL_KEYS, **_STR_KEYS, **{k: "batch" for k in _BATCH_KEYS}}

_VALUE = r"(?!--)(\"[^\"\n]{0,200}\"|'[^'\n]{0,200}'|\{|[^\s,;}\]\\`\u0080-\uffff]{1,200})"
# --flag value | --flag=value | --flag (boolean)
_FLAG = re.compile(r"(?<![A-Za-z0-9_\-])--([A-Za-z][A-Za-z0-9_.\-]{0,60})(?:(?:\s*=\s*|[ \t]+)(?:为|是)?" + _VALUE + r")?")
# key: value | key = value | "key": value | KEY=value
_KV = re.compile(r"(?<![A-Za-z0-9_\-./])[\"']?([A-Za-z_][A-Za-z0-9_.]{0,60})[\"']?[ \t]*(?:==|[:=])[ \t]*(?:为|是)?" + _VALUE)
# deepspeed --include host:ids[@host:ids...]: the hosts and the GPUs it runs on
# (https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node); "localhost:2,3" is one node
_INCLUDE = re.compile(r"--include[= ]+[\"']?((?:localhost|[\w.\-]+):[\d,]+(?:@(?:localhost|[\w.\-]+):[\d,]+)*)")
_VISIBLE = re.compile(r"CUDA_VISIBLE_DEVICES\s*=\s*[\"']?([\d,]+)")
_PATHISH = re.compile(r"[/\\]|\.(?:json|ya?ml|toml|py|sh)\b")
# words that continue a sentence after "model:" ("a 7B model: would it fit?"), never a model's name
_PROSE_WORDS = {"would", "will", "can", "could", "should", "is", "are", "does", "do", "the", "a", "an", "it", "i", "we",
                "how", "what", "which", "why", "and", "with", "for", "to", "in", "on", "of", "but", "so", "or"}
_TRUE = {"true", "1", "yes", "on", "y", "t", "auto"}  # "bf16: auto" (axolotl, HF): on where the card has it
_FALSE = {"false", "0", "no", "off", "n", "f", "none", "null"}


@dataclass
class ConfigReading:
    fields: dict = field(default_factory=dict)
    spans: dict = field(default_factory=dict)       # field -> exact text it was read from
    observed: dict = field(default_factory=dict)    # zero_stage, zero_offload, fsdp_strategy, framework, models
    model_text: str | None = None                   # a model path/name value ("/data/Qwen2.5-7B")
    consumed: list[tuple[int, int]] = field(default_factory=list)
    keys: set = field(default_factory=set)


def _norm_key(key: str) -> str:
    key = key.strip("\"'").lower().replace("-", "_")
    return key.rsplit(".", 1)[-1]  # dataset.max_seq_len -> max_seq_len


def _unquote(value: str | None) -> str:
    return (value or "").strip().strip("\"'").strip().rstrip(".,;:")


# LoRA target modules named one by one (PEFT ``target_modules``, LlamaFactory ``lora_target``, axolotl
# ``lora_target_modules``), Llama-family names: which of the calculator's target sets they make
# (bot/calc/states.py LORA_TARGET_SETS). Only the projections decide; other names are ignored.
_QKV_MODULES = ("q_proj", "k_proj", "v_proj")
_MLP_MODULES = ("gate_proj", "up_proj", "down_proj")
LORA_MODULE_LIST = r"[qkvo]_proj|gate_proj|up_proj|down_proj"


def lora_target_set(value: str) -> str | None:
    """"attention" for attention projections only, "all_linear" for q, k, v, o and the three MLP
    projections, "all_linear_but_o" for the same without o_proj (Answer.AI fsdp_qlora's default);
    None for a partial MLP set the calculator has no name for, or no projection at all."""
    names = set(re.findall(rf"(?<![a-z_])(?:{LORA_MODULE_LIST})(?![a-z_])", value.lower()))
    if not names & set(_QKV_MODULES):
        return None
    mlp = names & set(_MLP_MODULES)
    if not mlp:
        return "attention"
    if mlp != set(_MLP_MODULES) or not set(_QKV_MODULES) <= names:
        return None
    return "all_linear" if "o_proj" in names else "all_linear_but_o"


# What a sentence says about the target set: "all-linear" (PEFT's value), a module list, "attention only".
_LORA_TARGET_WORDS = re.compile(rf"all[- _]?linear|all linear layers|lora_target:?\s*all\b|attention only|only attention|"
                                rf"(?:{LORA_MODULE_LIST})(?:['\"]?\s*,\s*['\"]?(?:{LORA_MODULE_LIST}))+", re.I | re.A)


def lora_targets_named(low: str) -> tuple[str, str] | None:
    """The target set a sentence names and the words that name it (None: it names none the calculator
    has, e.g. q_proj,v_proj,gate_proj)."""
    for m in _LORA_TARGET_WORDS.finditer(low):
        words = m.group(0)
        if "linear" in words or re.match(r"lora_target", words, re.I):
            return "all_linear", words
        if targets := ("attention" if "attention" in words else lora_target_set(words)):
            return targets, words
    return None


def _as_int(value: str) -> int | None:
    v = _unquote(value)
    if re.fullmatch(rf"-?\d{{1,{MAX_DIGITS}}}", v):
        return int(v)
    if re.fullmatch(r"\d{1,6}(?:\.\d+)?[kK]", v):
        return int(float(v[:-1]) * 1024)
    return None


def _as_bool(value: str | None) -> bool | None:
    if value is None:
        return True  # a bare --flag
    v = _unquote(value).lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    return None


# Precision switches (``bf16: true``, ``"fp16": {"enabled": true}``). Written ``key: value`` with a
# word that is no boolean ("bf16: DDP", "fp16: FSDP or DDP?") the line is prose naming a precision
# and a strategy: it is left to the prose rules, which read both, instead of being consumed as a
# switch that is neither on nor off (and the strategy with it).
_PRECISION_SWITCHES = ("bf16", "fp16", "pure_bf16")


def _names_a_word(value: str | None) -> bool:
    """``value`` is a word that is no boolean ("DDP", "FSDP"): not a switch's setting."""
    v = _unquote(value)
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9_\-]*", v)) and _as_bool(v) is None


def _zero_stage(text: str) -> int | None:
    m = re.search(r"(?:zero|z|stage)[_\-]?([0-3])(?!\d)", text, re.I | re.A)
    return int(m.group(1)) if m else None


def read_config(text: str) -> ConfigReading:
    out = ConfigReading()
    raw: dict[str, tuple[str, str | None, str, tuple[int, int]]] = {}  # role key -> (key, value, span text, span)
    models: list[tuple[str, str]] = []  # every model value (value, span text), flags first, then key: value lines
    assigned: dict[str, str] = {}  # NAME -> value of each "NAME=value" / "name = 'value'" line, for $NAME

    def note(key: str, value: str | None, m: re.Match, vgroup: int, flag: bool = False) -> None:
        nk = _norm_key(key)
        if not flag and _BOOL_KEYS.get(nk) in _PRECISION_SWITCHES and _names_a_word(value):
            return  # "bf16: DDP", "fp16: FSDP or DDP?": prose naming a precision and a strategy, not a switch
        if nk not in _ALL:
            if value and _PATHISH.search(_unquote(value)):
                out.consumed.append(m.span())  # --output_dir saves/Qwen-72B: never a model size
            return
        if value is not None and value.startswith("--"):
            value = None
        if value == "{":
            value = _json_object_value(text, m.end())
        span = (m.start(), m.end() if value is not None or vgroup == 0 else m.end())
        out.keys.add(nk)
        raw.setdefault(nk, (key, value, text[span[0]:span[1]].strip(), span))
        if _INT_KEYS.get(nk) in ("gpu_count", "gpus_per_node", "nodes") and value is not None and _as_int(value) is None:
            return  # "GPU: 1*A100" is prose, not a count setting: leave it to the prose rules
        if _STR_KEYS.get(nk) == "model" and _unquote(value).lower() in _PROSE_WORDS:
            return  # "... for a 7B model: would FSDP fit?": a sentence going on, not a model setting
        if _STR_KEYS.get(nk) == "model" and value:
            models.append((value, text[span[0]:span[1]].strip()))
        out.consumed.append(span)

    for m in _FLAG.finditer(text):
        note(m.group(1), m.group(2), m, 2, flag=True)
    for m in _KV.finditer(text):
        if text[max(0, m.start() - 2): m.start()].endswith("--"):
            continue
        if m.group(2):
            assigned.setdefault(m.group(1).strip("\"'"), m.group(2))
        note(m.group(1), m.group(2), m, 2)
    for m in _FROM_PRETRAINED.finditer(text):  # AutoModelForCausalLM.from_pretrained("/data/Qwen2.5-7B")
        models.append((m.group(1) or m.group(2), m.group(0)))

    f, spans, obs = out.fields, out.spans, out.observed

    def put(name: str, value, key: str) -> None:
        if name not in f and value is not None:
            f[name] = value
            spans[name] = raw[key][2]

    def listed_after(key: str) -> str:
        """The rest of a key's line and any YAML block-list items under it: a module list's value
        ("[q_proj, k_proj, ...]", "q_proj,k_proj", "- q_proj" lines) is read whole, not to its first comma."""
        end = raw[key][3][1]
        line_end = text.find("\n", end)
        rest = text[end: len(text) if line_end < 0 else line_end]
        block = re.match(r"(?:\n[ \t]*-[ \t]*[\w'\"]+[ \t]*)+", text[len(text) if line_end < 0 else line_end:])
        return rest + (block.group(0) if block else "")

    for key, (_orig, value, span_text, _) in raw.items():
        role = _ALL[key]
        if role in ("micro_batch", "grad_accum_steps", "lora_rank", "gpu_count", "gpus_per_node", "nodes", "seq_len"):
            put(role, _as_int(value) if value else None, key)
        elif role == "num_gpus":
            pass  # deepspeed --num_gpus: per node with --num_nodes, else the total (one node); set below
        elif role == "batch":
            put("micro_batch", _as_int(value) if value else None, key)
        elif role == "zero_stage":
            stage = _as_int(value) if value else None
            if stage is not None and 0 <= stage <= 3:
                obs["zero_stage"] = stage
                spans.setdefault("zero_stage", span_text)
        elif role == "quant_bits":
            if value and _as_int(value) == 4:
                f.setdefault("base_dtype", "nf4")
                spans.setdefault("base_dtype", span_text)
                obs["quantized"] = True
        elif role in ("activation_checkpointing", "torch_compile", "ddp_bucket_view"):
            put(role, _flag(value), key)
        elif role == "disable_checkpointing":
            off = _flag(value)
            put("activation_checkpointing", None if off is None else not off, key)
        elif role == "offload":
            if _as_bool(value):
                obs["zero_offload"] = True
        elif role in ("bf16", "fp16", "pure_bf16"):
            on = _flag(value) if value != "{" else None
            if on:
                put("precision", {"bf16": "bf16-mixed", "fp16": "fp16-mixed", "pure_bf16": "bf16"}[role], key)
        elif role == "load_in_4bit":
            if _as_bool(value):
                put("base_dtype", "nf4", key)
                obs["quantized"] = True
        elif role == "use_lora":
            if _flag(value):
                put("finetune", "lora", key)
        elif role == "method":
            v = _unquote(value).lower()
            method = {"full": "full", "lora": "lora", "qlora": "qlora", "freeze": None}.get(v)
            put("finetune", method, key)
        elif role == "attn_implementation":
            put("attn_implementation", _ATTN_IMPLEMENTATIONS.get(_unquote(value).lower()), key)
        elif role in ("optim", "optim_type"):
            v = _unquote(value).lower()
            if role == "optim_type" and "adam" not in v and "sgd" not in v:
                continue
            if "8bit" in v or "8_bit" in v or "bnb" in v:
                put("optimizer", "adam8bit", key)
            elif "adam" in v:
                put("optimizer", "adamw", key)
                if "fused" in v:
                    put("optimizer_impl", "fused", key)
            elif "sgd" in v:
                put("optimizer", "sgd", key)
        elif role == "fused":
            if _as_bool(value):
                put("optimizer_impl", "fused", key)
        elif role == "lora_target":
            v = _unquote(value).lower()
            if v in ("all", "all-linear", "all_linear"):
                put("lora_targets", "all_linear", key)
            elif (targets := lora_target_set(v + listed_after(key))) and re.fullmatch(r"[\w,\s\[\]'\"-]*", v):
                put("lora_targets", targets, key)
            elif v and re.fullmatch(r"[\w,\s\[\]'\"]+", v) and re.search(r"c_attn|wqkv|query|qkv", v) \
                    and not re.search(r"gate|up_proj|down_proj|mlp|w1|w2|w3", v):
                put("lora_targets", "attention", key)
        elif role == "deepspeed":
            v = _unquote(value)
            stage = _zero_stage(v) if v else None
            if stage is not None:
                obs["zero_stage"] = stage
                spans.setdefault("zero_stage", span_text)
            if "offload" in v.lower():
                obs["zero_offload"] = True
            obs.setdefault("framework", "deepspeed")
        elif role == "fsdp":
            v = _unquote(value).lower()
            for word, sid in (("full_shard", "fsdp_full_shard"), ("shard_grad_op", "fsdp_shard_grad_op"),
                              ("hybrid_shard", "fsdp_hybrid_shard"), ("no_shard", "ddp")):
                if word in v:
                    obs["fsdp_strategy"] = sid
                    spans.setdefault("fsdp_strategy", span_text)
                    break
            obs.setdefault("framework", "fsdp")
        elif role == "mixed_precision":
            v = _unquote(value).lower()
            if v in ("bf16", "bfloat16", "bf16-mixed"):
                put("precision", "bf16-mixed", key)
            elif v in ("fp16", "float16", "16-mixed", "fp16-mixed"):
                put("precision", "fp16-mixed", key)
            elif v in ("no", "fp32", "32", "float32"):
                put("precision", "fp32", key)
        elif role == "stage":
            pass  # DeepSpeed's "zero_optimization": {"stage": N}: read below, LlamaFactory's "stage: sft" is not it
        elif role == "mode":
            v = _unquote(value).lower()
            if "activation_checkpoint" in text.lower() and v in ("selective", "full"):
                put("activation_checkpointing", True, key)
        elif role == "model":
            pass  # every model value is weighed below (a $VARIABLE is read from its assignment)
        elif role == "rl":
            v = _unquote(value).lower()
            if v in ("grpo", "ppo", "dpo", "rloo", "kto", "orpo") or v == "true":
                obs["rl"] = v
        elif role == "distributed_type":
            obs["framework"] = _unquote(value).lower()

    for value, span_text in models:
        if (named := _model_value(value, assigned)) is not None:
            out.model_text, spans["model_text"] = named, span_text
            break
    # sequence length: the most specific key wins (LlamaFactory's cutoff_len over a generic max_length)
    if "seq_len" in f:
        for key in _SEQ_PRIORITY:
            stated = raw[key][1] if key in raw else None
            if stated and _as_int(stated):
                f["seq_len"], spans["seq_len"] = _as_int(stated), raw[key][2]
                break
    if "num_gpus" in raw and raw["num_gpus"][1] and (n := _as_int(raw["num_gpus"][1])) is not None:
        put("gpus_per_node" if "nodes" in f else "gpu_count", n, "num_gpus")
    # torchrun --nproc_per_node 8 --nnodes 2 -> 16 GPUs; accelerate num_processes is the total already
    if "gpus_per_node" in f and "nodes" in f and "gpu_count" not in f:
        if f["nodes"] > 0 and f["gpus_per_node"] > 0:
            f["gpu_count"] = f["nodes"] * f["gpus_per_node"]
            spans["gpu_count"] = spans["gpus_per_node"]
    zs = _ZERO_JSON.search(text)
    if zs and "zero_stage" not in obs:
        obs["zero_stage"], spans["zero_stage"] = int(zs.group(1)), zs.group(0)
    if _OFFLOAD.search(text):
        obs["zero_offload"] = True
    include = _INCLUDE.search(text)
    if include and "gpu_count" not in f:
        hosts = [h.split(":", 1) for h in include.group(1).split("@")]
        devices = [d for _, ids in hosts for d in ids.split(",") if d]
        f["gpu_count"], spans["gpu_count"] = len(devices), include.group(0)
        if "nodes" not in f:  # the hosts it names are the run's nodes: "localhost:2,3,4,5" is one node
            f["nodes"], spans["nodes"] = len({h for h, _ in hosts}), include.group(0)
        out.consumed.append(include.span())
    _read_cluster_lines(text, out)
    if obs.get("quantized") and f.get("finetune") == "lora":
        f["finetune"] = "qlora"
    return out


# A DeepSpeed/MPI hostfile: one line per node, "<host> slots=<GPUs>"
# (https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node).
_SLOTS = re.compile(r"(?:^|[;,]|\s)([A-Za-z0-9][\w.\-]{0,60})\s+slots\s*=\s*(\d{1,3})\b", re.M | re.A)
# SLURM: GPUs per node ("--gres=gpu:4", "--gpus-per-node=4") and processes per node
# (https://slurm.schedmd.com/sbatch.html).
_GRES = re.compile(r"--(?:gres(?:=|\s+)gpu(?::[\w-]+)?:|gpus-per-node(?:=|\s+)(?:[\w-]+:)?)(\d{1,3})\b", re.I | re.A)
_TASKS = re.compile(r"--ntasks-per-node(?:=|\s+)(\d{1,3})\b", re.I | re.A)
_SLURM_NODES = re.compile(r"(?:--nodes|(?<![\w-])-N)(?:=|\s+)(\d{1,4})\b", re.A)
# a launcher that starts one process per GPU inside the allocation
_PER_GPU_LAUNCHER = re.compile(r"torchrun|torch\.distributed\.(?:run|launch)|accelerate launch|deepspeed\s|--nproc[_-]per[_-]node",
                               re.I | re.A)


def _read_cluster_lines(text: str, out: ConfigReading) -> None:
    """Hostfiles and SLURM options: nodes, GPUs per node, and a job that runs one process."""
    f, spans = out.fields, out.spans
    hosts = {m.group(1): (int(m.group(2)), m.group(0).strip()) for m in _SLOTS.finditer(text)}
    if hosts and "nodes" not in f and "gpus_per_node" not in f and "gpu_count" not in f:
        slots = {n for n, _ in hosts.values()}
        span = "; ".join(s for _, s in hosts.values())
        f["nodes"], spans["nodes"] = len(hosts), span
        if len(slots) == 1:
            f["gpus_per_node"], spans["gpus_per_node"] = slots.pop(), span
        f["gpu_count"], spans["gpu_count"] = sum(n for n, _ in hosts.values()), span
    gres, tasks = _GRES.search(text), _TASKS.search(text)
    if gres and "gpus_per_node" not in f:
        per_node = int(gres.group(1))
        if tasks and int(tasks.group(1)) == 1 and per_node > 1 and not _PER_GPU_LAUNCHER.search(text):
            # one task per node and no launcher inside it: one process sees all the node's GPUs (a
            # single-process job, e.g. device_map="auto"), not one data-parallel rank per GPU
            out.observed["one_process"] = tasks.group(0)
        f["gpus_per_node"], spans["gpus_per_node"] = per_node, gres.group(0)
        nodes = _SLURM_NODES.search(text)
        if nodes and "nodes" not in f:
            f["nodes"], spans["nodes"] = int(nodes.group(1)), nodes.group(0)
        if "gpu_count" not in f:
            f["gpu_count"], spans["gpu_count"] = per_node * int(f.get("nodes") or 1), gres.group(0)


_ZERO_JSON = re.compile(r"zero_optimization[\"']?\s*:\s*\{[^{}]{0,40}?[\"']stage[\"']\s*:\s*([0-3])", re.I | re.A)
_OFFLOAD = re.compile(r"offload_(?:optimizer|param)(?:_device)?[\"']?\s*[:=]\s*(?:\{[^}]{0,80}device[\"']?\s*:\s*)?"
                      r"[\"']?(?:cpu|nvme)|offload_optimizer=cpu|zero3_offload|z3_offload", re.I | re.A)


# from_pretrained with a literal or a variable: the model a script loads
_FROM_PRETRAINED = re.compile(r"\.from_pretrained\(\s*(?:pretrained_model_name_or_path\s*=\s*)?(?:[\"']([^\"'\n]{1,200})[\"']|"
                              r"([A-Za-z_]\w{0,60})\s*[,)])", re.A)
_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w{0,60})\}?")


def _model_value(value: str, assigned: dict[str, str]) -> str | None:
    """The model a model setting names: the value itself, the value of the variable it refers to
    ("--model_name_or_path ${model_name_or_path}" beside "model_name_or_path='/data/x/Llama-3-8B'",
    "--model $MODEL" beside "MODEL=~/hf/Mistral-7B"), the string a from_pretrained call in it
    loads; None when it names nothing read here (an unset variable, an expression)."""
    v = _unquote(value)
    for _ in range(3):  # a variable set from another variable, a few levels at most
        ref = _VARIABLE.fullmatch(v) or (re.fullmatch(r"[A-Za-z_]\w{0,60}", v) if v in assigned and v != assigned[v] else None)
        if not ref:
            break
        name = ref.group(1) if ref.re is _VARIABLE else v
        if name not in assigned:
            return None
        v = _unquote(assigned[name])
    if "(" in v:  # "AutoModel.from_pretrained('/data/x')": the string it loads
        inner = re.search(r"[\"']([^\"'\n]{1,200})[\"']", value)
        return inner.group(1) if inner else None
    if not v or v.startswith("$"):
        return None
    return v


def _flag(value: str | None) -> bool | None:
    """A boolean option: a bare flag, or one followed by a shell operator ("--bf16 > log"), is on."""
    b = _as_bool(value)
    if b is None and value is not None and not re.match(r"[\w\"'$]", value):
        return True
    return b


def visible_devices(text: str) -> tuple[int, str] | None:
    """CUDA_VISIBLE_DEVICES=0,1,2 -> (3, span): a weak count, used only when nothing else says one."""
    m = _VISIBLE.search(text)
    if not m:
        return None
    devices = [d for d in m.group(1).split(",") if d]
    return (len(devices), m.group(0)) if devices else None


def _json_object_value(text: str, start: int) -> str | None:
    """For ``"bf16": {"enabled": true}``: the ``enabled`` value inside the object."""
    inner = text[start: start + 120]
    m = re.match(r"[^{}]*?[\"']?enabled[\"']?\s*:\s*([\w\"']+)", inner)
    return m.group(1) if m else "{"
