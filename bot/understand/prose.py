"""Setup facts written as prose, in Chinese or English: "8x A100 80GB", "单卡40G", "两台机器每台8张",
"70亿参数", "IB 200Gb", "CPU内存512G", "without nvlink", "full fp32 (no amp)".

``read_prose(work)`` reads a text in which logs and configs were already consumed (blanked) and
card/model names were replaced by marker runs (``Ǥ`` for a card, ``Ḿ`` for a model) so that a
name's digits are never read as a count or a size ("4 x 4090 GPUs" is 4 GPUs, "A100-40G" is
never -40). Each rule returns the field value and the exact text it read it from. A figure's role
comes from the words around it, not its unit: "一共128G" is a total, "每张卡只占用了13G" is what
a run used, "需要1200g显存" is a requirement, "剩余22G" is free memory; only a size that names the
card becomes ``gpu_memory_gb``; a size in a clause about the machine's memory ("my server has 256GB
of memory", "电脑64G内存") is the host's (``cpu_ram_gb``). A per-card phrase ("单张卡只有16G") on a
run over several cards is the card's size, never a count of one.

The training options (precision, method, optimizer, ...) are read by ``bot.understand.training_prose``;
``ProseReading`` and the rules' two primitives live in ``bot.understand.prose_reading``.
The count tokens every rule shares live in ``bot.understand.counts``; which run failed and which
worked (by GPU count or by method) in ``bot.understand.run_roles``; which count figures are not the
run's count (an index, a baseline, a count restated later, ...) in ``bot.understand.count_mentions``.
"""

from __future__ import annotations

import re

from bot.understand.count_mentions import rest_and_one, restated_count, settle_counts, subset_count
from bot.understand.counts import COUNT, GPU, MODEL, G, to_int
from bot.understand.prose_reading import ProseReading
from bot.understand.prose_reading import search as _search
from bot.understand.prose_reading import set_field as _set
from bot.understand.run_roles import count_roles, grid_roles, one_gpu_symptom
from bot.understand.text import NUM
from bot.understand.training_prose import read_training

# --------------------------------------------------------------------------------------------
# Model size
# --------------------------------------------------------------------------------------------

# a size glued to the family name after it is a size too ("lora微调72Bqwen", Qwen#708)
_SIZE_B = re.compile(NUM + r"\s*(?:b|bn|billion)(?:(?![A-Za-z])|(?=(?:qwen|llama|baichuan|chatglm|glm|mistral|mixtral|"
                     r"internlm|deepseek|gemma|yi(?![a-z])|falcon|bloom)))", re.I | re.A)
_SIZE_M = re.compile(r"(?<![A-Za-z0-9_.ǤḾ])(\d+(?:\.\d+)?)\s*(?:m|million)\s*(?:total\s+)?(?:params?|parameters?|参数|模型|model)", re.I | re.A)
_SIZE_YI = re.compile(NUM + r"\s*亿(?:参数|个参数)?")
_SIZE_WANYI = re.compile(NUM + r"\s*万亿")


_SIZE_TARGET = re.compile(r"(?:压缩到|压缩成|裁剪到|剪枝到|缩小到|减少到|缩减到|蒸馏到|pruned (?:it )?(?:down )?to|"
                          r"compress(?:ed)? (?:it )?(?:down )?to|distill(?:ed)? (?:it )?(?:down )?to|shrunk (?:it )?to)\s*"
                          + NUM + r"\s*(?:b|bn|billion)(?![A-Za-z])", re.I | re.A)


# "7b/8b/9b", "7B or 32B", "7B、32B", "7B, 32B LLMs", "either 13B or 34B": sizes listed together are
# alternatives (the largest is computed and the answer says so), never a contradiction; only a size
# that carries its own noun again ("7B model, 70B model") is one (``_two_sizes``)
_MORE_SIZES = re.compile(r"(?:\s*(?:/|\bor\b|或者?|还是|、|,|，|,?\s*\band\b|和|与|及)\s*" + NUM + r"\s*(?:b|bn|billion)(?![a-z]))+",
                         re.I | re.A)


# Only separators (and the word "model") between two readings: nothing says which one is meant
_BARE_GAP = re.compile(r"[\s,，、;；]*(?:(?:model|模型|的模型|params|parameters|参数)[\s,，、;；]*)?", re.I | re.A)


def _two_sizes(text: str, first: re.Match, out: ProseReading) -> None:
    """"7B model, 70B model": a second, different size right after the first is a contradiction."""
    nxt = _SIZE_B.search(text, first.end())
    if nxt and float(nxt.group(1)) != float(first.group(1)) and _BARE_GAP.fullmatch(text[first.end(): nxt.start()]):
        out.contradictions.append(("params_b", (float(first.group(1)), float(nxt.group(1))),
                                   (first.group(0).strip(), nxt.group(0).strip())))


def read_size(text: str, out: ProseReading) -> None:
    if m := _SIZE_TARGET.search(text):
        _set(out, "params_b", float(m.group(1)), m.group(0))
        return
    for pattern, scale in ((_SIZE_WANYI, 1000.0), (_SIZE_YI, 0.1), (_SIZE_B, 1.0), (_SIZE_M, 0.001)):
        m = pattern.search(text)
        if m:
            value, span = float(m.group(1)), m.group(0)
            if pattern is _SIZE_B and (more := _MORE_SIZES.match(text, m.end())):
                # "7b/8b/9b 这个量级" (LlamaFactory#4199): sizes asked about together; the largest is
                # computed (the smaller need less) and the answer says so
                value = max(value, *(float(x) for x in re.findall(NUM, more.group(0))))
                span, out.larger_of_sizes = span + more.group(0), True
            _set(out, "params_b", round(value * scale, 6), span)
            if pattern is _SIZE_B and not out.larger_of_sizes:
                _two_sizes(text, m, out)
            return


# --------------------------------------------------------------------------------------------
# Memory figures and their roles
# --------------------------------------------------------------------------------------------

_MEM = re.compile(NUM + r"\s*(tb|t|gib|gb|g)(?![A-Za-z])(?!\s*/\s*s)", re.I | re.A)
_RAM_BEFORE = re.compile(r"(cpu|内存|host|主机|\bram\b|dram|system memory|系统内存|\bmem\b)", re.I | re.A)
_RAM_AFTER = re.compile(r"^\s*(?:of\s+)?(?:(?:cpu|host|system)\s*(?:ram|memory|mem)\b|ram|dram|内存|memory on the host|主机内存)",
                        re.I | re.A)
_RAM_LINE = re.compile(r"^\s*[-*]?\s*(?:cpu|ram|host|host memory|system memory|内存|主机内存|系统内存)\s*[:：]", re.I | re.A)
_CARD_WITH = re.compile(G + r"\s*(?:with|[,(（])?\s*$", re.I | re.A)
_NET = re.compile(r"(\bib\b|infiniband|以太网|ethernet|roce|网络|网卡|带宽|inter-?node|节点间|互联|\bnic\b)", re.I | re.A)
_TOTAL_BEFORE = re.compile(r"(一共|总共|合计|总计|共计|共|总显存|total(?: of)?|in total|altogether|combined)\s*(?:有|是|为|约)?\s*$",
                           re.I | re.A)
