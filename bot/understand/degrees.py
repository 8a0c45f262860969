"""Tensor, pipeline and context parallel degrees, from launch lines, configs and prose.

The degrees are what ``bot.calc.parallel.plan_from_setup`` builds a plan from
(``TrainingSetup.tensor_parallel`` / ``pipeline_parallel`` / ``context_parallel``), so a run that
states "TP=8" is computed with its weights split eight ways, not as pure data parallelism.

Where they are written (each key is a cue of one axis, a table, not a branch per tool):
- launch flags and config keys: Megatron-LM / NeMo ``--tensor-model-parallel-size``,
  ``--pipeline-model-parallel-size``, ``--context-parallel-size``; torchtitan's ``[parallelism]``
  TOML (``tensor_parallel_degree``, ``pipeline_parallel_degree``, ``context_parallel_degree``,
  ``data_parallel_shard_degree``, ``data_parallel_replicate_degree``); DeepSpeed-Ulysses
  ``sequence_parallel_size`` (it splits the sequence, as CP does); short ``--tp 4`` / ``tp_size``;
- compact prose: ``TP=8``, ``TP4``, ``tp4pp2``, ``PP 8``, ``CP=2``;
- sentences: "8-way tensor parallel", "pipeline parallel degree 4", "张量并行 4 路", "4路张量并行",
  "流水线并行度为2", "序列并行 4", "上下文并行 2", "TP degree 4"; Megatron's "model parallel size 8" and
  "模型并行度为8" are the tensor degree.

**A degree being weighed is a question, not the setup.** "Should we add TP=8?", "or TP 4?",
"要不要开张量并行 4 路？" name a plan the person considers; ``weighed`` tells the reader to leave it
out of the setup. A key under an inference engine's section (verl's ``rollout.``, vLLM) is the
generation engine's degree, not the training run's, and is not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_I = re.I | re.A

# config/flag key (lower case, dashes as underscores, last dotted part) -> axis
DEGREE_KEYS: dict[str, str] = {
    # Megatron-LM / NeMo / Megatron-DeepSpeed
    "tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp", "context_parallel_size": "cp",
    "model_parallel_size": "tp",  # GPT-NeoX and early Megatron: the intra-layer (tensor) degree
    "ds_sequence_parallel_size": "cp",
    # torchtitan [parallelism]
    "tensor_parallel_degree": "tp", "pipeline_parallel_degree": "pp", "context_parallel_degree": "cp",
    "data_parallel_shard_degree": "dp_shard", "data_parallel_replicate_degree": "dp_replicate",
    # generic / DeepSpeed-Ulysses / verl training side
    "tensor_parallel_size": "tp", "pipeline_parallel_size": "pp", "sequence_parallel_size": "cp",
    "ulysses_sequence_parallel_size": "cp", "ulysses_degree": "cp", "ring_degree": "cp",
    "tp_size": "tp", "pp_size": "pp", "cp_size": "cp", "tp": "tp", "pp": "pp", "cp": "cp",
    "tp_degree": "tp", "pp_degree": "pp", "cp_degree": "cp",
    # the axis itself as the key ("tensor_parallelism=2", "pipeline_parallel: 4"): a degree when its value is a number
    "tensor_parallelism": "tp", "pipeline_parallelism": "pp", "context_parallelism": "cp",
    "tensor_parallel": "tp", "pipeline_parallel": "pp", "context_parallel": "cp", "sequence_parallel_degree": "cp",
}
FIELD_OF_AXIS = {"tp": "tensor_parallel", "pp": "pipeline_parallel", "cp": "context_parallel"}

# "--tensor-model-parallel-size 4", "tensor_parallel_degree = 8", "tp_size: 2", "--tp=4"
_KEYED = re.compile(r"(?<![A-Za-z0-9_])(?:--)?((?:[A-Za-z_][\w]*\.)*[A-Za-z_][\w\-]{0,60})[\"']?\s*(?:=|:|\s)\s*[\"']?(-?\d{1,4})"
                    r"(?![\d.])", re.A)
# sections whose degrees belong to an inference engine (verl's rollout, vLLM), not the training run
_ENGINE_PATH = re.compile(r"(?:^|\.)(?:rollout|vllm|sglang|infer\w*|serving|generat\w*)(?:\.|$)", _I)
# ... or a key written after an engine's name on its line ("16 for vllm_engines (8 engines, each tp_size = 2)")
_ENGINE_BEFORE = re.compile(r"vllm|sglang|rollout|inference|推理|engine", _I)
# compact: "TP=8", "TP4", "tp 2", "TP8PP2", "PP=4", "CP=2" (letters never glued to a word before);
# a full stop after the degree ends the sentence ("... TP=8 PP=2."), only a decimal point is refused
_COMPACT = re.compile(r"(?<![A-Za-z_\-])(tp|pp|cp)\s*(?:=|:|-|\s)?\s*(\d{1,4})(?!\d|\.\d|\s*(?:gb|g\b|b\b|%|x\b))", _I)
_AXIS_WORDS = {
    # Megatron-LM's "model parallel size" (``--model-parallel-size``, GPT-NeoX's ``model_parallel_size``)
    # is the intra-layer, tensor degree; "模型并行度" is how Chinese threads write the same setting
    "tp": r"tensor[- ]?(?:model[- ]?)?parallel(?:ism)?|张量并行|tensor[- ]?并行|"
          r"(?<!pipeline )(?<!pipeline-)(?<!pipeline_)(?<![A-Za-z_])model[- _]?parallel(?:ism)?|(?<!流水线)(?<!流水)模型并行",
    "pp": r"pipeline[- ]?(?:model[- ]?)?parallel(?:ism)?|流水线?(?:模型)?并行|pipeline[- ]?并行",
    "cp": r"context[- ]?parallel(?:ism)?|sequence[- ]?parallel(?:ism)?|ulysses|ring[- ]attention|上下文并行|序列并行",
}
# "TP degree 4", "PP size of 2", "CP 度为 2": the axis's short name with a word that says a degree follows
for _axis in ("tp", "pp", "cp"):
    _AXIS_WORDS[_axis] += r"|(?<![A-Za-z_\-])" + _axis + r"(?=[ _-]*(?:size|degree|度|大小))"
_WAY = r"(?:-?way|-?路|\s*路|\s*way)"
# "8-way tensor parallel", "4路张量并行", "4 pipeline stages"
_BEFORE_WORD = {axis: re.compile(r"(?<![\d.])(\d{1,4})\s*" + _WAY + r"\s*(?:的)?\s*(?:" + words + ")", _I)
                for axis, words in _AXIS_WORDS.items()}
_BEFORE_WORD["pp"] = re.compile(_BEFORE_WORD["pp"].pattern + r"|(?<![\d.])(\d{1,4})\s*(?:pipeline stages|个?流水线?(?:阶段|stage))",
                                _I)
# "tensor parallel degree 4", "张量并行 4 路", "张量并行度为4", "TP size of 8", "ulysses 8"
_AFTER_WORD = {axis: re.compile(r"(?:" + words + r")\s*(?:size|degree|度数|度|数|大小|规模)?\s*(?:of|is|=|:|：|为|是|设为|设置为|设成|开到)?"
                                r"\s*(\d{1,4})(?![\d.])\s*(?:" + _WAY + r"|ways?)?(?!\s*(?:gpus?|cards?|张|块|卡|台|nodes?|gb|g\b|k\b))", _I)
               for axis, words in _AXIS_WORDS.items()}
# a degree offered as an alternative: a modal or "or"/"add"/"要不要"/"还是" before it, in a question
_WEIGHING = re.compile(r"(?<![a-z])(?:should|would|shall|could|or|instead|add|adding|try|trying|consider|considering|switch(?:ing)? to|"
                       r"go(?:ing)? (?:with|to)|what if|how about|if|whether|versus|vs)(?![a-z])|要不要|是否|还是|能否|可否|试试|考虑|"
                       r"改成|换成|改为|加上|加个|再加|如果|假如|有没有必要|需不需要|需要.{0,4}吗", _I)
# ... or a cue right after it: "TP=8 会不会更好？", "would PP 2 help?", "TP 4 worth it?"
_WEIGHED_AFTER = re.compile(r"[^,，。;；]{0,16}?(?:会不会|会更|好不好|行不行|可不可以|可以吗|有用吗|有必要|合适吗|更好|更快|"
                            r"\bhelp|\bbetter\b|\bworth\b|make sense|\bfaster\b)", _I)
# a lower-case "tp 4" with a space is a degree only where the text speaks of parallelism at all ("cp 4 files" is not)
_PARALLEL_CONTEXT = re.compile(r"parallel|并行|megatron|nemo|torchtitan|(?<![A-Za-z])(?:TP|PP|CP)(?![A-Za-z])", re.A)
_SENTENCE = re.compile(r"[^.!?。！？\n]*[.!?。！？]?", re.A)


@dataclass
class DegreeReading:
    fields: dict[str, int] = field(default_factory=dict)     # tensor_parallel / pipeline_parallel / context_parallel
    spans: dict[str, str] = field(default_factory=dict)      # field -> the text it was read from
    sources: dict[str, str] = field(default_factory=dict)    # field -> "config" | "stated"
    dp_shard: int | None = None                              # torchtitan data_parallel_shard_degree (> 0)
    dp_replicate: int | None = None
    # field -> (degree, span) asked about, not used as the setup (a follow-up's what-if applies it: bot.parse)
    weighed: dict[str, tuple[int, str]] = field(default_factory=dict)
    consumed: list[tuple[int, int]] = field(default_factory=list)

    def world_size(self) -> int | None:
        """dp_replicate x dp_shard x cp x tp x pp, when the data-parallel shard degree is written."""
        if not self.dp_shard:
            return None
        product = self.dp_shard * (self.dp_replicate or 1)
        for axis in ("tp", "pp", "cp"):
            product *= self.fields.get(FIELD_OF_AXIS[axis], 1)
        return product


def _norm_key(key: str) -> tuple[str, str]:
    key = key.strip("\"'-").lower().replace("-", "_")
    return key.rsplit(".", 1)[-1], key


def is_weighed(text: str, start: int, end: int | None = None) -> bool:
    """The figure at ``start:end`` sits in a question with a cue that offers it as an alternative."""
    for s in _SENTENCE.finditer(text):
        if s.start() <= start < max(s.end(), s.start() + 1):
            sentence = s.group(0)
            tail = text[s.end(): s.end() + 3]
            asked = sentence.rstrip().endswith(("?", "？", "吗", "呢")) or tail.lstrip().startswith(("?", "？"))
            after = text[end: s.end()] if end is not None else ""
            return asked and bool(_WEIGHING.search(text[s.start(): start][-60:]) or _WEIGHED_AFTER.match(after))
    return False


def read_degrees(text: str) -> DegreeReading:
    """The degrees ``text`` states (see the module doc); keyed settings before prose forms."""
    out = DegreeReading()

    def put(axis: str, value: int, span: tuple[int, int], source: str) -> None:
        out.consumed.append(span)
        if axis in ("dp_shard", "dp_replicate"):
            if value > 0 and getattr(out, axis) is None:
                setattr(out, axis, value)
            return
        name = FIELD_OF_AXIS[axis]
        if value < 1 or name in out.fields or name in out.weighed:
            return
        raw = text[span[0]: span[1]].strip()
        if is_weighed(text, span[0], span[1]):
            out.weighed[name] = (value, raw)
            return
        out.fields[name], out.spans[name], out.sources[name] = value, raw, source

    for m in _KEYED.finditer(text):
        last, full = _norm_key(m.group(1))
        axis = DEGREE_KEYS.get(last)
        # the words before it on its line, after any earlier key=value setting ("a.rollout.x=4 a.actor.y=2")
        before = re.split(r"=\S*\s+", text[text.rfind("\n", 0, m.start()) + 1: m.start()])[-1]
        if axis is None or _ENGINE_PATH.search(full) or _ENGINE_BEFORE.search(before):
            continue
        if len(last) == 2 and not (text[m.start(): m.start() + 2] == "--" or re.match(r"\s*[:=]", text[m.end(1): m.end(1) + 3])):
            continue  # "tp 4" without a flag or "=": the compact rule below reads it (with its question check)
        put(axis, int(m.group(2)), m.span(), "config" if "_" in last or text[m.start(): m.start() + 2] == "--" else "stated")
    taken = list(out.consumed)

    def free(span: tuple[int, int]) -> bool:
        return not any(a < span[1] and span[0] < b for a, b in taken)

    for m in _COMPACT.finditer(text):
        spaced = m.group(1).islower() and re.match(r"[a-z]{2}\s+\d", m.group(0)) is not None
        if free(m.span()) and not (spaced and not _PARALLEL_CONTEXT.search(text)):
            put(m.group(1).lower(), int(m.group(2)), m.span(), "stated")
    for axis in ("tp", "pp", "cp"):
        for pattern in (_BEFORE_WORD[axis], _AFTER_WORD[axis]):
            for m in pattern.finditer(text):
                value = next((g for g in m.groups() if g), None)
                if value and free(m.span()):
                    put(axis, int(value), m.span(), "stated")
    return out
