"""Training options written as prose, in Chinese or English: precision ("full fp32 (no amp)",
"纯bf16"), the fine-tuning method (LoRA/QLoRA/full, its rank, targets and base dtype, and which
method a run that failed used), the optimizer, activation checkpointing, sequence length,
micro-batch, gradient accumulation and torch.compile.

``read_training(text, out)`` is one of ``bot.understand.prose.read_prose``'s rules: it reads the
same blanked, marker-replaced text and writes into the same ``ProseReading``. A negated option is
not the option ("不用混合精度", "without amp"); two methods joined by a word that compares or
chooses ("LoRA还是全参", "full vs LoRA") are a question, not the run's setup
(``full_said_as_compare``).
"""

from __future__ import annotations

import re

from bot.understand.config import lora_targets_named
from bot.understand.counts import MODEL
from bot.understand.prose_reading import ProseReading
from bot.understand.prose_reading import search as _search
from bot.understand.prose_reading import set_field as _set
from bot.understand.run_roles import LORA_WORD, method_roles

_NEG = r"(?:不用|不要|不开|不是|非|没有|无|no|not|without|instead of|disable[ds]?|关闭|关掉|没开)"


_WEIGHED = re.compile(r"(?:\bor\s+(?:should|shall|do|would|could|can)\s+(?:i|we)\s+(?:just\s+|rather\s+|instead\s+)?"
                      r"(?:do|use|go with|switch to|try|move to|consider)?\s*|\bor\s+(?:just|maybe|rather|instead)\s+(?:use\s+|do\s+)?|"
                      r"\b(?:would|will|could|does)\s+(?=(?:q[-_ ]?lora|lora)\s+(?:be|work|help|fit|save))|\bhow about\s+|\bwhat about\s+|"
                      r"\binstead,?\s+(?:should\s+(?:i|we)\s+)?(?:use\s+)?|还是(?:说)?(?:干脆|直接)?(?:换成|改用|用|上)?|"
                      r"要不要(?:换成|改用|用)|或者(?:干脆|直接)?(?:换成|改用|用)|不如(?:换成|改用|用)?|是不是(?:应该)?(?:换成|改用|用))"
                      + LORA_WORD + r"(?=[^\n。.!！]{0,40}?[?？]|\s*(?:呢|吗|更好|比较好|会不会))", re.I | re.A)
# an alternative considered, said without a question mark: "some alternatives we are considering are just
# doing LoRA", "we're thinking of switching to LoRA", "would switching to LoRA help", "我们也在考虑改用LoRA",
# "打算换成QLoRA" (first-contact batch k): a change weighed, not the run's method
_CONSIDERED = re.compile(r"(?:\balternatives?\b[^\n.;!?]{0,40}?\b(?:is|are|include|including|would be|like)\s+(?:just\s+|simply\s+)?"
                         r"(?:doing|using|going with|switching to|trying)?\s*|"
                         r"\b(?:considering|thinking (?:of|about)|planning (?:on|to)|contemplating)\s+(?:just\s+)?"
                         r"(?:switching|moving|changing|going|falling back)\s+(?:over\s+)?to\s+|"
                         r"\b(?:would|will|could|should)\s+(?:i\s+|we\s+)?(?:just\s+)?(?:switching|moving|changing|falling back)\s+to\s+|"
                         r"(?:考虑|打算|想|准备|计划)(?:过|一下)?(?:要不要)?(?:干脆|直接)?(?:改用|换成|换用|改成|转用|切换到|用))"
                         + LORA_WORD, re.I | re.A)
_BOTH_METHODS = re.compile(r"(q[-_ ]?lora|lora)[\s,，/+]*((?:全参|全量|full)[^\s,，。]{0,12})|"
                           r"((?:全参|全量|full)[^\s,，。]{0,12})[\s,，/+]*(q[-_ ]?lora|lora)(?![^\n]{0,3}(?:呢|吗|\?))", re.I | re.A)


_METHOD = r"(?:q[-_ ]?lora|lora|全参(?:数)?(?:微调)?|全量(?:微调)?|full[- ]?(?:parameter|param)?s?\s*(?:fine-?tun\w*|finetun\w*|ft)?)"
_METHOD_ASKED = re.compile(_METHOD + r"\s*(?:\bor\b|还是|\bvs\.?|versus|或者?)\s*" + _METHOD +
                           r"(?=\s*(?:[?？]|呢|好|更好|which|哪)|[^\n。.!]{0,60}?[?？])", re.I | re.A)