_TOTAL_AFTER = re.compile(r"^\s*(?:显存)?\s*(?:total|in total|总|combined|altogether|总显存)", re.I | re.A)
_USED_BEFORE = re.compile(r"(占用|只占|用了|使用了|占了|loaded up to|uses?|using|used|consum\w*|occup\w*|shows?|allocated|reserved|"
                          r"mem(?:ory)?[_ ]usage|usage|peak(?:[_ ]mem\w*)?|"
                          r"peaks? at|went up to|升到|涨到|达到|占)\s*[:=：]?\s*(?:了|约|大约|到|about|around|~|at)?\s*$", re.I | re.A)
_NEED_BEFORE = re.compile(r"(?:(?:需要|要|至少|理论|预计|估计|降到|降低到|减少到|少于|低于|不超过|不是|就够|够|"
                          r"使用显存为|模型使用|剩余)[^\d\n]{0,5}|(?:剩余|free|available|可用)[^\d\n]{0,10}|"
                          r"(?:need\w*|requir\w*|takes?|would take|expect\w*|reduce\w*|under|below|less than|only(?!\s+(?:have|has|got|own))|"
                          r"just a|with just)[^\d\n]{0,20})$", re.I | re.A)
# a size right after words that name the card ("单卡40G", "每张24G", "each with 48GB") is the card's
_CARD_NEAR = re.compile(r"(单卡|每张卡?|每卡|每块|单张|each(?: with)?|per card|per gpu|(?<!使用)显存[:：]?|vram[:：]?)\s*(?:是|为|有|都是)?\s*$",
                        re.I | re.A)
_EST_BEFORE = re.compile(r"(estimat\w*|estimator\w*|估算)[^\n]{0,30}$", re.I | re.A)
_CARD_BEFORE = re.compile(r"(单卡|每张卡?|每卡|每块|each|per card|per gpu|" + G + r"|卡|显卡|gpu|显存|vram|memory)"
                          r"\s*[:：(（]?\s*(?:是|为|有|都是)?\s*$", re.I | re.A)
# Spare or free memory ("有20GB的显存是盈余的", "显存还剩 10G", "12GB spare on each card", "空闲 8G"):
# what a run leaves unused, never the card's size
_FREE_BEFORE = re.compile(r"(?:还剩|剩下|剩余|只剩|空闲|盈余|富余|多出|spare|free|available|headroom|left over)\s*(?:了|有|约|大约|about|around|~)?\s*$",
                          re.I | re.A)
_FREE_AFTER = re.compile(r"^\s*(?:的)?\s*(?:显存)?\s*(?:是|都是|还是)?\s*(?:的)?\s*(?:盈余|富余|空闲|剩余|空着|没用上|没用到|"
                         r"free|spare|left|unused|available|remaining|(?:of )?headroom)", re.I | re.A)
# Host RAM written as plain "memory" of the machine: "my machine has 64g of memory", "the server has
# 256GB RAM", "服务器的内存是128G", "电脑64G内存" (first-contact batch e). The clause names the machine
# and a memory word, and nothing in it names a card (a GPU, 显存, VRAM, a card name).
_HOST_NOUN = re.compile(r"\b(?:machines?|servers?|hosts?|system|computers?|box|workstations?|nodes?|pc|laptop|desktop)\b|"
                        r"主机|服务器|机器|电脑|工作站|系统|节点", re.I | re.A)
_HOST_MEMORY_WORD = re.compile(r"\b(?:memory|mem|ram)\b|内存", re.I | re.A)
_CARD_WORD = re.compile(r"gpus?|显存|vram|cuda|cards?|显卡|卡|hbm|device|" + G, re.I | re.A)
_CLAUSE_EDGE = re.compile(r"[,，;；。!?！？\n(（)）]|(?<!\d)\.(?!\d)|\bbut\b|\band\b|\bwhile\b|但是?|而且?|另外", re.I | re.A)


def host_memory_clause(text: str, start: int, end: int) -> bool:
    """The memory figure at ``text[start:end]`` is in a clause about the machine's memory, not a card's."""
    edges = list(_CLAUSE_EDGE.finditer(text))
    left = max((e.end() for e in edges if e.end() <= start), default=0)
    right = min((e.start() for e in edges if e.start() >= end), default=len(text))
    clause = text[left:right]
    return bool(_HOST_NOUN.search(clause) and _HOST_MEMORY_WORD.search(clause) and not _CARD_WORD.search(clause))


# Largest single card in any catalog (MI300X/MI325X class); a figure beyond is a total or RAM.
MAX_CARD_GB = 300


def _memory_span(text: str, start: int, end: int) -> str:
    """A memory figure with a few words before it for the read-back ("显存80G"), cut at a separator,
    a name or another figure so the quote never carries a neighbour's digits ("batch_size为1，744G")."""
    prefix = text[max(0, start - 6): start]
    cut = max((prefix.rfind(ch) for ch in ",，;；。:：()（）" + GPU + MODEL), default=-1)
    prefix = prefix[cut + 1:]
    digit = max((i for i, ch in enumerate(prefix) if ch.isdigit()), default=-1)
    return (prefix[digit + 1:] + text[start:end]).strip()


# "40GB or 80GB A100", "A100 40G还是80G", "40G 或者 80G 都可以": card sizes offered as alternatives
_MEMORY_ALTERNATIVES = re.compile(r"(?<![\d.])(\d{1,3})\s*(?:gb|g)(?![a-z])[^,，。;；\n\d]{0,24}?(?:\bor\b|或者?|还是|/)"
                                  r"[^,，。;；\n]{0,24}?(?<![\d.])(\d{1,3})\s*(?:gb|g)(?![a-z])(?!\s*/\s*s|ps)", re.I | re.A)


def memory_alternatives(text: str) -> tuple[list[int], str] | None:
    """Two card sizes offered as alternatives ("40GB or 80GB A100"): (sizes, span), else None."""
    from bot.understand.logs import card_size_gb

    for m in _MEMORY_ALTERNATIVES.finditer(text):
        sizes = sorted({int(m.group(1)), int(m.group(2))})
        if len(sizes) == 2 and all(card_size_gb(float(v)) == float(v) for v in sizes) and \
                not _NET.search(text[m.end(): m.end() + 12]):
            return sizes, m.group(0)
    return None


