"""What the reader read, said back briefly so a user can correct it.

``read_back(parsed, lang)`` -> one line such as
``read: 4 × A800 80GB SXM from `4 * A800 80G`; seq 1536 from `--cutoff_len 1536`; assumed: 80 GB (the card's size)``.
It only formats ``Parsed.provenance``: every value named here is a field of ``parsed.setup`` and every
quoted span is text the user wrote (or a config/log they pasted); nothing is computed.
"""

from __future__ import annotations

from dataclasses import dataclass

# Order in which fields are read back: what the answer depends on most first.
_ORDER = ("model", "params_b", "gpu_count", "nodes", "gpus_per_node", "gpu", "gpu_memory_gb", "finetune", "precision",
          "seq_len", "micro_batch", "grad_accum_steps", "activation_checkpointing", "optimizer", "optimizer_impl",
          "torch_compile", "lora_targets", "base_dtype", "intra_node_link", "inter_node_link", "inter_node_gbps",
          "cpu_ram_gb", "lora_rank")
_LABELS = {
    "params_b": ("{v:g}B parameters", "{v:g}B 参数"), "gpu_count": ("{v} GPUs", "{v} 张卡"), "nodes": ("{v} nodes", "{v} 台机器"),
    "gpus_per_node": ("{v} GPUs per node", "每台 {v} 张"), "gpu_memory_gb": ("{v:g} GB per card", "单卡 {v:g} GB"),
    "seq_len": ("seq {v}", "序列长度 {v}"), "micro_batch": ("micro-batch {v}", "micro batch {v}"),
    "grad_accum_steps": ("gradient accumulation {v}", "梯度累积 {v}"), "cpu_ram_gb": ("{v:g} GB host RAM", "CPU 内存 {v:g} GB"),
    "inter_node_gbps": ("{v:g} Gb/s between nodes", "节点间 {v:g} Gb/s"), "lora_rank": ("LoRA rank {v}", "LoRA rank {v}"),
    "activation_checkpointing": ("activation checkpointing {v}", "重计算 {v}"), "torch_compile": ("torch.compile {v}", "torch.compile {v}"),
}
_SOURCE = {"stated": ("", ""), "config": (" (config)", "（配置）"), "log": (" (log)", "（日志）"),
           "history": (" (earlier message)", "（之前的消息）")}


@dataclass(frozen=True)
class ReadItem:
    field: str
    value: object
    source: str
    span: str


def read_items(parsed) -> list[ReadItem]:
    """Every setup field with its provenance, in reading order."""
    setup = parsed.setup.model_dump()
    items = []
    for name in sorted(parsed.provenance, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER)):
        value = setup.get(name)
        if value is None:
            continue
        prov = parsed.provenance[name]
        items.append(ReadItem(name, value, prov.source, prov.span))
    return items


def _label(item: ReadItem, zh: bool) -> str:
    if item.field in _LABELS:
        template = _LABELS[item.field][1 if zh else 0]
        value = item.value
        if isinstance(value, bool):
            value = ("开" if value else "关") if zh else ("on" if value else "off")
        return template.format(v=value)
    return str(item.value)


def read_back(parsed, lang: str = "en") -> str:
    """One line: what was read (with the text it came from) and what was assumed."""
    zh = lang == "zh"
    read, assumed = [], []
    for item in read_items(parsed):
        label = _label(item, zh)
        if item.source == "assumed":
            assumed.append(label)
            continue
        where = _SOURCE.get(item.source, ("", ""))[1 if zh else 0]
        span = f" {'来自' if zh else 'from'} `{item.span}`" if item.span else ""
        read.append(f"{label}{span}{where}")
    parts = []
    if read:
        parts.append(("读到：" if zh else "read: ") + ("；" if zh else "; ").join(read))
    if assumed:
        parts.append(("假设：" if zh else "assumed: ") + ("；" if zh else "; ").join(assumed))
    return ("。" if zh else ". ").join(parts)