def full_said_as_compare(text: str) -> bool:
    """Two methods joined by a word that compares or chooses ("full vs LoRA", "LoRA还是全参")."""
    return bool(re.search(r"(?:lora|全参|全量|full)[^\n，,。]{0,16}?(?:\bvs\.?|\bor\b|还是|或者?|\bversus\b|\bthan\b|比|对比|instead)"
                          r"[^\n，,。]{0,16}?(?:lora|全参|全量|full)", text, re.I | re.A))


def read_training(text: str, out: ProseReading) -> None:
    low = text.lower()
    # precision: a negated amp/mixed is not mixed precision ("full fp32 (no amp)")
    neg_amp = re.sub(_NEG + r"\s*(?:any\s+)?(?:amp|autocast|mixed[- ]precision|混合精度)", " ", low)
    for pattern, value in ((r"pure\s*_?bf16|纯\s*bf16|bf16\s*only|全\s*bf16|full bf16", "bf16"),
                           (r"\bbf16|bfloat16", "bf16-mixed"),
                           (r"\bfp16|float16|半精度", "fp16-mixed"),
                           (r"\bfp32|float32|全精度|单精度|full precision", "fp32"),
                           (r"混合精度|mixed[- ]precision|\bamp\b|autocast", "bf16-mixed")):
        m = _search(pattern, neg_amp)
        if m:
            _set(out, "precision", value, text[m.start(): m.end()])
            break

    if m := _search(r"8[- ]?bit\s*adam|adam\s*w?\s*8[- ]?bit|adam8bit|paged[_ ]?adam", low):
        _set(out, "optimizer", "adam8bit", text[m.start(): m.end()])
    elif m := _search(r"(?<![a-z])adamw?\b", low):
        _set(out, "optimizer", "adamw", text[m.start(): m.end()])
    elif m := _search(r"\bsgd\b", low):
        _set(out, "optimizer", "sgd", text[m.start(): m.end()])
    if m := _search(r"fused\s*=\s*true|fused adamw|adamw?\s*\(?\s*fused|fused optimizer|融合", low):
        _set(out, "optimizer_impl", "fused", text[m.start(): m.end()])
    if m := _search(r"torch\.compile|torch_compile|--compile\b|\bcompile\s*=\s*true|编译", low):
        if not _search(_NEG + r"\s*(?:torch\.)?compile", low):
            _set(out, "torch_compile", True, text[m.start(): m.end()])

    # a 4-bit (NF4) base: "BitsandbytesPrecision('nf4-dq', ...)", "load_in_4bit", "4bit量化"; with LoRA it is QLoRA
    if (m := _search(r"(?<![a-z])nf4(?![a-z])|bnb[_ ]4bit|load[_ ]in[_ ]4bit|4[- ]?bit quantiz\w*|4\s*bit量化|4位量化", low)) and \
            not _search(_NEG + r"\s*(?:using\s+)?(?:nf4|4[- ]?bit)", low):
        _set(out, "base_dtype", "nf4", text[m.start(): m.end()])
    # method: negated mentions first ("not LoRA or QLoRA" is full fine-tuning)
    negs = list(re.finditer(_NEG + r"\s*(?:(?:specifically|necessarily|really|just|using|doing|any|a|用|做)\s+|用\s*)*"
                            r"(?:q[-_ ]?lora|lora|peft)(?:\s*(?:or|/|和|或|nor|and)\s*"
                            r"(?:q[-_ ]?lora|lora|peft|quantization))*", low, re.A))
    # a method named to be set aside: "lora is not the best option", "lora不适合"
    negs += list(re.finditer(r"(?<![a-z])(?:q[-_ ]?lora|lora|peft)\s*(?:is|was|are|isn'?t|wasn'?t)\s*(?:not|no longer|n't)?\s*"
                             r"(?:the\s+)?(?:best|good|right|an?)?\s*(?:option|choice|enough|suitable|what i want)|"
                             r"(?<![a-z])(?:q[-_ ]?lora|lora|peft)\s*(?:isn'?t|is not|won'?t|will not)\b|"
                             r"(?<![a-z])(?:q[-_ ]?lora|lora|peft)\s*(?:不适合|不行|不够|效果不好|不是最好)", low, re.A))
    negs = [n for n in negs if not re.search(r"(?:is|was)\s*(?:the\s+)?(?:best|good|right)", n.group(0))
            or re.search(r"not|n't|no longer", n.group(0))]
    neg_lora = low
    for n in negs:
        neg_lora = neg_lora[: n.start()] + " " * (n.end() - n.start()) + neg_lora[n.end():]
    full_said = _search(r"全参|全量|full[- ]?(?:parameter|param)|full\s*-?\s*(?:fine|finetun)|全参数", neg_lora)
    alt = _search(r"(?:还是说?|或者|只能|or just|or only)[^\n，,。]{0,10}?(?:q[-_ ]?lora|lora)", neg_lora)
    if full_said and alt:
        neg_lora = neg_lora[: alt.start()] + " " * (alt.end() - alt.start()) + neg_lora[alt.end():]
    # an alternative being weighed in a question is not the setup: "or should I just do LoRA?",
    # "would LoRA be better?", "还是换成LoRA？", "要不要改用LoRA"
    for weighed in [*_WEIGHED.finditer(neg_lora), *_CONSIDERED.finditer(neg_lora)]:
        out.notes.append(("alternative_weighed", {"option": "qlora" if "q" in weighed.group(1).lower() else "lora",
                                                  "span": text[weighed.start(): weighed.end()].strip()}))
        neg_lora = neg_lora[: weighed.start()] + " " * (weighed.end() - weighed.start()) + neg_lora[weighed.end():]
    # the run that failed and the one that worked: "full fine-tune OOMs, LoRA runs fine" asks about
    # the failed one (the working one is what they already have)
    roles = method_roles(neg_lora)
    if roles is None and (asked := _METHOD_ASKED.search(neg_lora)):
        # "LoRA还是全参？", "full fine-tune or LoRA?": the question asks which; neither is the setup
        out.notes.append(("method_asked", {"span": text[asked.start(): asked.end()].strip()}))
        neg_lora = neg_lora[: asked.start()] + " " * (asked.end() - asked.start()) + neg_lora[asked.end():]
    if roles is not None:
        failed, worked, span = roles
        out.notes.append(("failed_run_setup", {"failed": failed, "worked": worked}))
        _set(out, "finetune", failed, span)
    elif (both := _BOTH_METHODS.search(neg_lora)) and not full_said_as_compare(neg_lora):
        # "LoRA full fine-tune": two methods with nothing between them that says which
        g1, g2 = (1, 2) if both.group(1) else (3, 4)
        a, b = (("lora" if "lora" in both.group(g).lower() else "full") for g in (g1, g2))
        if a != b:
            out.contradictions.append(("finetune", (a, b), (text[both.start(g1): both.end(g1)].strip(),
                                                            text[both.start(g2): both.end(g2)].strip())))
    if m := _search(r"q[-_ ]?lora", neg_lora):
        _set(out, "finetune", "qlora", text[m.start(): m.end()])
    elif m := _search(r"(?<![a-z])lora|(?<![a-z])peft(?![a-z])|\bpeft微调", neg_lora):
        _set(out, "finetune", "lora", text[m.start(): m.end()])
    elif m := _search(r"全参|全量|full[- ]?(?:parameter|param)s?\b|full\s*-?\s*(?:fine\s*-?\s*tun|finetun|ft\b|train)|"
                      r"fully fine-?tun|all parameters|\bsft full\b|预训练(?!模型|好)|pre-?train(?:ing)?\b(?!ed)|from scratch|全参数|非lora|"
                      r"\bfull\b(?= (?:sft|fine|finetune|training))|(?<=b )full\b|(?<=[Ḿḿ] )full\b|\bfull(?=\s*(?:[,.)]|$))", neg_lora):
        _set(out, "finetune", "full", text[m.start(): m.end()])
    elif negs:
        _set(out, "finetune", "full", text[negs[0].start(): negs[0].end()])
    if out.fields.get("finetune") in ("lora", "qlora"):
        if (m := _search(r"lora[_\s-]*(?:rank|r)\s*[=:]?\s*(\d{1,5})\b|\brank\s+(\d{1,5})\b", low)) and int(m.group(1) or m.group(2)) > 0:
            _set(out, "lora_rank", int(m.group(1) or m.group(2)), text[m.start(): m.end()])
        if found := lora_targets_named(low):  # "all-linear", a module list, "attention only"
            _set(out, "lora_targets", found[0], found[1])

    seq = _search(r"(?:seq(?:uence)?s?[_ -]?(?:len(?:gth)?)?|context(?: length| size)?|ctx|序列长度|序列|上下文(?:长度)?|"
                  r"max_?len(?:gth)?|cutoff_len|max_seq_len(?:gth)?|block_size|长度)\s*(?:of|is|=|:|为|是|设为|设置为)?\s*"
                  r"(\d{1,7}(?:\.\d+)?)\s*(k)?(?!\d|\.\d)", low)
    if not seq:
        # "200k-token sequences", "32k token context", "8192 tokens 的序列"
        seq = _search(r"(\d{1,7}(?:\.\d+)?)\s*(k)?[\s-]*(?:tokens?[\s-]*)?(?:的\s*)?(?:context|seq(?:uence)?|序列|上下文|ctx|长文本|长度)", low)
    if not seq:  # "samples of 64k tokens", "每条样本 32k token", "单条数据 16k tokens", "每条样本 8192 个 token"
        seq = _search(r"(?:samples?|examples?|documents?|inputs?|样本|数据|文本)\s*(?:of|with|has|have|contains?|is|are|有|长|约|是|为)?"
                      r"\s*(?:about |around |roughly |~|约)?(\d{1,7}(?:\.\d+)?)\s*(k)?[\s-]*个?\s*tokens?", low)
    if not seq:
        # a count of tokens per one sequence ("131072 tokens per sequence", "8k tokens each sample",
        # "每条 4096 个 token"): tokens per step, batch or second are never a sequence length
        seq = _search(r"(\d{1,7}(?:\.\d+)?)\s*(k)?[\s-]*tokens?\s*(?:per|each|every|/|an?|in each|in every)\s*"
                      r"(?:training\s+)?(?:sequences?|samples?|examples?|seqs?|rows?|documents?|inputs?|prompts?)\b", low)
    if not seq:
        seq = _search(r"(?:每条|每个|单条|每段|一条)(?:训练)?(?:样本|数据|序列|文本|输入)?\s*(?:有|长|约|是|为|都是)?\s*"
                      r"(\d{1,7}(?:\.\d+)?)\s*(k)?\s*个?\s*tokens?", low)
    if not seq:
        seq = _search(r"(?<![A-Za-z0-9_.ǤḾ])\d+(?:\.\d+)?\s*b\s+(\d{1,3})\s*(k)\b", low)  # "32B 32K": model then context
    if not seq:
        seq = _search(r"train(?:ing)? with (\d{3,6})\s*(k)?\s*tokens", low)
    if not seq:
        seq = _search("[" + MODEL + MODEL.lower() + "]+" + r"\s*[,，]?\s*(\d{1,3})\s*(k)(?![a-z])", low)  # "Llama3-70B 8K全参数微调"
    if seq:
        tokens = float(seq.group(1)) * (1024 if seq.group(2) else 1)
        _set(out, "seq_len", int(tokens), text[seq.start(): seq.end()])

    batch = _search(r"(?:micro[-_ ]?batch(?:[-_ ]?size)?|mbs|per[-_ ]gpu[-_ ]batch(?:[-_ ]size)?|"
                    r"每卡\s*(?:micro\s*)?batch\s*(?:_?size)?|每卡批(?:大小)?|batch[-_ ]?size|\bbsz|\bbs|批大小|批量大小|batch)"
                    r"\s*(?:of|is|=|:|为|是|开到|设为|改为|改成|设置为|per gpu|==)?\s*(\d{1,6})(?!\d|\.\d)", low)
    if batch and not _search(r"(?:global|全局|total|rollout|eval)[-_ ]?\s*batch", low[max(0, batch.start() - 10): batch.end()]):
        _set(out, "micro_batch", int(batch.group(1)), text[batch.start(): batch.end()])

    if m := _search(r"(?:grad(?:ient)?[-_ ]?accum(?:ulation)?(?:[-_ ]?steps)?|梯度累积|梯度累加|accum(?:ulation)? steps?|\bga(?=\s*[=:]?\s*\d))"
                    r"\s*(?:of|is|=|:|为|是|设为)?\s*(\d{1,6})(?!\d|\.\d)", low):
        _set(out, "grad_accum_steps", int(m.group(1)), text[m.start(): m.end()])
    elif m := _search(r"(\d{1,5})\s*(?:步|steps?)\s*(?:的)?\s*(?:梯度累积|梯度累加|grad(?:ient)? accum)", low):
        _set(out, "grad_accum_steps", int(m.group(1)), text[m.start(): m.end()])

    hypothetical = r"(?:要不要|要开|需要开|是否开|should i|do i need|need)\s*(?:to\s*)?(?:use|enable|开)?\s*"
    if _search(hypothetical + r"(?:activation|gradient|梯度|激活|重计算|checkpoint)", low) or \
            _search(r"(?:重计算|checkpointing|检查点)\s*(?:吗|么)", low):
        low = re.sub(r"activation|gradient|checkpoint|重计算|检查点|recompute", lambda m: " " * len(m.group(0)), low)
    neg_ckpt = _search(_NEG + r"\s*(?:the\s*)?(?:activation|gradient|梯度|激活|重计算|checkpoint|recompute|grad(?:ient)?[ _-]?ckpt)",
                       low)
    if neg_ckpt:
        _set(out, "activation_checkpointing", False, text[neg_ckpt.start(): neg_ckpt.end() + 12])
    elif m := _search(r"checkpointing|梯度检查点|激活检查点|重计算|recompute|activation checkpoint|gradient checkpoint|"
                      r"grad(?:ient)?[ _-]?ckpt|\bac\b", low):
        _set(out, "activation_checkpointing", True, text[m.start(): m.end()])
