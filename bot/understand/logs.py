"""Facts from pasted logs: CUDA OOM messages, nvidia-smi rows, DeepSpeed's memory estimator,
and results tables whose cells say which setup ran out of memory.

A log states what happened, not what the user plans: "Tried to allocate 12.94 GiB (GPU 1; 79.35
GiB total capacity; 77.65 GiB already allocated ...)" says the card holds 79.35 GiB (an 80 GB
card) and that the current run used 77.65 GiB. ``read_logs`` returns those facts as ``Observed``
plus the card memory they imply, and the spans it consumed so prose rules never read the same
figures as a card size or host RAM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.understand import Observed

_F = r"(\d+(?:\.\d+)?)"
_UNIT = r"\s*(GiB|MiB|KiB|GB|MB|G|M)\b"

# PyTorch < 2.1: "(GPU 1; 79.35 GiB total capacity; 77.65 GiB already allocated; ...)"; a pasted line
# whose words ran together or lost a letter ("4.00 GiB totalcapacity;", "total capacty", first-contact h)
_OOM_OLD = re.compile(r"Tried to allocate " + _F + _UNIT + r"\s*\(GPU \d+;\s*" + _F + _UNIT
                      + r"\s*total\s*capac\w*;\s*" + _F + _UNIT + r"\s*already\s*allocated[^)\n]{0,160}\)?", re.I | re.A)
# PyTorch >= 2.1: "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 39.39 GiB of which ..."
_OOM_NEW = re.compile(r"Tried to allocate " + _F + _UNIT + r"\.?\s*GPU\s*\d*\s*has a total capac\w* of "
                      + _F + _UNIT + r"(?: of which " + _F + _UNIT + r" is free)?"
                      r"(?:[.\s]*(?:Including non-PyTorch memory, )?(?:this process|Process \d+) has "
                      + _F + _UNIT + r" memory in use)?"
                      r"(?:[.\s]*Of the allocated memory " + _F + _UNIT + r" is allocated by PyTorch)?", re.I | re.A)
_OOM_WORDS = re.compile(r"out of memory|OutOfMemoryError|\boom\b|爆显存|显存不足|显存不够|显存溢出|内存不够|"
                        r"超出显存|显存爆|cuda\s*oom|runs? out of (?:gpu )?(?:memory|vram)|ran out of (?:memory|vram)|out\s*of\s*memory|"
                        r"outofmemory|memory is insufficient|not enough (?:gpu )?memory|gpu is not enough|显存会不够|溢出|"
                        r"(?<![a-z])oom(?:s|ed|ing)?(?![a-z])|爆了|内存不足|显存占满|"
                        # a batch that runs only below the one asked for (DeepSpeedExamples#411)
                        r"(?:batch|bs)[ _a-z]{0,6}(?:最多)?只能(?:设置?|开|调|跑)?到\s*\d|"
                        r"can only (?:use|run|fit|set|train with) (?:a )?(?:micro[- ]?)?batch(?:[ _]size)?(?: of)? \d",
                        re.I | re.A)
# "会OOM吗", "will it OOM?": a question about the future, not a failure that happened
_OOM_HYPOTHETICAL = re.compile(r"(?:会不会|是否会|will (?:it|this|i) |would (?:it|this) |unless you (?:encounter|hit|get) |"
                               r"if you (?:encounter|hit|get) |除非|如果遇到)\s*(?:oom|爆显存|out of memory)|"
                               r"(?:oom|爆显存|out of memory)\s*(?:吗|么)", re.I | re.A)
# nvidia-smi: "| 78000MiB / 81920MiB |"
_SMI = re.compile(r"(\d{3,6})\s*MiB\s*/\s*(\d{4,6})\s*MiB", re.I | re.A)
# DeepSpeed estimate_zero*_model_states_mem_needs: "216.99GB |  18.08GB | offload_optimizer=cpu"
_DS_EST = re.compile(r"\d+(?:\.\d+)?\s*GB\s*\|\s*(\d+(?:\.\d+)?)\s*GB\s*\|\s*offload_\w+=(\w+)[^\n]*", re.I | re.A)
# DeepSpeed's estimator names the model's size: "SW: Model with 9708M total params, 262M largest layer params."
_DS_SW = re.compile(r"Model with (\d+(?:\.\d+)?)\s*([MB]) total params", re.A)
_DS_HW = re.compile(r"HW: Setup with (\d+) nodes?, (\d+) GPUs per node", re.I | re.A)
# whole lines that are log output (language and prose rules skip them)
_LOG_LINE = re.compile(r"^[ \t]*(?:\[rank\d+\]:?[ \t]*)?(?:Traceback|torch\.\w+(?:\.\w+)*Error|\w*Error:|File \"|"
                       r"[WEI]\d{4} |\[(?:INFO|WARNING|ERROR)|(?:WARNING|INFO|ERROR)\b|\w+Warning:|If reserv)[^\n]*$",
                       re.M | re.A)
# A per-step training-log line (a step/iteration/epoch counter, a loss, a rate) and a memory field in it
# ("mem=61.2GiB", "memory: 41.5GB", "gpu_mem=19.8G", "max_reserved 70G", "memory_allocated: 38GB"): the
# GPU memory the run used at that step, an observation, never host RAM or the card's size. A field
# named for the host ("cpu_mem", "host_mem", "ram", "rss") is left to the prose rules.
_STEP_LINE = re.compile(r"\b(?:global[_ ]?step|step|steps|iter|iters|iteration|epoch|loss|lm loss|lr|grad[_ ]?norm|"
                        r"tokens?/s|tok/s|tflops|mfu|samples?/s)\b\s*[=:：]?\s*\[?-?\d|\d\s*(?:it/s|s/it)\b|"
                        r"\d+/\d+\s*\[|\[rank\s*\d+\]|\brank\s*\d+\s*:|第\s*\d+\s*(?:步|轮|个?epoch)", re.I | re.A)
_STEP_MEM = re.compile(r"(?<![A-Za-z_])((?:gpu[_ ]?|cuda[_ ]?|device[_ ]?|torch[_ ]?)?(?:max[_ ]?|peak[_ ]?)?"
                       r"(?:mem(?:ory)?(?:[_ ](?:allocated|reserved|used|usage))?|allocated|reserved|mem[_ ]?gb|vram)|显存(?:占用)?)"
                       r"\s*(?:\((?:gi?b)\))?\s*[=:：]?\s*" + _F + _UNIT, re.I | re.A)
_HOST_KEY = re.compile(r"(?:cpu|host|ram|rss|sys(?:tem)?)[_ ]?$", re.I | re.A)
_DS_EST_HEAD = re.compile(r"Estimated memory needed[^\n]*\n(?:[^\n]*\n){0,3}", re.I | re.A)


# A results table's column header naming the setup it measured ("Stage-2", "ZeRO-3 offload",
# "FSDP", "DDP"); ``_table_setup`` turns it into Observed's fields.
_TABLE_STAGE = re.compile(r"(?:zero|stage|ds)[-_ ]?(?:stage[-_ ]?)?([0-3])(?!\d)", re.I | re.A)
_TABLE_FSDP = re.compile(r"fsdp|fully.?shard", re.I | re.A)
_TABLE_DDP = re.compile(r"(?<![a-z])ddp(?![a-z])|distributeddataparallel", re.I | re.A)
_TABLE_SEPARATOR = re.compile(r"^[\s|:\-]+$")
# Which OOM column says most: a setup that shards more ran out of memory, so those sharding less
# would too (ZeRO-1 and -2 shard what FSDP's SHARD_GRAD_OP shards; ZeRO-3 what FULL_SHARD does).
_SHARDING_ORDER = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp_shard_grad_op": 2, "zero3": 3,
                   "fsdp_full_shard": 3, "fsdp_hybrid_shard": 3}


def _table_setup(header: str) -> tuple[str, dict[str, object]] | None:
    """("zero2", {"zero_stage": 2}) for a column headed "Stage-2"; None for a column that names no
    setup, or one that offloads (an offloaded run is not the GPU-resident strategy that failed)."""
    if re.search(r"offload", header, re.I):
        return None
    if m := _TABLE_STAGE.search(header):
        return f"zero{m.group(1)}", {"zero_stage": int(m.group(1))}
    if _TABLE_FSDP.search(header):
        sid = ("fsdp_shard_grad_op" if re.search(r"grad.?op", header, re.I) else
               "fsdp_hybrid_shard" if re.search(r"hybrid", header, re.I) else "fsdp_full_shard")
        return sid, {"fsdp_strategy": sid}
    if _TABLE_DDP.search(header):
        return "ddp", {"fsdp_strategy": "ddp"}
    return None


def table_oom(text: str) -> tuple[dict[str, object], str] | None:
    """The setup a pasted results table marks as out of memory, as Observed fields, and the row
    that says so. The table is rows of ``|``-separated cells (Markdown or plain); the header is
    the first row naming setups; a later row's cell reading "OOM" marks that column's setup
    (DeepSpeed#3901: "Settings | FSDP | Stage-2 | ..." then "Memory Usage | 23.8GB per GPU |
    OOM | ..."). Of several OOM columns the one sharding most is kept."""
    header: list[str] | None = None
    best: tuple[int, dict[str, object], str] | None = None
    for line in text.splitlines():
        if line.count("|") < 2 or _TABLE_SEPARATOR.match(line):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None or len(cells) != len(header):
            if sum(_table_setup(c) is not None for c in cells) >= 1 and not any(_OOM_WORDS.fullmatch(c) for c in cells):
                header = cells
            continue
        for name, cell in zip(header, cells, strict=True):
            setup = _table_setup(name)
            if setup is None or not _OOM_WORDS.fullmatch(cell.strip(" *_`")):
                continue
            rank = _SHARDING_ORDER[setup[0]]
            if best is None or rank > best[0]:
                best = (rank, setup[1], line.strip())
    return (best[1], best[2]) if best else None


def _gib(value: str, unit: str) -> float:
    unit = unit.lower()
    v = float(value)
    if unit in ("mib", "mb", "m"):
        return v / 1024
    if unit == "kib":
        return v / 1024 / 1024
    return v


# Marketed card sizes (GB). A log's capacity is a little under the label ("79.35 GiB" on an
# "80GB" card: the driver and ECC reserve the rest), so the label is the smallest size at or just
# above it. Sizes from NVIDIA/AMD/Huawei/Intel datasheets of the cards in bot.catalog plus the
# common consumer sizes, down to the 2 GB and 3 GB entry cards (GTX 1050, GTX 1060 3GB) an OOM
# message may come from ("GPU 0; 2.00 GiB total capacity").
_STANDARD_SIZES = (2, 3, 4, 6, 8, 10, 11, 12, 16, 20, 22, 24, 32, 40, 44, 48, 64, 80, 94, 96, 128, 141, 180, 192, 256, 288)


def card_size_gb(capacity_gib: float) -> float | None:
    """The marketed size of a card whose usable capacity is ``capacity_gib`` (79.35 -> 80)."""
    from bot.catalog import list_gpus

    sizes = sorted({*_STANDARD_SIZES, *(float(g.memory_gb) for g in list_gpus())})
    for size in sizes:
        if capacity_gib <= size * 1.005 and capacity_gib >= size * 0.88:
            return float(size)
    return None


@dataclass
class LogReading:
    observed: Observed = field(default_factory=Observed)
    gpu_memory_gb: float | None = None
    memory_span: str = ""
    spans: list[tuple[int, int]] = field(default_factory=list)
    nodes: int | None = None
    gpus_per_node: int | None = None
    hw_span: str = ""
    params_b: float | None = None  # the model size an estimator printed
    params_span: str = ""


def _step_memory(text: str, out: LogReading) -> None:
    """Memory fields of per-step training-log lines (``_STEP_MEM``): the first is what the run used per
    GPU, the largest its peak; every one is consumed so the prose never reads it as RAM or a card."""
    peak: float | None = None
    for line in re.finditer(r"[^\n]+", text):
        if not _STEP_LINE.search(line.group(0)):
            continue
        for m in _STEP_MEM.finditer(line.group(0)):
            if _HOST_KEY.search(line.group(0)[max(0, m.start() - 6): m.start()]):
                continue
            if m.group(1).startswith("显存") and not re.search(r"[|=]", line.group(0)):
                continue  # "第3个epoch时显存80G的卡OOM" is prose about the card; a log line has fields
            gib = round(_gib(m.group(2), m.group(3)), 2)
            if out.observed.used_per_gpu_gib is None:
                out.observed.used_per_gpu_gib = gib
            peak = max(peak or 0.0, gib)
            out.spans.append((line.start() + m.start(), line.start() + m.end()))
    if peak is not None and out.observed.used_per_gpu_gib is not None:
        out.observed.used_per_gpu_gib = max(out.observed.used_per_gpu_gib, peak)


def read_logs(text: str) -> LogReading:
    out = LogReading()
    obs = out.observed
    for pattern in (_OOM_OLD, _OOM_NEW):
        for m in pattern.finditer(text):
            obs.oom = True
            g = m.groups()
            obs.tried_to_allocate_gib = obs.tried_to_allocate_gib or round(_gib(g[0], g[1]), 2)
            if obs.capacity_gib is None:
                obs.capacity_gib = round(_gib(g[2], g[3]), 2)
            if pattern is _OOM_OLD and obs.allocated_gib is None:
                obs.allocated_gib = round(_gib(g[4], g[5]), 2)
            if pattern is _OOM_NEW:
                if g[8] and obs.allocated_gib is None:
                    obs.allocated_gib = round(_gib(g[8], g[9]), 2)
                elif g[6] and obs.used_per_gpu_gib is None:
                    obs.used_per_gpu_gib = round(_gib(g[6], g[7]), 2)
            if out.gpu_memory_gb is None:
                out.gpu_memory_gb = card_size_gb(obs.capacity_gib)
                out.memory_span = m.group(0)[:160]
            out.spans.append(m.span())
    for m in _SMI.finditer(text):
        total = float(m.group(2)) / 1024
        if out.gpu_memory_gb is None:
            out.gpu_memory_gb = card_size_gb(total)
            out.memory_span = m.group(0)
        if obs.used_per_gpu_gib is None:
            obs.used_per_gpu_gib = round(float(m.group(1)) / 1024, 2)
        out.spans.append(m.span())
    for m in _DS_EST.finditer(text):
        if m.group(2).lower() != "none" and obs.estimate_gib is None:
            obs.estimate_gib = float(m.group(1))
        out.spans.append(m.span())
    for m in _DS_EST_HEAD.finditer(text):
        out.spans.append(m.span())
    for m in _LOG_LINE.finditer(text):
        out.spans.append(m.span())
    _step_memory(text, out)
    if any(not _OOM_HYPOTHETICAL.search(text[max(0, m.start() - 24): m.end() + 3]) for m in _OOM_WORDS.finditer(text)):
        obs.oom = True
    if (marked := table_oom(text)) is not None:
        obs.oom = True
        for key, value in marked[0].items():
            if getattr(obs, key) is None:
                setattr(obs, key, value)
    for m in _DS_SW.finditer(text):
        if out.params_b is None and float(m.group(1)) > 0:
            out.params_b = round(float(m.group(1)) / (1000 if m.group(2) == "M" else 1), 4)
            out.params_span = m.group(0)
    for m in _DS_HW.finditer(text):
        out.nodes, out.gpus_per_node, out.hw_span = int(m.group(1)), int(m.group(2)), m.group(0)
    return out
