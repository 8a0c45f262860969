"""Question text (zh/en) -> TrainingSetup: rule-based, offline, never raises.

``parse_conversation(question, history)`` is what ``bot.ask`` calls: it parses every earlier user
turn and the new question, merges them (a follow-up such as "换成H100呢" replaces the GPU and
keeps the rest), and reports what the answer needs to know: the language, problems
(``bot.setup.check_setup``), missing fields, whether the question is on topic at all, whether it
carries instructions we refuse to follow, and notices (e.g. truncation).

The rules are plain regular expressions over the ways people write a setup in both languages
("8x A100 80GB", "单卡40G", "两台机器每台8张", "70亿参数", "IB 200Gb", "CPU内存512G").
Each ``_parse_*`` function handles one field family so a newcomer can find and extend a rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.catalog import UnknownNameError, list_gpus, lookup_gpu, lookup_model
from bot.setup import Problem, TrainingSetup, check_setup
from bot.understand import Intent, Observed, Provenance

MAX_CHARS = 8000  # longer inputs are truncated (with a notice): a setup never needs more

# Fields an answer cannot be computed without, in the order we ask about them.
ESSENTIAL = ("params_b", "gpu_memory_gb", "gpu_count")

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_EN_WORD = re.compile(r"[A-Za-z]{2,}")

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "俩": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9, "双": 2}
_EN_NUMBERS = {"one": 1, "single": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16, "thirty-two": 32,
               "sixty-four": 64}
# A count written as digits, a small Chinese numeral (两, 十六) or an English word (two, eight).
# A count is not glued to a name ("A100 GPUs" is not 100 GPUs); "x8" and "×8" are counts.
_COUNT = (r"(?<![A-WYZa-wyz0-9_.])(-?\d+|[零〇一二两俩三四五六七八九十双]{1,3}|"
          r"one|single|two|three|four|five|six|seven|eight|nine|ten|twelve|sixteen|thirty-two|sixty-four)")


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


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def detect_language(text: str) -> str:
    """"zh" when Chinese characters are at least as many as English words, else "en".

    One Chinese character carries about as much as one English word ("7B模型，8张A100，DDP还是FSDP"
    is Chinese; "is 显存 the same as VRAM?" is English); the eval harness uses the same rule.
    """
    cjk = len(_CJK.findall(text))
    words = len(_EN_WORD.findall(text))
    return "zh" if cjk > 0 and cjk >= words else "en"


def _to_int(token: str) -> int | None:
    """'8' -> 8, '两' -> 2, '十六' -> 16, 'eight' -> 8."""
    token = token.strip().lower()
    if re.fullmatch(r"-?\d+", token):
        return int(token)
    if token in _EN_NUMBERS:
        return _EN_NUMBERS[token]
    if not token or any(ch not in _CN_DIGITS and ch != "十" for ch in token):
        return None
    if "十" in token:  # 十 = 10, 十六 = 16, 三十二 = 32
        tens, _, ones = token.partition("十")
        return (_CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (_CN_DIGITS.get(ones, 0) if ones else 0)
    value = 0
    for ch in token:
        value = value * 10 + _CN_DIGITS[ch]
    return value


def _num(token: str) -> float:
    return float(token)


def _int_or_float(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


# --------------------------------------------------------------------------------------------
# Field rules
# --------------------------------------------------------------------------------------------

_MODEL_NAME = re.compile(
    r"(?<![A-Za-z0-9])("
    r"(?:meta[-_ ]?)?llama[-_ ]?(?:\d(?:\.\d)?)?[-_ ]*\d+(?:\.\d+)?\s?b"
    r"|qwen[-_ ]?(?:\d(?:\.\d)?)?[-_ ]*\d+(?:\.\d+)?\s?b(?:[-_ ]instruct)?"
    r"|mistral(?:[-_ ]*7b)?"
    r"|opt[-_ ]*\d+(?:\.\d+)?\s?b"
    r"|gpt[-_ ]?2(?:[-_ ]*(?:medium|large|xl))?"
    r")(?![A-Za-z0-9])", re.I)
_SIZE_B = re.compile(r"(?<![A-Za-z0-9_.])(-?\d+(?:\.\d+)?)\s*(?:b|bn|billion)(?![A-Za-z])", re.I)
_SIZE_M = re.compile(r"(?<![A-Za-z0-9_.])(\d+(?:\.\d+)?)\s*(?:m|million)\s*(?:params?|parameters?|参数|模型|model)",
                     re.I)
_SIZE_YI = re.compile(r"(-?\d+(?:\.\d+)?)\s*亿")  # 70亿 = 7B
_SIZE_WORD = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:万亿)")  # 1万亿 = 1000B


def _parse_model(text: str, out: dict, parsed: Parsed) -> None:
    name = _MODEL_NAME.search(text)
    if name:
        raw = name.group(1)
        try:
            spec = lookup_model(raw)
            out["model"] = spec.name
        except UnknownNameError:
            parsed.unknown_model = raw.strip()
    if "model" not in out:
        for pattern, scale in ((_SIZE_WORD, 1000.0), (_SIZE_YI, 0.1), (_SIZE_B, 1.0), (_SIZE_M, 0.001)):
            match = pattern.search(text)
            if match:
                out["params_b"] = round(_num(match.group(1)) * scale, 6)
                break
    elif name:
        # "Llama-2-7B (6.74B)" style restatements are fine; a second, different size is checked
        # by check_setup as a contradiction.
        rest = text[: name.start()] + " " + text[name.end():]
        match = _SIZE_YI.search(rest) or _SIZE_B.search(rest)
        if match:
            value = _num(match.group(1)) * (0.1 if "亿" in match.group(0) else 1.0)
            out["params_b"] = round(value, 6)


# GPU names the parser recognises in free text (the catalog's lookup resolves the full name).
_GPU_NAMES = r"a100|h100|h200|h800|a800|a10|v100|l40s|4090|3090"
_GPU_FAMILY = re.compile(
    r"(?<![A-WYZa-wyz0-9])((?:rtx\s*)?(?:" + _GPU_NAMES + r"))(?!\d)"
    r"(?:[-_ ]*(pcie|sxm\d?))?(?:[-_ ]*(\d+)\s*(?:gb|g|gib)\b)?(?:[-_ ]*(pcie|sxm\d?))?", re.I | re.A)
_MEM = re.compile(r"(-?\d+(?:\.\d+)?)\s*(tb|t|gib|gb|g)(?![A-Za-z])(?!\s*/\s*s)", re.I)
_RAM_CONTEXT = re.compile(r"(cpu|内存|host|主机|\bram\b|system memory|系统内存)", re.I | re.A)
_RAM_AFTER = re.compile(r"^\s*(?:of\s+)?(?:cpu\s*|host\s*|system\s*)?(?:ram|内存|memory on the host|主机内存)",
                        re.I)


def _after_link(after: str) -> str:
    """The text after a figure, minus a linking 的 ("200G的IB" speaks of the link, not memory)."""
    return after.strip().removeprefix("的").strip()


_NET_CONTEXT = re.compile(r"(\bib\b|infiniband|以太网|ethernet|roce|网络|网卡|带宽|inter-?node|节点间|互联|nic)",
                          re.I | re.A)


def _parse_gpu(text: str, out: dict) -> None:
    family = _GPU_FAMILY.search(text)
    family_memory: float | None = None  # "A100 40G": the size written with the GPU name
    stated_memory: float | None = None  # "单卡40G", "80GB each": a size on its own
    cpu_ram: float | None = None
    for match in _MEM.finditer(text):
        unit = match.group(2).lower()
        after = text[match.end(): match.end() + 12]
        if re.match(r"^\s*(?:bps|b/s|bit)", after, re.I):
            continue
        raw_unit = text[match.start(2): match.end(2)]
        before = text[max(0, match.start() - 14): match.start()]
        if raw_unit == "Gb":
            continue  # "200Gb" is a link speed
        value = _num(match.group(1)) * (1024 if unit in ("tb", "t") else 1)
        if _RAM_CONTEXT.search(before) and "显存" not in before[-6:] or _RAM_AFTER.match(after):
            cpu_ram = cpu_ram if cpu_ram is not None else value
            continue
        if _NET_CONTEXT.search(before[-8:]) or _NET_CONTEXT.match(_after_link(after)):
            continue
        if family and family.start() <= match.start() < family.end():
            family_memory = value
        elif stated_memory is None:
            stated_memory = value
    if cpu_ram is not None:
        out["cpu_ram_gb"] = _int_or_float(cpu_ram)
    memory = stated_memory if stated_memory is not None else family_memory
    if family:
        name, form1, size, form2 = family.groups()
        form = form1 or form2 or ""
        size = size or (f"{memory:g}" if memory is not None else "")
        gpu = None
        for candidate in (f"{name} {size}g {form}", f"{name} {form}", f"{name} {size}g", name):
            try:
                gpu = lookup_gpu(candidate.strip())
                break
            except UnknownNameError:
                continue
        if gpu is not None:
            out["gpu"] = gpu.name
            if memory is None and not memory_is_ambiguous(gpu.name):
                memory = gpu.memory_gb  # "H100" has one size; "A100" (40 or 80 GB) is asked about
    if memory is not None:
        out["gpu_memory_gb"] = _int_or_float(memory)


_NODES = [
    re.compile(_COUNT + r"\s*(?:台|个)?\s*(?:机器|节点|服务器|台|机)(?!内存)"),
    re.compile(_COUNT + r"[\s-]*(?:nodes?|machines?|servers?|hosts?)\b", re.I),
    re.compile(r"(?:across|over|on)\s+" + _COUNT + r"\s+(?:nodes?|machines?|servers?|hosts?)", re.I),
]
_PER_NODE = [
    re.compile(_COUNT + r"\s*(?:张)?\s*卡\s*(?:的)?\s*(?:服务器|机器|节点|主机)"),  # 两台8卡服务器
    re.compile(r"(?:每台|每个节点|每节点|每机|每台机器|单机|单节点)\s*(?:上)?\s*(?:有)?\s*" + _COUNT
               + r"\s*(?:张|块|个|卡|gpu|GPU|x)?"),
    re.compile(_COUNT + r"\s*(?:gpus?|cards?)\s*(?:per|each|/)\s*(?:node|machine|server|host)?", re.I),
    re.compile(r"(?:nodes?|machines?|servers?)\s*(?:x|×|\*|with)\s*" + _COUNT + r"\s*(?:gpus?|cards?)",
               re.I),
    re.compile(r"\b(?:per[- ]node|each node)\s*(?:has\s*)?" + _COUNT, re.I),
]
_GPU_COUNT = [
    re.compile(_COUNT + r"\s*(?:张|块|个)?\s*(?:卡|显卡|GPU|gpu)"),
    re.compile(_COUNT + r"\s*(?:张|块)"),  # 8张A100, 8块4090
    re.compile(_COUNT + r"\s*[x×*]\s*(?:rtx\s*)?(?:" + _GPU_NAMES + r"|gpus?)", re.I),
    re.compile(r"(?:" + _GPU_NAMES + r"|gpus?)(?:[-_ ]*(?:pcie|sxm\d?))?"
               r"(?:\s*\d+\s*g[b]?)?(?:[-_ ]*(?:pcie|sxm\d?))?\s*[x×*]\s*" + _COUNT + r"(?![\d.])", re.I),
    re.compile(r"(?<![A-Za-z0-9_.])(-?\d+|one|single|two|three|four|five|six|seven|eight|sixteen)\s+"
               r"(?:nvidia\s+)?(?:rtx\s*)?(?:" + _GPU_NAMES + r")", re.I),
    re.compile(_COUNT + r"[\s-]*(?:gpus?|cards?|devices?)\b", re.I),
    re.compile(r"(?:gpu_count|gpus|n_gpus|nproc_per_node)\s*[=:]\s*(-?\d+)", re.I),
]
_SINGLE_GPU = re.compile(r"(单卡\s*(?:训练|跑|上跑|微调|(?:rtx\s*)?(?:" + _GPU_NAMES + r"))|"
                         r"一张(?:卡|(?:rtx\s*)?(?:" + _GPU_NAMES + r"))|只有一张|"
                         r"single[- ](?:gpu|card|a100|h100|4090|3090)|one gpu|1 gpu\b|a single (?:gpu|card))", re.I)


def _first_count(patterns: list[re.Pattern], text: str) -> tuple[int | None, tuple[int, int] | None]:
    # A GPU's own number is never its count: "4 x 4090 GPUs" has 4 GPUs, not 4090.
    names = [m.span(1) for m in _GPU_FAMILY.finditer(text)]
    for pattern in patterns:
        for match in pattern.finditer(text):
            if any(start <= match.start(1) and match.end(1) <= end for start, end in names):
                continue
            value = _to_int(match.group(1))
            if value is not None:
                return value, match.span()
    return None, None


_NODES_BY_GPUS = re.compile(r"(?<![\d.])(\d+)\s*[x×*]\s*(\d{1,2})(?!\d)\s*(?:张|块)?\s*(?:rtx\s*)?"
                            r"(?:" + _GPU_NAMES + r"|gpus?|卡)", re.I | re.A)


def _parse_counts(text: str, out: dict) -> None:
    grid = _NODES_BY_GPUS.search(text)
    if grid:  # "2x8 H100": nodes x GPUs per node
        out["nodes"], out["gpus_per_node"] = int(grid.group(1)), int(grid.group(2))
        text = text[: grid.start()] + " " * (grid.end() - grid.start()) + text[grid.end():]
    nodes, node_span = _first_count(_NODES, text)
    per_node, per_span = _first_count(_PER_NODE, text)
    # Only count GPU totals outside the per-node phrase ("每台8张" is not 8 in total).
    masked = text
    if per_span:
        masked = text[: per_span[0]] + " " * (per_span[1] - per_span[0]) + text[per_span[1]:]
    count, count_span = _first_count(_GPU_COUNT, masked)
    # "2机16卡" / "2 nodes, 16 GPUs": total; "2 nodes x 8 GPUs": per node.
    if nodes is not None and count is not None and per_node is None and node_span and count_span:
        between = text[node_span[1]: count_span[0]]
        # "2 nodes of 8x H100", "2 nodes x 8 GPUs", "2 nodes, each with 8": per node
        if re.fullmatch(r"\s*(?:[x×*]|with|of|每台|each|,?\s*each with)?\s*", between, re.I) and \
                re.search(r"[x×*]|with|of|每台|each", between, re.I):
            per_node, count = count, None
        elif re.search(r"each|per node|每台", text[count_span[1]: count_span[1] + 12], re.I):
            per_node, count = count, None
    if count is None and _SINGLE_GPU.search(text) and nodes is None:
        count = 1
    if nodes is None and re.search(r"单机|单节点|单台|one node|single node|one machine|single machine", text, re.I):
        nodes = 1
    if nodes is not None:
        out["nodes"] = nodes
    if per_node is not None:
        out["gpus_per_node"] = per_node
    if count is not None:
        out["gpu_count"] = count


def _search(pattern: str, text: str) -> re.Match | None:
    # re.ASCII: Python counts CJK characters as word characters, so a plain \b never falls between
    # "IB" and "网络" or "用" and "bf16"; ASCII mode puts a boundary at every non-ASCII character.
    return re.search(pattern, text, re.ASCII)


def _parse_training(text: str, out: dict) -> None:
    low = text.lower()
    if _search(r"pure\s*bf16|纯\s*bf16|bf16\s*only|全\s*bf16", low):
        out["precision"] = "bf16"
    elif _search(r"\bbf16|bfloat16", low):
        out["precision"] = "bf16-mixed"
    elif _search(r"\bfp16|float16|半精度", low):
        out["precision"] = "fp16-mixed"
    elif _search(r"混合精度|mixed[- ]precision|\bamp\b|autocast", low):
        out["precision"] = "bf16-mixed"
    elif _search(r"\bfp32|float32|全精度|单精度|full precision", low):
        out["precision"] = "fp32"

    if _search(r"8[- ]?bit\s*adam|adam\s*8[- ]?bit|adam8bit|bnb", low):
        out["optimizer"] = "adam8bit"
    elif _search(r"adamw?\b|adamw", low):
        out["optimizer"] = "adamw"
    elif _search(r"\bsgd\b", low):
        out["optimizer"] = "sgd"

    if _search(r"q-?lora", low):
        out["finetune"] = "qlora"
    elif _search(r"(?<![a-z])lora", low) and not _search(r"(不用|不要|no|without|instead of)\s*lora", low):
        out["finetune"] = "lora"
    elif _search(r"全参|全量|full[- ]?(?:parameter|param)?[- ]?(?:fine[- ]?tun|finetun|ft\b|train)|"
                   r"预训练|pre-?train|from scratch|全参数", low):
        out["finetune"] = "full"
    rank = _search(r"(?:lora\s*)?(?:rank|\br)\s*[=:]?\s*(-?\d+)", low)
    if rank and out.get("finetune") in ("lora", "qlora"):
        out["lora_rank"] = int(rank.group(1))

    seq = _search(r"(?:seq(?:uence)?[_ -]?(?:len(?:gth)?)?|context(?: length)?|ctx|序列长度|序列|上下文(?:长度)?|"
                    r"max_length)\s*(?:of|is|=|:|为|是)?\s*(-?\d+(?:\.\d+)?)\s*(k)?(?![\d.])", low)
    if not seq:
        seq = _search(r"(-?\d+(?:\.\d+)?)\s*(k)?\s*(?:tokens?\s*)?(?:context|seq(?:uence)?|序列|上下文)", low)
    if seq:
        value = _num(seq.group(1)) * (1024 if seq.group(2) else 1)
        out["seq_len"] = int(value)

    batch = _search(r"(?:micro[-_ ]?batch(?:[-_ ]?size)?|mbs|per[-_ ]gpu[-_ ]batch(?:[-_ ]size)?|"
                      r"每卡\s*batch(?:\s*size)?|每卡批(?:大小)?|batch[-_ ]?size|\bbs|批大小|批量大小|batch)"
                      r"\s*(?:of|is|=|:|为|是|开到|设为|per gpu)?\s*(-?\d+)(?![\d.])", low)
    if batch and not _search(r"global[-_ ]?batch|全局\s*batch", low[max(0, batch.start() - 10): batch.end()]):
        out["micro_batch"] = int(batch.group(1))

    negated_ckpt = _search(r"(不开|不用|关闭|关掉|没开|no|without|disable[ds]?|off)\s*(?:the\s*)?"
                             r"(activation|gradient|梯度|激活|重计算|checkpoint|recompute)", low)
    if negated_ckpt:
        out["activation_checkpointing"] = False
    elif _search(r"checkpointing|梯度检查点|激活检查点|重计算|recompute|activation checkpoint|"
                   r"gradient checkpoint|grad(?:ient)?[ _-]?ckpt|\bac\b", low):
        out["activation_checkpointing"] = True


def _parse_links(text: str, out: dict) -> None:
    low = text.lower()
    if _search(r"nvlink|nvswitch", low):
        out["intra_node_link"] = "nvlink"
    elif _search(r"pcie|pci-e|no p2p|没有nvlink|无nvlink|without nvlink|no nvlink", low):
        out["intra_node_link"] = "pcie"
    if _search(r"infiniband|\bib\b|(?<![a-z])ib(?=\s*\d)|roce|rdma", low):
        out["inter_node_link"] = "infiniband"
    elif _search(r"以太网|ethernet|万兆|\btcp\b|\d+\s*gbe\b", low):
        out["inter_node_link"] = "ethernet"
    candidates = []
    for match in re.finditer(r"(-?\d+(?:\.\d+)?)\s*(gbps|gb/s|gbit/s|gbit|gbe|gb|g)(?![A-Za-z])", text, re.I):
        unit = match.group(2)
        before = text[max(0, match.start() - 10): match.start()]
        after = text[match.end(): match.end() + 12]
        is_speed = unit.lower() in ("gbps", "gbit/s", "gbit", "gbe") or unit == "Gb"
        if not is_speed and unit.lower() in ("g", "gb", "gb/s"):
            # "IB 200G", "200G InfiniBand": a bare G is a link speed only right next to a link word
            is_speed = bool(_NET_CONTEXT.search(before) or _NET_CONTEXT.match(_after_link(after)))
            # "A100 80G" is a card's memory: a GPU name right before the figure, or a memory word
            gpu_right_before = any(not before[m.end():].strip() and not m.group(3)
                                   for m in _GPU_FAMILY.finditer(before))
            if gpu_right_before or re.search(r"显存|memory|内存|ram", before + after, re.I):
                is_speed = False
        if is_speed:
            candidates.append(_num(match.group(1)))
    if "万兆" in text and not candidates:
        candidates.append(10.0)
    if not candidates:  # "IB 400", "IB NDR 400": a bare number right after the link word is its speed
        bare = _search(r"(?:infiniband|(?<![a-z])ib|roce|ethernet|以太网)\s*(?:ndr|hdr|edr)?\s*(\d{2,3})"
                       r"(?![\d.]|\s*(?:x|卡|张|台|gpus?|nodes?|cards?))", low)
        if bare:
            candidates.append(_num(bare.group(1)))
    if candidates:
        out["inter_node_gbps"] = _int_or_float(candidates[0])
        out.setdefault("inter_node_link", "ethernet" if candidates[0] < 100 else "infiniband")


# --------------------------------------------------------------------------------------------
# Topic, injection
# --------------------------------------------------------------------------------------------

_TOPIC = re.compile(
    r"ddp|fsdp|hsdp|zero|deepspeed|megatron|分布式|distributed|gpu|显卡|显存|\d\s*卡|单卡|多卡|训练|微调|"
    r"train|fine-?tun|finetun|shard|分片|memory|\boom\b|nccl|torchrun|lora|batch|parallel|并行|"
    r"checkpoint|a100|h100|h800|a800|4090|v100|l40s|h200|llama|qwen|mistral|模型|model|参数|param|"
    r"通信|communication|all-?reduce|all-?gather|节点|node|bf16|fp16|offload|卸载|pytorch|torch|"
    r"梯度|gradient|accumulat|累积|优化器|optimizer|精度|precision", re.I | re.A)
_INJECTION = re.compile(
    r"ignore\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|your)\s+(?:instructions?|prompts?|rules?)|"
    r"disregard\s+(?:all\s+|the\s+)?(?:previous|prior|above)|"
    r"system\s*prompt|developer\s*message|jailbreak|\bdan\b mode|"
    r"忽略(?:之前|以上|前面|上面|所有)?的?(?:所有)?(?:指令|指示|提示|规则|设定)|系统提示|提示词|"
    r"api[_ -]?key|secret|password|token\s*(?:value|=)|环境变量|env(?:ironment)?\s*var|\benv\b|"
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
    r"\s*[?？!！。.]*\s*", re.I)


# --------------------------------------------------------------------------------------------
# One turn, a conversation
# --------------------------------------------------------------------------------------------


def _clean(text: str) -> str:
    text = "".join(ch if ch.isprintable() or ch in "\n\t" else " " for ch in text)
    # Full-width digits/letters/punctuation -> ASCII so "８卡" or "Ａ１００" parse like "8卡".
    text = text.translate({code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)})
    return text.replace("\u3000", " ")


def parse_turn(text: str) -> tuple[dict, Parsed]:
    """The fields one message states (a dict of DESIGN field -> value) and its flags."""
    parsed = Parsed(setup=TrainingSetup(), language=detect_language(text))
    text = _clean(text)
    out: dict = {}
    _parse_model(text, out, parsed)
    _parse_gpu(text, out)
    _parse_counts(text, out)
    _parse_training(text, out)
    _parse_links(text, out)
    parsed.injection = _is_injection(text)
    parsed.on_topic = bool(out) or bool(_TOPIC.search(text))
    return out, parsed


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
    family = gpu_name.split()[0].lower()
    sizes = {g.memory_gb for g in list_gpus() if g.name.split()[0].lower() == family}
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


def parse_conversation(question: str, history=None) -> Parsed:
    """Parse the new question in the context of the earlier user turns. Never raises."""
    question = question if isinstance(question, str) else str(question or "")
    notices: list[str] = []
    if len(question) > MAX_CHARS:
        question = question[:MAX_CHARS]
        notices.append("truncated")
    fields: dict = {}
    any_topic = False
    unknown_model = None
    for turn in user_turns(history):
        turn_fields, flags = parse_turn(turn[:MAX_CHARS])
        fields = merge_fields(fields, turn_fields)
        any_topic = any_topic or flags.on_topic
        unknown_model = flags.unknown_model or unknown_model
    turn_fields, flags = parse_turn(question)
    fields = merge_fields(fields, turn_fields)
    unknown_model = flags.unknown_model or unknown_model
    language = detect_language(question) if question.strip() else "en"
    if question.strip() == "" and history:
        earlier = " ".join(user_turns(history))
        language = detect_language(earlier)

    # The question must be on topic by itself (a setup field, a topic word), or be a bare "why?"
    # about an on-topic conversation; an injection never rides on the earlier turns.
    follow_up = any_topic and not flags.injection and bool(_BARE_FOLLOW_UP.fullmatch(_clean(question)))
    setup = _build_setup(fields)
    parsed = Parsed(
        setup=setup, language=language, problems=check_setup(setup), missing=_missing(fields),
        notices=notices, on_topic=flags.on_topic or follow_up,
        injection=flags.injection, empty=not question.strip() and not user_turns(history),
        unknown_model=unknown_model,
    )
    if parsed.empty:
        parsed.on_topic = False
    elif any_topic and not parsed.on_topic:
        parsed.notices.append("earlier_setup_kept")  # the reply points back to the conversation
    return parsed


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
