"""The zh<->en domain glossary and query language detection that bridge the two languages.

Why it exists: the default embedding model (MiniLM) reads English only (most Chinese characters
become [UNK]), and the forum answers are in Chinese. So a Chinese query is *bridged* into English
for the dense path ("单卡显存不够" -> "per GPU GPU memory not enough"), and an English query gets the
Chinese terms added for BM25 over the original forum text ("activation checkpointing" -> 梯度检查点).
Pairs are ordered by what users type, not alphabetically; longer Chinese terms win over the
shorter ones they contain (梯度检查点 before 梯度).
"""

from __future__ import annotations

import re
from functools import lru_cache

from bot.core.language import CJK

# (Chinese term, English term). A Chinese term may appear more than once with different English
# renderings (all are used); an English term may map to several Chinese spellings.
GLOSSARY: tuple[tuple[str, str], ...] = (
    ("显存", "GPU memory"),
    ("内存", "memory"),
    ("爆显存", "out of memory OOM"),
    ("显存不够", "out of memory"),
    ("放不下", "does not fit"),
    ("装不下", "does not fit"),
    ("塞不下", "does not fit"),
    ("分片", "sharding shard"),
    ("切分", "sharding shard"),
    ("全分片", "full shard"),
    ("混合分片", "hybrid shard"),
    ("通信", "communication"),
    ("通信量", "communication volume"),
    ("通信开销", "communication overhead"),
    ("梯度检查点", "activation checkpointing"),
    ("激活检查点", "activation checkpointing"),
    ("重计算", "activation checkpointing recomputation"),
    ("激活值", "activations"),
    ("激活", "activations"),
    ("带宽", "bandwidth"),
    ("单卡", "per GPU single GPU"),
    ("每张卡", "per GPU"),
    ("每卡", "per GPU"),
    ("多卡", "multi GPU"),
    ("吞吐", "throughput"),
    ("吞吐量", "throughput"),
    ("卡", "GPU"),
    ("显卡", "GPU"),
    ("混合精度", "mixed precision"),
    ("半精度", "half precision fp16 bf16"),
    ("优化器", "optimizer"),
    ("优化器状态", "optimizer state"),
    ("梯度", "gradients"),
    ("参数", "parameters"),
    ("参数量", "parameter count"),
    ("节点", "node"),
    ("跨节点", "inter-node"),
    ("节点间", "inter-node"),
    ("机间", "inter-node"),
    ("单机", "single node"),
    ("多机", "multi-node"),
    ("互联", "interconnect"),
    ("网卡", "network NIC"),
    ("以太网", "Ethernet"),
    ("万兆", "10 Gbps Ethernet"),
    ("速度", "speed"),
    ("慢", "slower"),
    ("快", "faster"),
    ("训练", "training"),
    ("微调", "fine-tuning"),
    ("全参", "full fine-tuning"),
    ("全量", "full fine-tuning"),
    ("模型", "model"),
    ("数据并行", "data parallel"),
    ("分布式", "distributed"),
    ("卸载", "offload"),
    ("下放到CPU", "CPU offload"),
    ("预取", "prefetch"),
    ("桶", "bucket"),
    ("梯度累积", "gradient accumulation"),
    ("序列长度", "sequence length"),
    ("批大小", "batch size"),
    ("学习率", "learning rate"),
    ("权重", "weights"),
    ("副本", "replica"),
    ("完整模型", "full model replica"),
    ("聚合", "all-gather"),
    ("规约", "reduce-scatter all-reduce"),
    ("集合通信", "collective communication NCCL"),
    ("拓扑", "topology"),
    ("延迟", "latency"),
    ("论文", "paper"),
    ("版本", "version"),
    ("保存", "checkpoint save state dict"),
    ("状态字典", "state dict"),
    ("量化", "quantization"),
    # Inference/serving, model loading and convergence: the words of the real threads behind the
    # serving, loading and global-batch docs (doc-serving-large-models, doc-model-loading-host-ram, ...).
    ("张量并行", "tensor parallel"),
    ("推理", "inference"),
    ("部署", "serving"),
    ("加载", "loading"),
    ("主机内存", "host RAM"),
    ("收敛", "convergence"),
    ("低秩", "LoRA low-rank"),
    ("选", "choose"),
    ("怎么选", "which to choose"),
    ("省显存", "saves GPU memory"),
    ("哪个", "which"),
    ("多少", "how much"),
    ("够不够", "enough"),
    ("够", "enough"),
)

_LATIN_LETTER = re.compile(r"[A-Za-z]")


def detect_language(text: str) -> str:
    """``"zh"`` when the text has Chinese characters in any real proportion, else ``"en"``.

    Mixed queries ("A100 40G 跑7B") are Chinese: the Latin part is model and GPU names, which both
    paths handle; the Chinese part is what only BM25 can read.
    """
    cjk = len(CJK.findall(text))
    latin = len(_LATIN_LETTER.findall(text))
    if cjk == 0:
        return "en"
    # One stray character in a long English sentence does not make it Chinese.
    return "zh" if cjk >= 2 or latin <= 4 * cjk else "en"


@lru_cache(maxsize=1)
def _zh_pattern() -> re.Pattern[str]:
    terms = sorted({zh for zh, _ in GLOSSARY}, key=len, reverse=True)
    return re.compile("|".join(re.escape(t) for t in terms))


@lru_cache(maxsize=1)
def _en_patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    by_en: dict[str, list[str]] = {}
    for zh, en in GLOSSARY:
        by_en.setdefault(en.lower(), []).append(zh)
    # Match each English phrase as whole words; longest first so "GPU memory" beats "GPU".
    ordered = sorted(by_en.items(), key=lambda kv: len(kv[0]), reverse=True)
    return tuple(
        (re.compile(r"(?<![A-Za-z])" + re.escape(en) + r"(?![A-Za-z])", re.IGNORECASE), tuple(zhs))
        for en, zhs in ordered
    )


def _english_for(zh: str) -> list[str]:
    return [en for z, en in GLOSSARY if z == zh]


def to_english(text: str) -> str:
    """Bridge a (partly) Chinese query into English for the dense path.

    Glossary terms become their English renderings, Latin tokens (A100, 40G, FSDP) stay, and the
    remaining Chinese characters are dropped (they would only add [UNK] noise to the embedding).
    """
    bridged = _zh_pattern().sub(lambda m: " " + " ".join(_english_for(m.group(0))) + " ", text)
    bridged = CJK.sub(" ", bridged)
    # Keep "7B" and "40G" as tokens when they were glued to Chinese ("跑7B").
    return re.sub(r"\s+", " ", bridged).strip()


def chinese_terms(text: str) -> list[str]:
    """Chinese glossary terms for the English phrases in ``text`` (for BM25 over forum originals)."""
    found: list[str] = []
    remaining = text
    for pattern, zhs in _en_patterns():
        if pattern.search(remaining):
            found.extend(z for z in zhs if z not in found)
            remaining = pattern.sub(" ", remaining)  # "GPU memory" must not also count as "GPU"
    return found


def english_terms(text: str) -> list[str]:
    """English renderings of the Chinese glossary terms in ``text`` (longest match first)."""
    found: list[str] = []
    for match in _zh_pattern().finditer(text):
        for en in _english_for(match.group(0)):
            if en not in found:
                found.append(en)
    return found


def jieba_words() -> list[str]:
    """The glossary's Chinese terms, so jieba keeps them whole (梯度检查点, 混合精度, ...)."""
    return sorted({zh for zh, _ in GLOSSARY if len(zh) > 1})