def read_memory(text: str, out: ProseReading) -> None:
    card: tuple[float, str] | None = None
    plain: re.Match | None = None  # the figure that became the card with no word naming its role
    for m in _MEM.finditer(text):
        raw_unit = text[m.start(2): m.end(2)]
        after = text[m.end(): m.end() + 14]
        if raw_unit == "Gb" and not re.match(r"^\s*(?:of\s+)?(?:vram|显存|gpu memory|memory)", after, re.I | re.A) \
                and not _CARD_WITH.search(text[max(0, m.start() - 12): m.start()]):
            continue  # "200Gb" is a link speed ("24Gb VRAM" is not)
        unit = raw_unit.lower()
        if re.match(r"^\s*(?:bps|b/s|bit)", after, re.I | re.A):
            continue
        value = float(m.group(1)) * (1024 if unit in ("tb", "t") else 1)
        before = text[max(0, m.start() - 30): m.start()]
        span = _memory_span(text, m.start(), m.end())
        # used/capacity pairs: "14g/80g"
        pair = re.match(r"^\s*/\s*(\d+(?:\.\d+)?)\s*(?:gib|gb|g)\b", after, re.I | re.A)
        if pair:
            out.observed.setdefault("used_per_gpu_gib", value)
            cap = float(pair.group(1))
            if card is None and cap <= MAX_CARD_GB:
                card = (cap, text[m.start(): m.end() + pair.end()])
            continue
        if re.match(r"^\s*(?:/\s*)?(?:each|per gpu|per card)?\s*(?:memory )?in use", after, re.I | re.A):
            out.observed.setdefault("used_per_gpu_gib", value)
            continue
        if _FREE_BEFORE.search(before[-12:]) or _FREE_AFTER.match(after):
            out.observed.setdefault("free_gib", value)
            continue
        if _CARD_NEAR.search(before[-8:]):
            if card is None:
                card = (value, span)  # "每张显存5000G" is the user's per-card figure: checked, not dropped
                out.card_explicit = True
            continue
        if _USED_BEFORE.search(before[-22:]) or re.search(r"(占用|只占用)[^\d\n]{0,8}$", before):
            out.observed.setdefault("used_per_gpu_gib", value)
            out.notes.append(("used_not_capacity", {"gib": value, "span": span}))
            continue
        if _EST_BEFORE.search(before):
            out.observed.setdefault("estimate_gib", value)
            continue
        if _NEED_BEFORE.search(before[-26:]):
            continue
        line = text[text.rfind("\n", 0, m.start()) + 1: m.start()]
        if (_RAM_BEFORE.search(before[-12:]) and "显存" not in before[-6:]) or _RAM_AFTER.match(after) or \
                host_memory_clause(text, m.start(), m.end()) or (
                # a line labelled "CPU:"/"RAM:"/"内存：" ("CPU: Xeon E5-2630 v2 but limited to 16GB")
                _RAM_LINE.match(line) and not re.search(r"gpu|显存|vram|卡|" + G, line + after[:8], re.I | re.A)) or (
                # "1T memory", "1TB of memory": more than any card holds, so the host's
                value > MAX_CARD_GB and re.match(r"^\s*(?:of\s+)?(?:memory|mem)\b", after, re.I | re.A)):
            _set(out, "cpu_ram_gb", int(value) if value.is_integer() else value, span)
            continue
        if _TOTAL_BEFORE.search(before[-14:]) or _TOTAL_AFTER.match(after):
            if out.total_memory_gb is None:
                out.total_memory_gb, out.total_span = value, span
            continue
        if _NET.search(before[-8:]) or _NET.match(after.strip().removeprefix("的").strip()):
            continue
        if re.match(r"^\s*(?:的)?\s*(?:ib|infiniband|roce|网络|以太网|ethernet|网卡)", after, re.I | re.A):
            continue
        if value > MAX_CARD_GB and not (_CARD_BEFORE.search(before)
                                        or re.match(r"^\s*(?:per gpu|per card|each)", after, re.I | re.A)):
            continue  # "560g", "1280g显存": a total or a requirement, never one card
        if card is None:
            card = (value, span)
            plain = m
        elif plain is not None and value != card[0] and _BARE_GAP.fullmatch(text[plain.end(): m.start()]):
            # "40GB 80GB": two card sizes side by side, nothing says which
            out.contradictions.append(("gpu_memory_gb", (card[0], value), (card[1], span)))
            plain = None
    if card is not None:
        v = card[0]
        _set(out, "gpu_memory_gb", int(v) if float(v).is_integer() else v, card[1])


# --------------------------------------------------------------------------------------------
# Counts: GPUs, nodes, GPUs per node
# --------------------------------------------------------------------------------------------

_NODE_WORD = r"(?:台|个)?\s*(?:(?:[Dd][Gg][Xx]|[Hh][Gg][Xx])\s*)?(?:机器|节点|服务器|台|机(?!器)|主机|电脑|工作站)(?!内存)"
# What people call a node: "two servers", "2 boxes", "three workstations", "4 computers" (first-contact e)
_NODE_NOUN = r"(?:nodes?|machines?|servers?|hosts?|boxes|box|workstations?|computers?|rigs?)"
_NODE_PLURAL = r"(?:nodes|machines|servers|hosts|boxes|workstations|computers|rigs)"
_NODE_SINGULAR = r"(?:node|machine|server|host|box|workstation|computer|rig)"
_NODES = [
    re.compile(COUNT + r"\s*" + _NODE_WORD),
    # (never after a multiplier: "a 49GB*4 machine" is one machine of four cards)
    re.compile(r"(?<![*x×])(?<![*x×]\s)" + COUNT + r"[\s-]*(?:(?:identical|separate|different|physical|worker|compute|similar)\s+)?"
               + _NODE_NOUN + r"\b", re.I | re.A),
    # "2 GPU nodes" are two nodes; "a 4-GPU machine", "8-GPU nodes" count the GPUs of each (_PER_NODE)
    re.compile(r"(?<![*x×])(?<![*x×]\s)" + COUNT + r"\s+gpu\s+" + _NODE_PLURAL + r"\b", re.I | re.A),
    # "two 8-GPU nodes", "3 8 GPU servers": the machines, then the GPUs of each
    re.compile(COUNT + r"\s+(?=\d+[-\s]?gpus?[-\s]+" + _NODE_PLURAL + r"\b)", re.I | re.A),
    re.compile(r"(?:across|over|on|with)\s+" + COUNT + r"\s+" + _NODE_NOUN, re.I | re.A),
    # "two modes, and every mode has two gpus": a node miswritten, read as one where each of them holds GPUs
    re.compile(COUNT + r"\s+modes?\b(?=[^.。\n]{0,40}?\b(?:each|every|per)\s+mode\s+(?:has|have|with|contains)\s+\S+\s+(?:gpus?|cards?))",
               re.I | re.A),
    re.compile(r"(双)(?:机|节点)"),
    # "two A100 nodes", "4 H100 machines with 8 GPUs each" (stanford_alpaca#200); in the singular ("on 8
    # A800-80G machine", "an 8 H100 node") the count is the cards of one machine (``_GPU_COUNT``)
    re.compile(COUNT + r"\s*(?:nvidia\s+)?" + G + r"\s*(?:(?:dgx|hgx)\s*)?(?:nodes|machines|servers|hosts|boxes)\b", re.I | re.A),
]
# one machine named with its GPUs: "a 4-GPU machine", "our 8 GPU node", "this 8-GPU server"
_ONE_MACHINE_OF_GPUS = re.compile(r"\b(?:an?|one|our|my|the|this|that|single)\s+" + COUNT + r"[-\s]?gpus?[-\s]+"
                                  + _NODE_SINGULAR + r"\b", re.I | re.A)
