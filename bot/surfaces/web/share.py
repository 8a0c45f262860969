"""The shareable link: the setup the user gave (and/or the question) as a URL query.

Only stated fields travel, with the framework the run uses (whose defaults, such as LlamaFactory's
activation checkpointing, are assumed again): a colleague who opens the link gets the same
defaults assumed again, so the same answer. Unknown keys and values that are not plain
numbers/names are dropped.
"""

from __future__ import annotations

from urllib.parse import urlencode

from bot.core.setup import TrainingSetup
from bot.tools import known_framework

# Short, readable keys for the query string -> TrainingSetup field.
QUERY_FIELDS = ("model", "params_b", "gpu", "gpu_memory_gb", "gpu_count", "gpus_per_node", "nodes",
                "intra_node_link", "inter_node_link", "inter_node_gbps", "precision", "optimizer",
                "finetune", "seq_len", "micro_batch", "activation_checkpointing", "cpu_ram_gb", "lora_rank",
                "engine")
MAX_VALUE_CHARS = 120


def setup_query(stated: dict, language: str = "en", question: str | None = None,
                framework: str | None = None) -> str:
    """``?model=...&gpu_count=4&lang=en`` for the stated fields (the question and the run's
    framework, if any)."""
    items: list[tuple[str, str]] = []
    for key in QUERY_FIELDS:
        value = stated.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, bool):
            value = "on" if value else "off"
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        items.append((key, str(value)))
    if question:
        items.append(("q", question[:1000]))
    if framework and items:
        items.append(("framework", framework))
    if items:
        items.append(("lang", "zh" if language == "zh" else "en"))
    return "?" + urlencode(items) if items else ""


def setup_from_query(params: dict[str, str]) -> tuple[dict, str, str | None]:
    """(stated setup fields, language, question) from a query; values are checked by
    ``TrainingSetup`` (a bad one is dropped, with the rest kept)."""
    data: dict = {}
    for key in QUERY_FIELDS:
        raw = params.get(key)
        if raw is None or not str(raw).strip() or len(str(raw)) > MAX_VALUE_CHARS:
            continue
        raw = str(raw).strip()
        value: object = raw
        if key == "activation_checkpointing":
            value = raw.lower() in ("on", "true", "1", "yes")
        try:
            TrainingSetup(**{key: value})
        except Exception:  # noqa: BLE001  (a malformed value in a hand-edited link: ignore that field)
            continue
        data[key] = TrainingSetup(**{key: value}).model_dump()[key]
    lang = "zh" if params.get("lang") == "zh" else "en"
    question = (params.get("q") or "").strip() or None
    return data, lang, question


def framework_from_query(params: dict[str, str]) -> str | None:
    """The run's framework from a query, when it is one whose defaults the answer applies."""
    return known_framework(params.get("framework"))