_PER_NODE = [
    # "a 4-GPU machine", "our 8 GPU node", "two 8-GPU servers": the GPUs of each machine ("2 GPU nodes",
    # unhyphenated and plural, are two nodes: _NODES)
    re.compile(COUNT + r"-gpus?[-\s]+" + _NODE_NOUN + r"\b", re.I | re.A),
    re.compile(COUNT + r"\s?gpus?\s+" + _NODE_SINGULAR + r"\b", re.I | re.A),
    re.compile(COUNT + r"\s*(?:张)?\s*卡\s*(?:的)?\s*(?:服务器|机器|节点|主机|机)(?!内存)"),
    re.compile(r"(?:每台机器|每台|每个节点|每节点|每机|每个机器|单机|单节点)\s*(?:上)?\s*(?:有)?\s*" + COUNT
               + r"\s*(?:张|块|个|卡|gpu|GPU|x|" + G + ")"),
    re.compile(COUNT + r"\s*(?:gpus?|cards?)\s*(?:per|each|/)\s*(?:node|machine|server|host)", re.I | re.A),
    re.compile(r"(?:nodes?|machines?|servers?)\s*(?:x|×|\*|with|of|each with)\s*" + COUNT + r"\s*(?:x\s*)?(?:gpus?|cards?|"
               + G + r"|\d+\s*gb?\s*" + G + ")", re.I | re.A),
    re.compile(r"\b(?:per[- ]node|each node|each)\s*(?:has\s*)?" + COUNT + r"\s*(?:x\s*)?(?:gpus?|" + G + ")", re.I | re.A),
    # "every box has 4 gpus", "each of the servers has two GPUs", "per machine: 8 cards", "each mode has 2 gpus"
    re.compile(r"\b(?:(?:each|every|per)\s+(?:of\s+(?:the|our|my)\s+)?(?:" + _NODE_NOUN[3:-1] + r"|modes?)|"
               r"each\s+(?:one\s+)?of\s+(?:them|those|these))\s*"
               r"(?:has|have|with|having|contains|holds|carries|gets|:)?\s*(?:got\s+)?" + COUNT
               + r"\s*(?:x\s*)?(?:nvidia\s+)?(?:gpus?\b|cards?\b|" + G + ")", re.I | re.A),
    # "每个服务器上2块GPU", "每台电脑有4张卡", "每个工作站装了两张4090"
    re.compile(r"每(?:台|个)?\s*(?:机器|服务器|节点|主机|电脑|工作站)\s*(?:上)?\s*(?:都)?\s*(?:有|是|配|装)?(?:了)?\s*" + COUNT
               + r"\s*(?:张|块|个)?\s*(?:卡|显卡|gpu|GPU|" + G + ")"),
    # "两台电脑各两张卡", "两台机器各有4块A100"
    re.compile(r"各\s*(?:有|配|装|插)?(?:了)?\s*" + COUNT + r"\s*(?:张|块|个)?\s*(?:卡|显卡|gpu|GPU|" + G + ")"),
    re.compile(r"\(\s*(?:每个节点|每节点|每台)\s*" + COUNT + r"\s*卡"),
    re.compile(r"(?<=台)\s*" + COUNT + r"\s*(?:张|块)?\s*(?:卡|" + G + ")"),  # "2台8卡A800": 8 per machine
    # "两台机器各一张3090", "每台单卡4090", "每个节点一块A100": one card on each machine
    re.compile(r"(?:各|每台(?:机器|服务器|主机|电脑)?|每个?节点|每机)\s*(?:上)?\s*(?:有|都是|是|配)?\s*(单|一)\s*(?:张|块|个)?\s*(?:卡|显卡|" + G + ")"),
]
_NOT_NODES = r"(?!" + GPU + r"|s?\s*(?:(?:dgx|hgx)\s*)?(?:nodes|machines|servers|hosts|boxes)\b|\s*(?:节点|服务器|机器))"
_GPU_COUNT = [
    re.compile(COUNT + r"\s*(?:张|块|个|枚)?\s*(?:卡|显卡|GPU|gpu|NPU|npu)"),
    re.compile(COUNT + r"\s*(?:张|块)"),
    re.compile(COUNT + r"\s*[x×*]\s*[（(]?\s*(?:\d+\s*gi?b?\s*)?(?:nvidia\s+)?" + G, re.I | re.A),  # "8*(v100 32G)"
    re.compile(G + r"\s*(?:[（(]\s*\d+\s*gi?b?\s*[)）])?\s*[x×*]\s*" + COUNT, re.I | re.A),
    # "two A100 nodes" counts nodes, not GPUs (stanford_alpaca#200)
    re.compile(COUNT + r"\s*(?:nvidia\s+)?(?:\d{1,3}\s*gi?b?\s+)?" + G + _NOT_NODES, re.I | re.A),
    re.compile(COUNT + r"\s*个[^，,。\n]{0,12}?" + G),
    re.compile(COUNT + r"[\s-]*(?:(?:nvidia|amd|ascend|huawei)\s+)?(?:gpus?|cards?|devices?|npus?|accelerators?)\b", re.I | re.A),
    re.compile(COUNT + r"\s*" + G + r"s\b"),
    # the card's size between the count and the card word: "four 80GB GPUs", "两个24G显卡", "two 48 GB cards"
    re.compile(COUNT + r"\s*(?:个|张|块)?\s*\d{1,3}(?:\.\d)?\s*(?:gib|gb|g)\s*(?:的)?\s*(?:显卡|卡|gpus?\b|cards?\b|devices?\b)",
               re.I | re.A),
    re.compile(COUNT + r"\s+of\s+(?:them|those|these)\b", re.I | re.A),  # "my A100 ... on 8 of them"
    re.compile(r"(?:number of gpus?|gpu number|gpu count|num(?:ber)? of cards?|gpu数量|显卡数量|卡数)\s*[:：=]\s*(\d{1,6})", re.I | re.A),
]
_SINGLE_GPU = re.compile(r"(单卡|单张|单块|单个|一张卡|一块卡|一张" + G + r"|一块" + G + r"|只有一张|"
                         r"single[- ](?:gpu|card|" + G + r")|one gpu|1 gpu\b|a single (?:gpu|card|" + G + r")|"
                         r"one (?:single )?" + G + r"|on an? " + G + r"(?!\s*[x×*s]))", re.I | re.A)
_PER_NODE_CUE = re.compile(r"(?:each|per|every)\s+(?:node|machine|server|host|box)\s*(?:is|has|with|:|=)?\s*[(（]?\s*$|"
                           # "three nodes, each equipped with 8x H100": the count after a node count is per node
                           r"(?:nodes?|machines?|servers?|hosts?|boxes)\s*,?\s*(?:and\s+)?each\s+(?:one\s+)?(?:equipped\s+|fitted\s+|outfitted\s+)?(?:with|has|having)\s*$|"
                           r"(?:每台(?:机器)?|每个?节点|每机)\s*[:：]?\s*[(（]?\s*$", re.I | re.A)
# "和单卡训练时一致", "单卡和多卡内存消耗几乎一样": one GPU as the comparison, not the setup (LlamaFactory#350, #5972)
# one card said as a count of its own, right beside another count with only a comma between
_LONE_SINGLE = re.compile(r"(?:单卡|单张卡?|一张卡|a single (?:gpu|card)|one (?:gpu|card))\s*[,，、;；]\s*(?=[^,，。;；\n]{0,6}?\d)",
                          re.I | re.A)
_LIKE_ONE_GPU = re.compile(r"(?:和|跟|与|同)(?:单卡|单张)[^，,。；;\n]{0,12}?(?:一样|一致|相同|差不多|相当|相比)|"
                           r"(?:单卡|单张)(?:和|跟|与)多卡")
# "16*80G", "40GB × 8 cards", "48G *4", "A800*8张卡*80G": count x card size, either order
# (never a link: "8x 400Gb/s", "8x400G IB" are a node's NICs, bits per second)
_LINK_AFTER = r"(?!\s*/\s*s|ps|it\b|\s*(?:ib|infiniband|roce|rdma|nics?|网卡|ethernet|以太网|网络)\b)"
_COUNT_BY_MEM = re.compile(r"(?<![A-Za-z0-9_.ǤḾ])(\d{1,4})\s*[x×*]\s*(\d{1,3})\s*(?:gb|g)(?![a-z])" + _LINK_AFTER, re.I | re.A)
_MEM_BY_COUNT = re.compile(r"(?<![A-Za-z0-9_.ǤḾ])(\d{1,3})\s*(?:gib|gb|g)" + _LINK_AFTER + r"\s*[)）]?\s*[x×*]\s*(\d{1,4})(?![\d.])",
                           re.I | re.A)
_NODES_BY_GPUS = re.compile(r"(?<![\d.])(\d+)\s*[x×*]\s*(\d{1,2})(?!\d)\s*(?:[x×*]\s*)?(?:张|块)?\s*(?:rtx\s*)?(?:" + G + r"|gpus?|卡)",
                            re.I | re.A)


# Machines x GPUs each, in any of the ways people write it: "4 nodes x 8 GPUs", "4 H100 nodes (8 GPUs each)",
# "2 DGX nodes with 8 GPUs each", "4机x8卡", "4台服务器(每台8卡)"; after an "x" the unit may be left out
# ("hangs on 4 nodes x 8"), which is never a card size ("x 80G") (first-contact batch f)
_GRID_NODE = (r"(?:(?:nvidia\s+)?(?:(?:dgx|hgx)\s*)?(?:" + G + r"\s*)?(?:(?:dgx|hgx)\s*)?(?:[a-z]?\d{0,4}\s*)?" + _NODE_NOUN + r"\b|"
              r"(?:台|个)?\s*(?:机器|节点|服务器|主机)|台|机(?!器))")
_GRID_UNIT = r"\s*(?:x\s*)?(?:张|块|个)?\s*(?:nvidia\s+)?(?:" + G + r"|gpus?\b|cards?\b|卡|显卡)"
_GRID = re.compile(COUNT + r"\s*" + _GRID_NODE + r"(?:"
                   r"\s*[x×*]\s*" + COUNT + r"(?:" + _GRID_UNIT + r"|(?!\d|\.\d|\s*(?:gi?b|g|t|tb)\b|\s*[x×*]))|"
                   r"\s*,?\s*(?:with|of|each with|each having|each has)\s*" + COUNT + _GRID_UNIT + r"(?:\s*each)?|"
                   r"\s*[(（]\s*(?:每台|每个?节点|每机|each(?: with| has)?)?\s*(?:有)?\s*" + COUNT + _GRID_UNIT + r"(?:\s*each)?\s*[)）])",
                   re.I | re.A)


def _grids(text: str) -> list[tuple[int, int, tuple[int, int], str]]:
    """(nodes, GPUs per node, span, words) of every machines-x-GPUs phrase, in text order."""
    found: list[tuple[int, int, tuple[int, int], str]] = []
    for pattern in (_GRID, _NODES_BY_GPUS):
        for m in pattern.finditer(text):
            nodes, per = to_int(m.group(1)), to_int(next(g for g in m.groups()[1:] if g))
            if nodes and per and 0 < per <= 64 and not any(s < m.end() and m.start() < e for _, _, (s, e), _ in found):
                found.append((nodes, per, m.span(), m.group(0)))
    return sorted(found, key=lambda g: g[2])


_NOT_MINE = re.compile(r"(?:than|比|fits?|fit (?:on|in|into)|vs\.?|compared to|instead of)\s*(?:that of\s*)?(?:on|in|into)?"
                       r"\s*(?:an?\s*)?$", re.I | re.A)


def _first(patterns: list[re.Pattern], text: str) -> tuple[int | None, tuple[int, int] | None, str]:
    # "a single GPU can handle 5000 tokens but with 8 of them ...": a one written as a word beside a
    # figure greater than one is the comparison, the figure is the setup
    worded_one: tuple[int, tuple[int, int], str] | None = None
    for pattern in patterns:
        for m in pattern.finditer(text):
            value = to_int(m.group(1))
            if value is not None:
                if value == 1 and _NOT_MINE.search(text[max(0, m.start() - 16): m.start()]):
                    continue  # "slower than a single GPU", "fits on one GPU": a comparison, not the setup
                if value == 1 and one_gpu_symptom(text, m.start(), m.end()):
                    continue  # "it uses only one GPU": what the run does, not how many it has
                if value == 1 and not m.group(1).strip().isdigit():
                    worded_one = worded_one or (value, m.span(), m.group(0))
                    continue
                return value, m.span(), m.group(0)
    return worded_one or (None, None, "")


def _blank(text: str, span: tuple[int, int] | None) -> str:
    if not span:
        return text
    return text[: span[0]] + " " * (span[1] - span[0]) + text[span[1]:]


_NODES_OF_CARDS = re.compile(COUNT + r"\s+(\d{1,2})\s*(?:x\s*)?(?:nvidia\s+)?" + G + r"\s*(?:servers?|machines?|nodes?|boxes|hosts?)\b",
                             re.I | re.A)
# "2台8xA100 80G" (Qwen#201): machines, each of count x card
_MACHINES_OF_CARDS = re.compile(COUNT + r"\s*(?:台|个节点|节点)(?:机器)?\s*(\d{1,2})\s*[x×*]?\s*(?:张|块|卡)?\s*" + G, re.I | re.A)
# one card in the person's own words, no count anywhere: "a NVIDIA A100 with 80Gb", "I have A100 80GB",
# "I'm running RoCM(RX 5600XT, 8GB of Vram)"
_ONE_CARD = re.compile(r"(?:(?:只有|只剩|仅有|就(?:只有)?|手上(?:只有)?|我(?:的|有))\s*(?:一张|一块|一个)?\s*(?:nvidia\s*|rtx\s*)?" + G +
                       r"|\b(?:an?|one|my)\s+(?:single\s+)?(?:nvidia\s+|amd\s+|rtx\s+)?" + G +
                       r"|\bi(?:'ve| have|'m| am)?\s*(?:got|have|own|running|using|use|run|on)\s+(?:on\s+)?(?:an?\s+|one\s+)?"
                       r"(?:nvidia\s+|amd\s+)?(?:[a-z]{2,8}\s*\(\s*)?" + G + r")(?!" + GPU + r"|\s*(?:[x×*s]|gpus|cards|nodes?|servers?|"
                       r"machines?|cluster|instances?|box))", re.I | re.A)
# Two cards said without a digit: "both of my GPUs", "dual A6000s", "a pair of 3090s", "双卡" (COUNT reads 双)
_PAIR = re.compile(r"(?<![a-z])(?:dual|twin|a pair of|both(?: of)?(?: (?:my|our|the|these|those))?)[\s-]*(?:nvidia\s+|rtx\s+)?"
                   r"(?:\d{1,3}\s*gi?b?\s+)?(?:" + G + r"|gpus?\b|cards?\b)|"
                   # "双3090", "双 4090 训练", "双路A100": 双 straight before a card is two of them
                   r"双(?:路|块|张)?\s*(?:nvidia\s*|rtx\s*)?(?:" + G + r")", re.I | re.A)
# One card said without a digit: "my 80G card", "my GPU runs out", "我的卡", "这张卡"
_MY_CARD = re.compile(r"(?<![a-z])(?:my|our)\s+(?:only\s+|single\s+)?(?:\d{1,3}\s*gi?b?\s+)?(?:card|gpu)(?!s|\s*(?:count|memory|mem\b|"
                      r"util|usage|ram|vram|number))|(?<![a-z])(?:my|our)\s+single\s+(?!nodes?\b|machines?\b|servers?\b|hosts?\b)"
                      r"(?:nvidia\s+|rtx\s+)?[A-Za-z0-9" + GPU + r"]|我的(?:显)?卡(?!们)|这张(?:显)?卡", re.I | re.A)
_MANY = re.compile(r"gpus\b|cards\b|devices\b|多卡|多机|multi-?gpu|multiple gpus|nodes?\b|节点|each|per gpu|per card|每张|每卡|"
                   r"torchrun|nproc|world[_ ]size|ranks?\b|" + G + r"s\b", re.I | re.A)

# A sentence about someone else's run ("what GPUs did you use for the paper?", "作者用了几张卡？") names
# their cards, not the asker's: it does not make the asker's one named card several (first-contact f)
_ABOUT_OTHERS = re.compile(r"[^.?!;。？！；\n]*(?:\b(?:you|your|the authors?|paper|official|reported)\b|作者|你们|您|论文|官方|原文)"
                           r"[^.?!;。？！；\n]*", re.I | re.A)


def _many(text: str, own_card: str) -> bool:
    """Whether ``text`` speaks of several GPUs of the asker's, beside the one card ``own_card``."""
    return bool(_MANY.search(_ABOUT_OTHERS.sub(" ", text.replace(own_card, " "))))


# A per-card phrase ("单张卡只有16G", "each card only has 16GB", "a single GPU is 24G") says how big one
# card is; where the run is on several cards ("多张卡", "multiple GPUs") it is not a count of one, and
# the count stays unstated (asked) unless a number is written (first-contact batch e)
_PER_CARD_MEMORY = re.compile(r"(?:单张卡?|单卡|单块卡?|一张卡|一块卡|每张卡?|每块卡?|每卡|(?:each|every|a single|one|per)\s+(?:card|gpu)|"
                              r"(?:each|every|a single|one)\s+(?:of\s+(?:the|my|our)\s+)?(?:cards|gpus))"
                              r"\s*(?:的)?\s*(?:显存)?\s*(?:只有|仅有|才|有|是|为|都是|都有|only\s+has|only\s+have|has|have|is|with|only|of)?\s*"
                              r"(?:only\s+|just\s+)?\d+(?:\.\d+)?\s*(?:gib|gb|g)(?![a-z])", re.I | re.A)
_SEVERAL_CARDS = re.compile(r"多张|多块|多卡|多个(?:gpu|卡|显卡)|多(?:台|个)?(?:gpu|显卡)|几张卡|\bmultiple\s+(?:gpus|cards)|"
                            r"\bseveral\s+(?:gpus|cards)|\bmulti-?gpu|\bmany\s+(?:gpus|cards)|\bmore\s+(?:gpus|cards)|"
                            r"\bacross\s+(?:the\s+)?(?:gpus|cards)", re.I | re.A)


# Several of the asker's cards with no number written: "multiple RTX 3090s", "several A100 GPUs", "a few
# 4090s", "多张3090", "几张卡": a count to ask (never one, never a default). A single card named beside it
# ("runs on a single 3090", "is it possible on one GPU?") is a baseline or a question, not the run's count
# (first-contact batch j). Said in a question ("should I use multiple GPUs?", "需要几张卡？") or after a
# modal it is no count of the asker's.
_SEVERAL_OWN = re.compile(r"\b(?:multiple|several|a few|a couple of)\s+(?:nvidia\s+|rtx\s+|geforce\s+)?(?:" + G + r"s?|gpus\b|cards\b)|"
                          r"(?:多张|多块|多个|几张|几块|好几张|好几块|若干张?)\s*(?:nvidia\s*|rtx\s*)?(?:" + G + r"|显卡|卡|gpu)",
                          re.I | re.A)
_SEVERAL_HYPOTHETICAL = re.compile(r"\b(?:should|would|could|can|if|whether|want to|plan to|planning to|going to|need|needs|"
                                   r"to use|how many)\b|如果|是否|要不要|想|打算|准备|需要|要|得|至少|最少|多少", re.I | re.A)


def several_cards(text: str) -> str | None:
    """The words saying the run is on several cards, no number given ("multiple RTX 3090s",
    "多张3090"), or None; never in a question sentence or after a modal ("should I use several GPUs?")."""
    for m in _SEVERAL_OWN.finditer(text):
        start = max(text.rfind(ch, 0, m.start()) for ch in ".?!。？！\n;；") + 1
        stops = [i for ch in ".?!。？！\n" if (i := text.find(ch, m.end())) >= 0]
        end = min(stops) if stops else len(text)
        sentence, before = text[start:end + 1], text[start:m.start()]
        if re.search(r"[?？吗呢]", sentence) or _SEVERAL_HYPOTHETICAL.search(before[-24:]):
            continue
        return m.group(0)
    return None


def _per_card_phrases_blanked(text: str) -> str:
    """``text`` with the card words of per-card memory phrases blanked, where the run is on several cards."""
    if not _SEVERAL_CARDS.search(text):
        return text
    for m in _PER_CARD_MEMORY.finditer(text):
        word = re.match(r"\D*", m.group(0)).group(0)  # type: ignore[union-attr]  # \D* always matches
        text = text[: m.start()] + " " * len(word) + text[m.start() + len(word):]
    return text


def read_counts(text: str, out: ProseReading) -> None:
    text = _per_card_phrases_blanked(text)
    # the roles of count figures first (bot.understand.count_mentions): counts that add up, then the
    # figures that are no count (an index "GPU 0", a baseline "比单卡还慢", one card per process, ...)
    if subset := subset_count(text):  # "4 of the 8 GPUs": the cards the run uses
        text, note, (used, words) = subset
        _set(out, "gpu_count", used, words)
        out.notes.append(note)
    if rest := rest_and_one(text):  # before the index is blanked: "GPU 0" is the one beside "the other 3"
        text, (total, words) = rest
        _set(out, "gpu_count", total, words)
        out.notes.append(("count_rest_plus_one", {"count": total, "span": words}))
    text, settled, device_list = settle_counts(text)
    indexed = any(code == "device_index" for code, _ in settled)  # several cards, one of them named by index
    out.notes.extend(n for n in settled if n[0] != "device_index")
    if device_list is not None:
        out.observed["device_list_count"] = device_list
    if roles := count_roles(text):
        failed, worked, spans, fail_span, work_span = roles
        for start, end in spans:  # blank the count words, keep the card named beside them
            head = text[start:end].split(GPU)[0]
            text = text[:start] + " " * len(head) + text[start + len(head):]
        out.notes.append(("failed_run_count", {"failed": failed if failed else "several", "worked": worked,
                                               "failed_span": fail_span, "worked_span": work_span}))
        out.observed["worked_gpu_count"] = worked
        if failed and re.fullmatch(r"\D*\d+", fail_span):
            _set(out, "gpu_count", failed, fail_span)  # "OOMs on 4": no other rule reads a figure without its unit
    grids = _grids(text)
    if not roles and not grids and _first(_PER_NODE, text)[0] is None and (restated := restated_count(text)):
        # "I had 4 GPUs ... now it runs on 8", "原来用2张卡，现在换成4张": the later count is the run's
        text, note, (later, later_words) = restated
        out.notes.append(note)
        _set(out, "gpu_count", later, later_words)
    if len(grids) > 1 and (run_grids := grid_roles(text, grids)):
        # "works on 2 nodes x 8 GPUs, hangs on 4 nodes x 8": the failing run's machines are the setup
        nodes_failed, per_failed, _, fail_words = grids[run_grids[0]]
        worked_grids = [grids[i] for i in run_grids[1]]
        _set(out, "nodes", nodes_failed, fail_words)
        _set(out, "gpus_per_node", per_failed, fail_words)
        _set(out, "gpu_count", nodes_failed * per_failed, fail_words)
        out.notes.append(("failed_run_count", {"failed": nodes_failed * per_failed, "worked": worked_grids[0][0] * worked_grids[0][1],
                                               "failed_span": fail_words, "worked_span": worked_grids[0][3]}))
        out.observed["worked_gpu_count"] = worked_grids[0][0] * worked_grids[0][1]
        for _, _, span, _ in grids:
            text = _blank(text, span)
    elif grids and not _NODES_BY_GPUS.search(text) and grids[0][0] > 1 and \
            _first(_NODES, _blank(text, grids[0][2]))[0] in (None, grids[0][0]):
        # "4 H100 nodes (8 GPUs each)", "2 DGX nodes with 8 GPUs each": nodes, then the GPUs of each
        # (one node with its GPUs, or another node count beside it, is left to the rules below)
        _set(out, "nodes", grids[0][0], grids[0][3])
        _set(out, "gpus_per_node", grids[0][1], grids[0][3])
        for _, _, span, _ in grids:
            text = _blank(text, span)
    grid = _NODES_BY_GPUS.search(text) or _NODES_OF_CARDS.search(text) or _MACHINES_OF_CARDS.search(text)
    if grid:  # "2x8 H100", "two 8 A100 Server": nodes x GPUs per node
        _set(out, "nodes", to_int(grid.group(1)), grid.group(0))
        _set(out, "gpus_per_node", int(grid.group(2)), grid.group(0))
        for other in (_NODES_BY_GPUS, _NODES_OF_CARDS, _MACHINES_OF_CARDS):  # "... slower than one 8 A100 Server"
            for g in list(other.finditer(text)):
                text = _blank(text, g.span())
    nodes, node_span, node_text = _first(_NODES, text)
    for pattern, count_group, mem_group in ((_COUNT_BY_MEM, 1, 2), (_MEM_BY_COUNT, 2, 1)):
        m = next((g for g in pattern.finditer(text) if not re.search(
            r"(?:内存|占用|ram|memory usage|used|uses|estimate)[^\n]{0,10}$", text[max(0, g.start() - 16): g.start()], re.I | re.A)),
                 None)
        if m:
            cards, mem = int(m.group(count_group)), float(m.group(mem_group))
            _set(out, "gpu_memory_gb", int(mem) if mem.is_integer() else mem, m.group(0))
            out.card_explicit = True
            right_after_nodes = node_span is not None and bool(re.fullmatch(
                r"\s*(?:,|with|of|each with|each)?\s*", text[node_span[1]: m.start()], re.I | re.A)) and m.start() >= node_span[1]
            # "two A100 nodes, each node is (80GX8)" (stanford_alpaca#200): the count is per node
            per_node_cue = bool(_PER_NODE_CUE.search(text[max(0, m.start() - 40): m.start()]))
            _set(out, "gpus_per_node" if right_after_nodes or per_node_cue else "gpu_count", cards, m.group(0))
            text = _blank(text, m.span())
            break
    per_node, per_span, per_text = _first(_PER_NODE, text)
    masked = _blank(text, per_span)
    if node_span:
        masked = _blank(masked, node_span)
    count, count_span, count_text = _first(_GPU_COUNT, masked)
    if per_node is not None and count is not None and count_span and not (
            re.match(r"^s?\s*(?:gpus?|cards?|卡)?\s*(?:total|in total|in all|总|共)", text[count_span[1]: count_span[1] + 12], re.I | re.A)
            or re.search(r"(?:共|total of|一共|总共)\s*$", text[max(0, count_span[0] - 6): count_span[0]], re.I | re.A)
            or (node_span and 0 <= count_span[0] - node_span[1] <= 1)):
        count = None  # "单机6卡" beside "2机，每机6卡": another setup, not the total of this one
    if nodes is not None and count is not None and per_node is None and node_span and count_span:
        between = text[node_span[1]: count_span[0]]
        if re.fullmatch(r"\s*,?\s*(?:[x×*]|with|of|每台|each|each with|,?\s*each(?: one)?(?: (?:equipped|fitted|outfitted))?(?: with)?)?\s*",
                        between, re.I | re.A) and \
                re.search(r"[x×*]|with|of|每台|each", between, re.I | re.A):
            per_node, per_text, count = count, count_text, None
        elif re.search(r"^\s*(?:gpus?|cards?)?\s*(?:each|per node|每台)", text[count_span[1]: count_span[1] + 14], re.I | re.A):
            per_node, per_text, count = count, count_text, None
    several = several_cards(text) if "gpu_count" not in out.fields and "gpus_per_node" not in out.fields else None
    if several is not None and count == 1 and not re.search(r"\d", count_text):
        count = None  # "runs on a single A6000 ... fails with multiple A6000s": the one card is no count
    single = None if several is not None else next((m for m in _SINGLE_GPU.finditer(text) if not re.search(
        r"(?:than|比|fits?|fit (?:on|in|into)|vs\.?|compared to|instead of)\s*(?:that of\s*)?(?:on|in|into)?\s*(?:an?\s*)?$",
        text[max(0, m.start() - 16): m.start()], re.I | re.A) and not _LIKE_ONE_GPU.search(text, max(0, m.start() - 3), m.end() + 24)
        and not one_gpu_symptom(text, m.start(), m.end())), None)
    if count is None and single and nodes is None and per_node is None and "gpu_count" not in out.fields \
            and "gpus_per_node" not in out.fields and not (
                # "on a 4090 and a 3090": two cards, so "on a" is not a count
                re.match(r"on\s+an?\s", single.group(0), re.I)
                and re.match(r"\s*(?:and|or|vs\.?|/|,)\s*(?:an?\s+)?" + GPU, text[single.end():], re.I)):
        count, count_text = 1, single.group(0)
    if count is None and nodes is None and per_node is None and "gpu_count" not in out.fields \
            and "gpus_per_node" not in out.fields and not indexed and several is None and len(re.findall(G, text)) \
            and len(re.findall(G + "+", text)) == 1 \
            and (one := _ONE_CARD.search(text)) and not _many(text, one.group(0)) \
            and not one_gpu_symptom(text, one.start(), one.end()):
        count, count_text = 1, one.group(0)
    if count is None and nodes is None and per_node is None and "gpu_count" not in out.fields and \
            "gpus_per_node" not in out.fields and several is None:
        if pair := _PAIR.search(text):
            count, count_text = 2, pair.group(0)
            out.notes.append(("count_implied", {"count": 2, "span": pair.group(0)}))
        elif (mine := _MY_CARD.search(text)) and not indexed and not _many(text, mine.group(0)):
            count, count_text = 1, mine.group(0)
            out.notes.append(("count_implied", {"count": 1, "span": mine.group(0)}))
    elif count is not None and count > 1 and single is not None and (lone := _LONE_SINGLE.search(text)):
        # "单卡，8张A100": one card and eight, nothing between them that says which is the run's
        out.contradictions.append(("gpu_count", (1, count), (lone.group(0).strip(" ,，"), count_text)))
    if nodes is None and not _search(r"多个节点|多节点|多机|multiple nodes|multi-?node|several nodes", text) and \
            (m := _ONE_MACHINE_OF_GPUS.search(text) or _search(r"单机|单节点|单台|一台机器|one node|single node|one machine|single machine|"
                                        r"a single node|in one machine|on one machine|a machine with", text)):
        nodes, node_text = 1, m.group(0)
    if nodes is not None and nodes > 1 and per_node is None and node_span and count == 1 and \
            (lone := _SINGLE_GPU.search(text, node_span[1])) and \
            re.fullmatch(r"\s*(?:,|，|with|of|each with|each has|each having|and)?\s*(?:an?\s+)?", text[node_span[1]: lone.start()],
                         re.I | re.A):
        # "two machines single RTX3090", "2 nodes with a single A100": one card on each machine
        per_node, per_text, count = 1, text[node_span[0]: lone.end()], None
    if nodes is not None:
        _set(out, "nodes", nodes, node_text)
    if per_node is not None:
        _set(out, "gpus_per_node", per_node, per_text)
    if count is not None and out.fields.get("gpus_per_node") == count and (out.fields.get("nodes") or 1) > 1 and grid:
        count = None  # "two 8 A100 Server ... another 8 A100 machine": the per-node count again, not the total
    if count == 1 and "gpu_count" not in out.fields and not re.search(r"\d", count_text) and \
            (GPU in count_text or re.search(re.escape(count_text.strip()) + r"\s*" + G, text)) and \
            not any(code == "count_implied" for code, _ in out.notes):
        # "只有4090", "一张4090", "on my 4090", "my single 3090": a card named in the singular is one card
        out.notes.append(("count_implied", {"count": 1, "span": count_text.strip()}))
    if count is not None:
        _set(out, "gpu_count", count, count_text)
    elif several is not None and "gpu_count" not in out.fields:
        out.notes.append(("count_several", {"span": several}))  # the answer asks how many


# --------------------------------------------------------------------------------------------
# Links
# --------------------------------------------------------------------------------------------


def read_links(text: str, out: ProseReading) -> None:
    low = text.lower()
    if m := _search(r"(?:没有|无|不带|without|no|w/o|not)\s*(?:an?\s+)?(?:nvlink|nvswitch)|pcie|pci-e|no p2p|p2p_disable=1", low):
        _set(out, "intra_node_link", "pcie", text[m.start(): m.end()])
    elif m := _search(r"nvlink|nvswitch", low):
        _set(out, "intra_node_link", "nvlink", text[m.start(): m.end()])
    if m := _search(r"(?:without|no|没有|无)\s*(?:infiniband|\bib\b|rdma)", low):
        pass
    elif m := _search(r"infiniband|\bib\b|(?<![a-z])ib(?=\s*\d)|\broce\b|\brdma\b|nccl_ib_hca|socket_ifname=ib", low):
        _set(out, "inter_node_link", "infiniband", text[m.start(): m.end()])
    if "inter_node_link" not in out.fields and (m := _search(r"以太网|ethernet|万兆|千兆|\btcp\b|\d+\s*gbe\b", low)):
        _set(out, "inter_node_link", "ethernet", text[m.start(): m.end()])
    speed = None
    # a node's NICs as count x speed ("8x400G IB", DGX-class nodes) or in Tb/s ("3.2 Tbps InfiniBand")
    if nics := _search(r"(?<![\d.])([1-9]\d?)\s*[x×*]\s*(\d{2,3})\s*(?:gbps|gb/s|gbit/s|gb|g)(?![a-z])"
                       r"(?=[^。\n]{0,12}(?:infiniband|\bib\b|roce|rdma|nic|网卡|ethernet|以太网))", text):
        speed = (float(nics.group(1)) * float(nics.group(2)), nics.group(0))
    # bits only: "3.35 TB/s" is a card's memory bandwidth, not a network
    elif tera := _search(NUM + r"\s*(?:[Tt]bps|TBPS|Tb/s|[Tt]bit/s)(?![A-Za-z])", text, re.A):
        speed = (float(tera.group(1)) * 1000, tera.group(0))
    for m in re.finditer(NUM + r"\s*(gbps|gb/s|gbit/s|gbit|gbe|gb|g)(?![A-Za-z])", text, re.I | re.A):
        if speed is not None:
            break
        unit = m.group(2)
        before = text[max(0, m.start() - 16): m.start()]
        after = text[m.end(): m.end() + 12]
        is_speed = unit.lower() in ("gbps", "gbit/s", "gbit", "gbe") or unit == "Gb" or unit.lower() == "gb/s" and \
            bool(_NET.search(before + after))
        if unit == "Gb" and (re.match(r"^\s*(?:of\s+)?(?:vram|显存|gpu memory|memory)", after, re.I | re.A)
                             or _CARD_WITH.search(text[max(0, m.start() - 12): m.start()])
                             or re.search(r"total(?: of)?\s*$", before, re.I | re.A)):
            is_speed = False
        if not is_speed and unit.lower() in ("g", "gb"):
            is_speed = bool(_NET.search(before) or _NET.match(after.strip().removeprefix("的").strip()))
            if re.search(r"显存|memory|内存|\bram\b|卡", before + after, re.I | re.A):
                is_speed = False
        if is_speed:
            speed = (float(m.group(1)), m.group(0))
            break
    if speed is None and "万兆" in text:
        speed = (10.0, "万兆")
    if speed is None:
        bare = _search(r"(?:infiniband|(?<![a-z])ib|roce|ethernet|以太网)\s*(?:ndr|hdr|edr)?\s*(\d{2,3})"
                       r"(?![\d.]|\s*(?:x|卡|张|台|gpus?|nodes?|cards?))", low)
        if bare:
            speed = (float(bare.group(1)), text[bare.start(): bare.end()])
    if speed is not None:
        value = speed[0]
        _set(out, "inter_node_gbps", int(value) if value.is_integer() else value, speed[1])
        if "inter_node_link" not in out.fields:
            _set(out, "inter_node_link", "ethernet" if value < 100 else "infiniband", speed[1])


def read_prose(work: str) -> ProseReading:
    out = ProseReading()
    read_size(work, out)
    read_counts(work, out)
    read_memory(work, out)
    read_training(work, out)
    read_links(work, out)
    return out
