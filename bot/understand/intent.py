"""What a question asks: its intent, the topics it is about, and the strategies it compares.

Intents (``bot.understand.Intent``) follow the convention in ``evals/cases/README.md`` ("Intent
labels"): a setup plus "which / can I / should I / is it enough" is ``recommend``; "how many GPUs /
how much memory (显存/内存) do I need / 最低要求" is ``capacity``, also when the same message reports
an OOM; an OOM, a slowdown, a hang or "why" about a run the person did, asking how to fix it, is
``troubleshoot``; a question that needs no setup (what is X, X vs Y in general, is there a way to
do X in FSDP2, how to train on several cards, whether each process keeps its own copy) is
``concept``; inference/serving (also a model's generation speed in tokens/s with no training word),
TPU/JAX/XLA, other frameworks and text that merely contains ML words are ``out_of_scope``.

**The question sentence decides; reported symptoms are context.** ``read_intent`` splits the
person's words into sentences, classifies each question sentence (a question mark, 吗/呢, an
interrogative such as 多少/为什么/how/which, "I would like to know ...") and the last one that has a
class wins. A sentence's class is the first entry of ``QUESTION_CUES`` that applies (a table of cue
classes: pattern, intent, the context flags it needs or is ruled out by), so a rule is a row, never a
branch keyed to one thread. Only a message with no classifiable question falls back on what it
reports (an OOM or a slowdown is troubleshooting) and then on its words as a whole (``FALLBACK_CUES``). ``bot.parse`` applies the same rule
across a conversation: a follow-up without a question keeps the question asked before it.

What is out of scope at all is decided first, by ``bot.understand.scope.scope_of`` (its own module,
with the in-scope vocabulary); the sentence splitting and the question test are
``bot.understand.sentences``'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.understand import TOPICS
from bot.understand.scope import NAN_LOSS, scope_of
from bot.understand.sentences import NOT_OTHERS as _NOT_OTHERS
from bot.understand.sentences import QUESTION as _QUESTION
from bot.understand.sentences import sentences_of

_I = re.I | re.A

_TROUBLE = re.compile(r"out\s*of\s*memory|outofmemory|\boom(?:s|ed|ing)?\b|unable to|cannot (?:run|train|fit|allocate|start)|can'?t (?:run|train|fit|start)|无法|出错|慢很多|慢得多|很慢|"
                      r"fall(?:s)? to|drop(?:s|ped)? to|decreas|why my|为什么我|爆显存|显存不足|显存不够|显存溢出|超出显存|内存不够|溢出|跑不动|跑不起来|"
                      r"跑不通|没跑通|报错|error|fail(?:s|ed|ing)?\b|crash|(?<![a-z])hang|卡住|卡死|卡在|卡着|一直卡|不动了|一动不动|\bstuck\b|freez(?:e|es|ing)\b|\bfroze\b|deadlock|慢了|变慢|更慢|特别慢|非常慢|太慢|比.{0,12}慢|slower|too slow|"
                      r"much slower|speed (?:is|was) (?:low|slow)|\b(?:is|was|are|were|seems?|runs?|got) (?:very |so |really |extremely |quite |too |"
                      r"pretty |super )?slow\b|速度.{0,8}(?:慢|相同|一样|下降)|throughput.{0,20}(?:drop|lower|low)|"
                      r"lower throughput|significant difference in throughput|not reduc|doesn'?t reduc|does not reduc|"
                      r"higher (?:gpu )?memory|more memory than|same amount of memory|显存占用(?:异常|很大|超出)|"
                      r"占用.{0,6}(?:异常|很大|过高|超出预期)|超出预期|异常|is that expected|is this normal|正常吗|是正常的吗|"
                      r"这正常吗|memory (?:usage|consumption) (?:is|was) (?:high|huge)|peak|how (?:can|do) i (?:adjust|reduce)|"
                      r"why (?:is|does|do)|为什么.{0,20}(?:慢|高|多|oom|爆|还会)|secret to fast|怎么优化|how to (?:speed|fix)|"
                      r"突然|memory is insufficient|not enough|显示内存不够|insufficient|速度.{0,12}(?:原来|下降)", _I)
# a question about how something works, even if it also mentions a slowdown or memory
_CONCEPT_STRONG = re.compile(r"原理|what(?:'s| is) the difference|区别是什么|有什么区别|why do we need|what does .{1,40} do\b|"
                             r"how does .{1,40} work|how is .{1,60} achieved|如何实现|是什么意思|会慢多少|慢多少|"
                             r"switch between|what is\b|what are\b|有啥意义|有什么意义|有什么用|what'?s the point|为什么推荐|why (?:is|do you) recommend", _I)
_STRATEGY_ENOUGH = re.compile(r"(?:ddp|fsdp|zero[- ]?\d?|deepspeed)\s*(?:够吗|够不够|够用吗|enough|行吗|可以吗|就够了吗)", _I)
_CAPACITY = re.compile(r"how many (?:gpus?|cards?|a100s?|h100s?|nodes?|blocks|machines)|how much (?:gpu |training )?"
                       r"(?:memory|vram|resources?|显存)|minimum (?:number|gpu|requirement|hardware)|minimum requirements?|"
                       r"requirements?\b|需要(?:几|多少)|要几|几张|几台|多少(?:张|块|卡|显存|资源|台)|最少|至少需要|最低配置|"
                       r"够吗|够不够|够用吗|能跑吗|可以跑吗|跑通了?吗|跑得动|跑得起来|有机会吗|没机会|"
                       r"(?:能|可以|能不能)\s*(?:支持)?\s*(?:进行)?[^，,。？?\n]{0,40}?"
                       r"(?:训练|微调|跑|train|fine-?tun|finetun)[^。\n]{0,24}(?:吗|嘛|呢|\?|？)|"
                       r"(?:可否|能否|是否能|是否可以|是否支持|能不能)[^。\n]{0,40}?(?:训练|微调|跑|train|fine-?tun|finetun|lora|qlora|全参)|"
                       r"会\s*oom吗|会爆显存吗|will it (?:oom|fit)|"
                       r"enough|suffic|is it possible|can i (?:train|fine-?tune|finetune|do|run)|"
                       r"can .{0,40}(?:train|fine-?tune|finetune|run)\b|will it fit|does it fit|fit(?:s)? (?:on|in|into)|"
                       r"which size of the model|显存怎么算|how much .{0,20}need|需要多少资源|多少资源", _I)
_CONCEPT = re.compile(r"what(?:'s| is| are| does)\b|difference|区别|差别|原理|是什么|什么意思|how does|how do .{0,20} work|"
                      r"explain|vs\.?|versus|compare|对比|区别是什么|有什么(?:额外的)?优势|何时|什么时候用|when (?:is|should)|"
                      r"map\b|怎么用|how to use|does .{0,30} work with|why do we need|specific reason|还是.{0,6}[？?]?$", _I)
_RECOMMEND = re.compile(r"ddp (?:or|还是|vs) fsdp|fsdp (?:or|还是|vs) ddp|which strategy|哪种|哪个|用啥|选哪|该选|怎么选|"
                        r"should i use|do i need (?:fsdp|ddp)|还是|用什么|用哪|策略|合理吗|right here|\?$|？$", _I)

_TOPIC_RULES: list[tuple[str, str]] = [
    ("fsdp1_vs_fsdp2", r"fsdp\s*1\b.*fsdp\s*2|fsdp\s*2\b.*fsdp\s*1|fully_shard|fsdp2"),
    ("shard_grad_op_vs_full_shard", r"shard_grad_op|zero[- ]?2.{0,30}zero[- ]?3|zero[- ]?3.{0,30}zero[- ]?2|zero2.{0,30}zero3|"
                                    r"reshard_after_forward"),
    ("zero_vs_fsdp", r"(?:zero|deepspeed|deepseed).{0,60}fsdp|fsdp.{0,60}(?:zero|deepspeed|deepseed)"),
    ("hybrid_shard", r"hybrid[_ ]?shard|\bhsdp\b"),
    ("activation_checkpointing", r"activation checkpoint|gradient checkpoint|重计算|梯度检查点|激活检查点|checkpointing\?"),
    ("ddp_memory_knobs", r"gradient_as_bucket_view|bucket[_ ]view|fused adamw|ddp.{0,20}(?:oom|显存|memory)"),
    ("fsdp_slower_than_ddp", r"fsdp.{0,40}(?:slower|慢)|(?:slower|慢).{0,40}fsdp|ddp.{0,80}fsdp.{0,80}throughput|"
                             r"throughput.{0,80}(?:ddp|fsdp)"),
    ("multi_node_slow", r"(?:two|2|多|双|两)\s*(?:nodes?|机|台).{0,40}(?:slower|慢)|(?:slower|慢).{0,40}(?:single|one|1|单)[ -]?"
                        r"(?:node|机)|multi-?node.{0,80}slow|slow (?:on|with|in|for|when using|using) multi-?node|"
                        r"nodes? (?:is|are) (?:significantly )?slower|多机多卡.{0,20}(?:速度|慢)|"
                        r"速度.{0,20}(?:多机|双机)|比单机慢|比一台还慢"),
    ("oom", r"out of memory|\boom\b|爆显存|显存不足|显存不够|显存溢出|超出显存"),
    # LlamaFactory#350 "显存没有因为分割而变小", #3841 "增加卡的数量，每一张卡的显存占用不变",
    # #5972 "单卡和多卡内存消耗几乎一样"
    ("memory_not_divided", r"(?:显存|内存|占用)[^。？?\n]{0,16}(?:没有?因为分[割片]而变小|(?:几乎|基本)?(?:一样|一致|不变|没变)(?![a-z]))|"
                           r"单卡和多卡[^。？?\n]{0,12}(?:一样|差不多|一致)|卡越多[^。？?\n]{0,40}(?:不变|一样|没变)|"
                           r"(?:增加|加)(?:了)?卡[^。？?\n]{0,30}(?:显存|占用)[^。？?\n]{0,10}(?:不变|一样|没变|没有?(?:减少|下降|变小))|"
                           r"memory (?:usage )?(?:per gpu )?(?:does ?n[o']t|did ?n[o']t|is ?n[o']t|is not|does not|did not) "
                           r"(?:decrease|drop|go down|reduce|shrink|scale)|same memory (?:on|with|per|usage)|"
                           r"(?:more|adding|additional) gpus?[^.?\n]{0,40}(?:same|no less|not reduce|doesn'?t reduce) memory|"
                           # fairscale#1050 "FSDP consumes the same amount of memory as DPP", #1163 "FSDP ...
                           # requires more memory than DataParallel", pytorch#108976 (DP lower than FSDP)
                           r"(?:fsdp|zero-?3?)[^.?\n]{0,40}(?:uses?|requires?|consumes?|takes?|needs?|using)[^.?\n]{0,12}"
                           r"(?:more|the same|same|similar|no less)(?: amount of)?(?: gpu)? memory|"
                           r"memory[^.?\n]{0,30}(?:lower|less)[^.?\n]{0,30}than (?:with |in )?fsdp|"
                           r"fsdp[^。？?\n]{0,20}(?:比|和)[^。？?\n]{0,12}(?:ddp|dp)[^。？?\n]{0,10}(?:更占|还占|更多|一样)[^。？?\n]{0,4}(?:显存|内存)?"),
    ("grad_accumulation", r"gradient accumulation|梯度累积|梯度累加|no_sync|grad(?:ient)?[_ ]accum"),
    ("cpu_offload", r"offload|卸载"),
    ("lora", r"lora|peft"),
    ("multi_model_rl", r"\bppo\b|\bgrpo\b|\bdpo\b|\brloo\b|rlhf|(?<![a-z])actor(?![a-z])|(?<![a-z])critic(?![a-z])|reward model|reference model|deepspeed chat|"
                       r"rlhf_type|num_generations|ref_num|reward_funcs"),
    ("moe", r"\bmoe\b|mixture of experts|mixtral|expert parallel|专家"),
    # the ways a count is asked: "how many H100 cards", "how many 4090s", "需要多少显卡", "几块卡", "多少台机器"
    ("how_many_gpus", r"how many (?:(?:more|of these|of those|[a-z]*\d+[a-z]*)\s+)?(?:gpus?|cards?|a100s?|h100s?|blocks|nodes|machines|servers)|"
                      r"how many [a-z]*\d+[a-z]*s\b|需要几张|几张|几台|几块|几个(?:gpu|卡|显卡|节点|机器)|多少张|多少块|多少台|"
                      r"多少(?:个|张|块)?(?:显卡|卡|gpu)|最少要多少|minimum number"),
    ("communication", r"communication|通信|bandwidth|带宽|all-?reduce|all-?gather|reduce-?scatter|nvlink|infiniband"),
    ("mixed_precision", r"mixed precision|混合精度|\bamp\b|grad scaler|loss scal"),
    ("torch_compile", r"torch\.compile|torch_compile|--compile\b"),
    ("inference", r"vllm|\btgi\b|推理|inference|serving|部署"),
]
_TOPIC_RES = [(t, re.compile(p, _I)) for t, p in _TOPIC_RULES]
assert all(t in TOPICS for t, _ in _TOPIC_RULES)

_STRATEGY_WORDS = [
    ("fsdp_shard_grad_op", r"shard_grad_op|zero[- ]?2\b|zero[- ]?stage[- ]?2|zero2\b"),
    ("fsdp_full_shard", r"full[_ ]shard|fully sharded|zero[- ]?3\b|zero[- ]?stage[- ]?3|zero3\b|\bfsdp(?!\s*2| ?1)\b"),
    ("fsdp_hybrid_shard", r"hybrid[_ ]shard|\bhsdp\b"),
    ("ddp", r"\bddp\b|distributeddataparallel"),
]
_JOIN = r"\s*(?:\bor\b|还是|\bvs\.?|versus|和|与|/|或者?|对比)\s*"


def topics_of(text: str) -> list[str]:
    return [t for t, r in _TOPIC_RES if r.search(text)]


def compare_of(text: str) -> tuple[str, ...]:
    """Two strategies the question asks to choose between ("DDP or FSDP", "ZeRO-2 还是 ZeRO-3",
    "SHARD_GRAD_OP vs FULL_SHARD"): two strategy names joined by or/还是/vs, in the order written."""
    mentions: list[tuple[int, int, str]] = []
    for sid, pat in _STRATEGY_WORDS:
        for m in re.finditer(pat, text, _I):
            mentions.append((m.start(), m.end(), sid))
    mentions.sort()
    for (s1, e1, a), (s2, _e2, b) in zip(mentions, mentions[1:], strict=False):
        if a != b and re.fullmatch(_JOIN + r"(?:pytorch\s*|deepspeed\s*|torch\s*)?", text[e1:s2], _I) and \
                not re.search(r"(?:不管是|无论是?|whether|either)\s*$", text[max(0, s1 - 8): s1], _I):
            return (a, b)
    return ()


# "Should I use HYBRID_SHARD?", "要不要用 ZeRO-3": one strategy asked about, yes or no.
_ASK_ONE = re.compile(r"(?:should (?:i|we) (?:use|go with|switch to|try|enable)|is it worth (?:using|trying)?|"
                      r"do (?:i|we) need|worth (?:using|trying)|要不要(?:用|上|开|换成?)?|该不该(?:用|上)?|需不需要|"
                      r"有没有必要(?:用|上)?|值不值得(?:用)?|建议(?:用|上)吗?)\s*(?:the\s+|pytorch\s*|deepspeed\s*)?$", _I)
_OFFLOAD_WORD = ("fsdp_full_shard_offload", r"cpu[_ ]?offload|offload")


# "Is it enough?", "Can I train X on Y?": a yes/no about whether the setup can train at all.
_FEASIBLE_Q = re.compile(r"够吗|够不够|够用吗|足够吗|放得下吗|跑得动吗|跑得起来吗|能不能[^？?。\n]{0,30}?(?:训|跑|微调|放|练)|"
                         r"(?:能|可以|能否)[^？?。\n]{0,30}?(?:训练?|跑|微调|放下|放得下|练)[^？?。\n]{0,12}?[吗嘛么呢]|"
                         r"\benough\b|suffic|is (?:it|this|that) possible|possible to|"
                         r"(?:can|could) (?:i|we|it|one) (?:(?:pre-?)?train|fine-?tune|finetune|run|fit)|"
                         r"(?:will|would|does|do) (?:it|this|that|they) fit", _I)


def asks_feasibility(text: str) -> bool:
    """The question asks whether the setup can train at all ("够吗", "Can I fine-tune 13B on ...?")."""
    return bool(_FEASIBLE_Q.search(text))


# "Can I train X on Y with plain DDP?", "能不能用 DDP 训": the strategy named as the means of a
# can-I question (with / using / via / 用 / 使用 / 采用, a few words before the name)
_MEANS = re.compile(r"(?:\b(?:with|using|via|through|by)\b|用|使用|采用|通过|上)\s*(?:(?:just|only|plain|vanilla|pure|"
                    r"simple|the|pytorch|deepspeed|torch)\b\s*|(?:普通的?|单纯的?|纯|只用|的)\s*)*$", _I)


def asked_strategy(text: str) -> str | None:
    """The one strategy a yes/no question asks about ("Should I use HSDP for ...?", "Can I train
    it with plain DDP?"), else None (two strategies joined by or/vs are a comparison: ``compare_of``)."""
    if compare_of(text):
        return None
    feasibility = asks_feasibility(text)
    for sid, pat in [*_STRATEGY_WORDS, _OFFLOAD_WORD]:
        for m in re.finditer(pat, text, _I):
            before = text[max(0, m.start() - 40): m.start()]
            if _ASK_ONE.search(before) or feasibility and _MEANS.search(before):
                return sid
    return None


# how to fix a run, or why it failed / is slow
_FIX_Q = re.compile(r"为什么|为啥|是什么原因|什么原因|原因是|\bwhy\b|how (?:can|do|should|could) (?:i|we) (?:fix|solve|avoid|resolve|speed|"
                    r"make it|get rid|adjust|reduce|lower)|how to (?:fix|solve|avoid|resolve|speed up|deal with|get rid)|"
                    r"any (?:solutions?|ideas?|fix(?:es)?|suggestions?|workarounds?|advice|hints?)|solutions? for|怎么办|咋办|"
                    r"(?:如何|怎么|怎样|怎么样)(?:才能)?(?:解决|处理|优化|避免|加速|提速|修复|修正|排查)|有没有(?:什么)?(?:办法|方法)|有什么(?:办法|方法|解决)|"
                    r"有办法|哪里出(?:现)?了?问题|什么问题|what(?:'s| is) (?:wrong|the (?:problem|issue|reason|cause))|"
                    r"is (?:this|that|it) (?:normal|expected)|(?:if|whether) (?:this|that|it) is (?:normal|expected)|正常吗|是正常的|这正常吗|"
                    r"what (?:am i|are we|did i|did we) (?:do(?:ing)? wrong|did wrong|miss(?:ing)?)|"
                    r"what (?:could|might) (?:cause|be)|what causes|i(?:'m| am)? wonder(?:ing)? why|doesn'?t work as expected|"
                    r"speed (?:it |things |training )?up|to speed|加速|提速|出错|哪个地方|什么地方|哪里.{0,4}(?:错|问题)|(?:哪里|哪儿|哪|什么地方)(?:做|设置?|配置?|写)?得?不对|"
                    r"(?:怎样|怎么|如何)[^？?。]{0,40}(?:不报错|不出错|不再报错|不oom|不爆显存)|"
                    r"how (?:can|do|could|to) [^?.]{0,40}without (?:the |an |this |any )?(?:\w+ ){0,2}(?:error|oom|crash|exception)|"
                    r"what (?:might|could|would) (?:this |that |it )?(?:cause|be causing)|what should (?:i|we) (?:change|do|try|modify|set)|"
                    r"what (?:can|do) (?:i|we) (?:change|do|try)|应该怎么(?:改|调|办|设置)|该怎么(?:改|调|办)", _I)
# "why" asked about how things behave in general (no run, setup or symptom of the person's) is a concept
_WHY = re.compile(r"为什么|为啥|\bwhy\b|是什么原因|什么原因|原因是", _I)
# a quantity asked for: GPUs, memory, resources
_CAPACITY_Q = re.compile(r"how many|how much|(?:what|which) amount of|多少|" + _NOT_OTHERS + r"(?:几张|几台|几块)|几个(?:gpu|卡|节点|机器)|要几|多大|最低|至少需要|最少需要|最少要|至少要|"
                         r"minimum|requirements?\b|硬件(?:条件|要求|需求)|配置要求|(?:需要|要)什么(?:样的)?(?:硬件|显卡)|"
                         r"怎样的(?:配置|资源)|什么(?:样的)?配置|哪些资源|怎么算|how (?:to|do i) (?:calculate|estimate)|"
                         r"which size|what size|how (?:big|large) (?:a|of a)? ?model|"
                         r"need\w*\s+(?:\d+|two|three|four|eight|sixteen)\s+(?:nodes|gpus|cards|machines|servers)|"
                         r"需要\s*\d+(?:\.\d+)?\s*(?:g|gb|t|tb)?\s*的?\s*(?:内存|显存)|(?:内存|显存)占用|memory (?:usage|footprint|requirements?)", _I)
# whether one card is enough or several are required: a quantity of cards asked, not a strategy to choose
# ("must it run on several cards", "is one GPU enough", "必须多卡吗", "一张卡够吗") (first-contact batch f)
_CARDS_NEEDED_Q = re.compile(
    r"\b(?:must|has to|have to|need to|needs to)\s+(?:it\s+|this\s+|training\s+|i\s+|we\s+)?(?:be\s+)?(?:run|train\w*|fine-?tun\w*|done)?\s*"
    r"(?:on|with|across)\s+(?:several|multiple|many|more than one|two or more)\s+(?:gpus|cards|devices)|"
    r"\bonly\s+(?:be\s+)?(?:run|train\w*|work|fine-?tun\w*)\s+(?:on|with)\s+(?:several|multiple|many|more than one)\s+(?:gpus|cards)|"
    r"\brequires?\s+(?:more than one|several|multiple|two or more)\s+(?:gpus?|cards?)|"
    r"\b(?:is|are|would)\s+(?:one|a single|1|just one|a)\s+(?:\S+\s+){0,3}?(?:gpu|card)s?\s+(?:be\s+)?enough|"
    r"\b(?:one|a single)\s+(?:\S+\s+){0,3}?(?:gpu|card)\s+(?:is\s+)?(?:enough|sufficient)|"
    r"(?:必须|一定要|只能|非得|得|需要|要)(?:用)?\s*(?:多卡|多张卡|多块卡|多个gpu|多gpu|多机)|"
    r"(?:一张|一块|单张|单块|单卡)[^，,。？?；;\n]{0,20}?(?:够吗|够不够|够用吗|足够吗|能跑吗)", _I)
# can my setup do it / which option
_CAN_Q = re.compile(r"can (?:i|we|it|this|one)|could (?:i|we|it)|\b(?:can|could)\b.{0,60}?\b(?:train|fine-?tune|finetune|run|fit|handle|"
                    r"hold|support)\b|is (?:it|this|that) possible|possible to|是否(?:可以|能)|能否|可否|"
                    r"能不能|可不可以|可以[^？?。\n]{0,40}?[吗嘛么呢]|能[^？?。\n]{0,40}?[吗嘛么呢]|有机会|跑通|够吗|够不够|够用吗|足够吗|"
                    r"\benough\b|suffic|will (?:it|this|that) (?:fit|work|oom|run)|would (?:it|this|that) (?:fit|work|oom)|"
                    r"would [^?.。？]{1,40}? fit\b|要不要|该不该|需不需要|有没有必要|值不值得|is it worth|"
                    r"(?:does|do|will) (?:it|this|that|they) fit|fits? (?:on|in|into|onto)|会\s*oom吗|会爆显存吗|\bwhich\b|哪种|哪个|选哪|"
                    r"用什么|用哪|用啥|should (?:i|we)|do (?:i|we) need|行吗|行不行|可行|怎么做|如何(?:做|进行)|"
                    r"how (?:do|can|should) (?:i|we) (?:train|fine-?tune|finetune|do|run|set ?up)|"
                    r"(?:ddp|fsdp|hsdp|zero[- _]?\d?|deepspeed|lora|qlora|offload|shard\w*|megatron)\s*(?:\bor\b|还是|vs\.?|/)", _I)
# a question about how something works or what a tool offers (no run of theirs needed)
_CONCEPT_Q = re.compile(r"what(?:'s| is| are| does)\b|difference|区别|差别|原理|是什么|什么意思|how does|how do .{0,30} work|explain|"
                        r"\bvs\.?\b|versus|compare|对比|are there (?:any )?plans|plans? to|is there (?:a |an |any |some )?(?:other )?"
                        r"(?:way|option|plan|support|equivalent|api|flag|setting)|is there no|parity|support(?:s|ed)?\b|是否支持|支持.{0,10}[吗么]|"
                        r"how (?:do|can) (?:i|we|you) (?:turn|enable|disable|use|set|configure|specify|switch)|how to (?:use|enable|disable|set|"
                        r"configure|turn|specify|switch)|怎么(?:用|开启|关闭|设置|配置)|如何(?:使用|开启|关闭|设置|配置)|how is .{1,60} achieved", _I)
_CHOICE = re.compile(r"\bwhich\b|哪种|哪个|选哪|用什么|用哪|用啥|should (?:i|we)|do (?:i|we) need|怎么做|如何(?:做|进行)|"
                     r"\brecommend(?:ations?|ed)?\b|推荐|建议|"
                     r"how (?:do|can|should) (?:i|we) (?:train|fine-?tune|finetune|do|run|set ?up)|"
                     r"(?:ddp|fsdp|hsdp|zero[- _]?\d?|deepspeed|lora|qlora|offload|shard\w*|megatron)\s*(?:\bor\b|还是|vs\.?|/)", _I)
_OWN_RUN = re.compile(r"\bi\b|\bmy\b|\bwe\b|\bour\b|我", _I)
_FEATURE = re.compile(r"it would be (?:beneficial|nice|great|useful|helpful|good)|feature request|\[feature|would like to (?:see|have)|"
                      r"\bpropos|建议(?:增加|支持)|希望(?:能)?支持|discussion:|^discussion\b", _I)
# symptoms of a run the person did (context for a question; the intent when nothing is asked)
_SYMPTOM = re.compile(r"out of (?:gpu |cuda )?memory|can ?not load|couldn'?t load|unable to load|慢于|奇怪|占满|满了|"
                      r"(?:slower|faster) than|比.{0,16}(?:快|慢)|速度.{0,10}(?:快|慢)|"
                      # the loss went NaN/inf: a run's failure (in scope on a multi-GPU launch, bot.understand.scope)
                      + NAN_LOSS.pattern, _I)
@dataclass
class IntentReading:
    intent: str
    asked: bool = False     # a question sentence decided it
    symptom: bool = False   # the message reports a failure or slowdown
    # "can I do it on <card>?" (not "which one?"): with no GPU count anywhere in the conversation the
    # answer is a number of GPUs, so bot.parse makes it capacity ("Can we use A100 40G to finetune 7B?")
    can_question: bool = False


# Two versions of one API asked about: the answer is about the APIs, whatever the setup
_API_VERSIONS = re.compile(r"fsdp\s*-?\s*1\b.{0,40}?fsdp\s*-?\s*2\b|fsdp\s*-?\s*2\b.{0,40}?fsdp\s*-?\s*1\b|"
                           r"fully_shard\b.{0,40}?FullyShardedDataParallel|FullyShardedDataParallel.{0,40}?fully_shard\b|"
                           r"(?:old|new|旧|新)(?:er)?\s*(?:版)?\s*fsdp.{0,30}?(?:old|new|旧|新)(?:er)?\s*(?:版)?\s*fsdp", re.I | re.A | re.S)


# --- the cue table: which class of question a sentence asks -------------------------------------
# One strategy's counterpart in the other library ("what is FSDP's equivalent of ZeRO-2?", "FSDP的哪个策略
# 对应ZeRO-2？", "ZeRO-3 在 FSDP 里叫什么"): how the two map, whatever setup the message also states
# (first-contact batch j). A strategy word with a word of correspondence ("is FULL_SHARD the FSDP
# equivalent of it?"); not a choice between them ("FSDP or its ZeRO-3 equivalent, which is faster?").
_DS_WORD = r"(?:zero[- _]?(?:stage[- _]?)?[0-3]?\b|deepspeed|deep speed)"
_TORCH_WORD = r"(?:fsdp2?|fully_shard|shard_grad_op|full_shard|hybrid_shard|no_shard|hsdp|\bddp\b|sharding[_ ]strategy)"
_CORRESPOND = (r"(?:equivalent|counterpart|analog(?:ue)?|correspond\w*|maps? (?:on)?to|mapping|the same (?:thing )?as|same as|"
               r"identical to|called in|叫什么|对应|相当于|等价|等同|等效|对标|是同一个|一样吗)")
_STRATEGY_EQUIVALENT = re.compile(r"^(?=.*?" + _CORRESPOND + r")(?=.*?(?:" + _DS_WORD + "|" + _TORCH_WORD + r"))"
                                  r"(?!.*?(?:\bor\b|还是|\bvs\.?|versus|faster|slower|better|worse|更快|更慢|更好|更省|选哪|用哪|"
                                  r"which one|should (?:i|we)\b))", _I | re.S)
# How batch size or learning rate follow the number of GPUs ("how should batch size and learning rate change
# when I go to two GPUs?", "换成4卡后学习率要怎么调？", "多卡训练时batch size要除以卡数吗"): how data
# parallelism scales the global batch, a concept even when the message states the setup (batch j)
_HYPERPARAMS = r"(?:learning[- _]?rate|\blr\b|学习率|batch[- _]?size|\bbs\b|批大小|批量大小|批次大小|global batch|effective batch)"
_GPU_CHANGE = (r"(?:\b(?:go|going|goes|went|move|moving|switch|switching|scale|scaling|change|changing|increase|increasing|expand|"
               r"expanding|upgrade|upgrading)\s+(?:up\s+)?(?:from\s+\S+\s+(?:gpus?\s+)?)?to\s+(?:\d+|two|three|four|eight|sixteen|more|"
               r"multiple|several)\s*(?:x\s*)?(?:\S+\s+)?(?:gpus|cards|devices|nodes)|"
               r"\b(?:with|on|using|across|over)\s+(?:\d+|two|three|four|eight|sixteen|multiple|more|several)\s+(?:gpus|cards|devices)|"
               r"\bnumber of (?:gpus|cards|devices)|\bmore gpus|\bmulti-?gpu|\bper[- ](?:gpu|device)|\bworld[_ ]size|"
               r"(?:换成|改成|变成|换到|扩到|扩展到|增加到|加到|用)\s*(?:\d+|[两二三四五六七八十双多])\s*(?:张|块)?\s*(?:卡|gpu|GPU|显卡)|"
               r"多卡|双卡|多机|卡数|几张卡|(?:\d+|[两二三四五六七八十])\s*(?:张|块)?\s*(?:卡|gpu|GPU)(?:训练)?(?:后|时|的时候|之后|以后))")
# One strategy faster or better than another for the setup the message states ("Is DeepSpeed faster than DDP
# on 4 x 8 A100?", "8张A100训练7B，FSDP比DDP快吗？"): a choice for that setup, recommend; without a setup, or
# between cards ("Is an H100 faster than an A100 for 7B?"), a comparison in general; "why is ZeRO-3 slower
# than ZeRO-2?" asks about the run (the why cues decide)
_STRAT = r"(?:\bddp\b|fsdp2?|deepspeed|deep speed|zero[- _]?(?:stage[- _]?)?[0-3]\b|\bhsdp\b|full_shard|shard_grad_op|megatron)"
_STRATEGY_FASTER = re.compile(r"^(?!.*?(?:\bwhy\b|\bhow come\b|为什么|为啥|什么原因|原因))(?=.*?(?:"
                              + _STRAT + r"[^.?!。？！\n]{0,60}?\b(?:faster|slower|quicker|better|worse|more efficient|cheaper)\s+than\s+"
                              r"(?:(?:plain|vanilla|pure|simple|pytorch|the|using|with)\s+)*" + _STRAT + "|"
                              + _STRAT + r"\s*(?:会|要|能)?\s*比\s*(?:用)?\s*" + _STRAT + r"\s*(?:更|还|要)?\s*(?:快|慢|好|省|高效)))",
                              _I | re.S)
_SCALING_Q = re.compile(r"^(?=.*?" + _HYPERPARAMS + r")(?=.*?" + _GPU_CHANGE + r")", _I | re.S)

# Cues the rules above do not cover, each a class of wording (never one thread's sentence):
# the person asks what went wrong in their run ("what is the problem?", "问题出在哪里")
_PROBLEM_Q = re.compile(r"what(?:'s| is) (?:wrong|the (?:problem|issue|cause))|问题出在哪|哪里出(?:现)?了?问题|出了什么问题|"
                        r"怎么回事|是怎么(?:错误|出错|回事)|(?:什么|啥)错误|"
                        r"what (?:am i|are we|did i|did we) (?:do(?:ing)? wrong|did wrong|missing)|"
                        r"what (?:i|we) (?:am|are|did|was|were) (?:do(?:ing)? )?wrong", _I)
# a knob to change, or the working setup asked for, after a failure ("Should I adjust some NCCL
# parameters?", "Are there any parameters we need to set?", "How can I enable more than one GPU?",
# "can you share your config?", "需要设置什么参数"): with a reported symptom, a fix. Not "should I switch
# to FSDP?" after an OOM: a strategy asked for is recommend (evals/cases/README.md, Intent labels)
_KNOB_Q = re.compile(r"should (?:i|we) (?:adjust|change|tune|set|tweak|modify|increase|decrease|raise|lower|add|enable|disable)\b|"
                     r"(?:are|is) there (?:any |some )?(?:parameters?|settings?|options?|flags?|env(?:ironment)? var\w*|configs?)"
                     r"[^.?]{0,30}(?:need|have|should|must) to (?:set|change|add|pass)|"
                     r"how (?:can|do|should|could) (?:i|we) (?:enable|use|make (?:it|this) use|get (?:it|this) to use|utili[sz]e|"
                     r"run on|train on) (?:more than one|multiple|all(?: the)?|several|both|the other|\d+|two|four|eight) "
                     r"(?:gpus?|cards?|devices?)|"
                     r"(?:share|provide|post|send) (?:your|the|a) (?:\w+ ){0,2}(?:config\w*|settings|script|command|yaml|json|setup)|"

                     r"(?:需要|要)(?:设置|修改|调整|加)(?:什么|哪些)(?:参数|配置)?|(?:分享|提供|发)(?:一下)?(?:你们?的)?(?:配置|脚本|参数)|"
                     # after a symptom, how to set things so it goes away ("怎么设置才能用到其他卡",
                     # "如何设置能保持显存不变", "how do I keep it stable", "can it be held at a constant value")
                     r"(?:如何|怎么|怎样)(?:设置|配置)(?:才能|才可以|能|可以|使得|使|让)|(?:怎么|如何|怎样)(?:才能|才可以|能)?(?:用到|用上|利用起?)"
                     r"(?:其他|其余|别的|所有|全部|多张|多块|这些|[0-9,，、\s]+)|"
                     r"how (?:do|can|could|should) (?:i|we) (?:keep|hold|make) (?:it|this|the memory|memory|vram|usage)\b[^.?!\n]{0,12}"
                     r"\b(?:stable|steady|constant|fixed|flat)|\b(?:held|kept|fixed|pinned) (?:at|to) (?:a )?(?:constant|fixed|steady|stable)|"
                     # an option asked of the project after a failure ("can you add a batch-size flag", "能不能提供一个调batch_size的参数")
                     r"\b(?:add|provide|expose) (?:a|an) (?:\S+ ){0,3}(?:option|flag|parameter|argument|knob|setting)\b|"
                     r"\b(?:is|are) there (?:any |some )?(?:parameters?|settings?|options?|flags?)\b[^.?!\n]{0,40}\b(?:missed|help|reduce|lower|fix)|"
                     r"(?:提供|加|增加|添加|给)(?:一个|个)?[^。？?！\n]{0,12}(?:参数|选项|开关)", _I)
# how to raise or improve something, after a symptom ("how can I improve the GPU utilization?",
# "怎么提高利用率", "any way to make it faster?"): a fix for the run, not advice on a setup
_IMPROVE_Q = re.compile(r"\bimprov(?:e|ing)\b|\bincreas(?:e|ing)\b|\braise\b|\bboost\b|make (?:it|this|training|them) faster|"
                        r"提高|提升|改善|优化|加快|充分利用|利用起来", _I)
# ways to save memory: a fix where a run failed, otherwise advice on the setup (ranked with it)
_SAVE_Q = re.compile(r"(?:any|some|another|other) (?:other )?ways? to (?:save|reduce|lower|cut|avoid)|save (?:gpu |cuda )?memory|"
                     r"节省显存|省显存|降低显存|减少显存", _I)
# a design choice asked about: how a tool or a project is built ("Why use FSDP instead of DeepSpeed?",
# "why do you only use one GPU in this example?", "why is X adopted?", "why not simply ...", "为什么要用 X")
_DESIGN_WHY = re.compile(r"\bwhy (?:use|choose|pick|prefer|adopt|did you|do you|would you|is \S+(?: \S+){0,4} "
                         r"(?:adopted|used|chosen|preferred|recommended|needed|required)\b|not (?:simply|just))|\bexplain why|"
                         r"为什么(?:要|选择|采用)|为何(?:要|采用|选择)", _I)
# the project's own model or code asked about ("Is it possible to train your model with DDP?"): no setup needed
_PROJECT_THING = r"(?:your|this) (?:model|code|codebase|repo\w*|project|implementation|script|example|framework|library)\b"
_PROJECT_Q = re.compile(r"(?:is it possible|possible to|can (?:i|we|one|it|you)|could (?:i|we)|does (?:it|this)|is there (?:a )?way)"
                        r"[^.?]{0,60}?\b" + _PROJECT_THING + r"|^\s*(?:can|could|does|do|is|will) " + _PROJECT_THING, _I)
# requirements asked for ("What are the hardware requirements ...?", "硬件条件是什么"): a quantity, before "what are"
# after a reported symptom, a way to find the cause or the right way to run it asked for ("how can I
# locate the problem", "is there a correct way to do this", "可以提供定位问题的方法吗", "正确的用法"):
# a fix for the person's run, not a choice of strategy nor a question about how things work
_DIAGNOSE_Q = re.compile(r"what should (?:i|we) (?:check|look at|look for|debug)|how (?:can|do|should|could) (?:i|we) (?:debug|troubleshoot|diagnose)|"
                         r"(?:该|应该|要)?(?:怎么|如何)(?:调试|定位|排查)|\b(?:correct|proper|right|recommended) (?:way|usage|method|approach|setup|procedure)\b|"
                         r"\b(?:locate|pinpoint|debug|diagnos\w*|investigate|troubleshoot|narrow down|track (?:it |this )?down)\b|"
                         r"find (?:out )?(?:the |what(?:'s| is) )?(?:cause|reason|culprit|root cause|causing)|"
                         r"what(?:'s| is| could be| might be) (?:causing|behind|going on|happening)|"
                         r"how (?:do|can|should) (?:i|we) (?:handle|deal with|approach|tackle|stop|prevent)\b|"
                         r"what (?:should|can|do) (?:i|we) do\b|(?:any|a) (?:method|way|tool)s? to (?:find|check|see|debug|locate)|"
                         r"正确的?(?:用法|做法|方式|方法|使用方法|配置|姿势|打开方式)|定位|排查|调试|诊断|找(?:到|出)?(?:原因|问题)|"
                         r"(?:怎么|如何|怎样)(?:处理|应对|避免)|什么原因|(?:应该|该|要)(?:查|检查|看)(?:什么|哪些|哪里)|"
                         r"\bwhat to (?:check|look at)\b", _I)
# "is this normal?" about a symptom the message reports: a fix asked for, before any comparison cue
# ("is barely faster than one GPU, is that normal?", "这样算正常么", "属于正常现象吗", "supposed to be this slow")
_NORMAL_Q = re.compile(r"\b(?:is|are) (?:this|that|these|it)\b[^.?!\n]{0,20}\b(?:normal|expected)\b|"
                       r"(?:if|whether) (?:this|that|it) is (?:normal|expected)|supposed to be (?:this|so) \w+|"
                       r"正常(?:现象|情况|的)?(?:吗|么|嘛)|是否正常|算正常|属于正常", _I)
# whether each process (rank, GPU, worker) keeps its own copy of the data or the model, or whether
# it is shared: how data parallelism works, not a quantity ("does every rank hold its own copy of the
# dataset?", "每个进程都会加载一份数据集吗", "数据集会在进程之间共享吗")
_PER_PROCESS_COPY = re.compile(
    r"\b(?:each|every|all|both)\s+(?:of the\s+)?(?:(?:worker|training|gpu|ddp)\s+)?(?:process(?:es)?|ranks?|gpus?|workers?|replicas?|devices?|cards?)\b"
    r"[^.?!\n]{0,40}\b(?:own|separate|full|whole|entire|complete|a|one) (?:copy|copies|replica|instance)\b|"
    r"\b(?:shared?|sharing)\b[^.?!\n]{0,30}\b(?:between|across|among) (?:the )?(?:processes|ranks|gpus|workers)\b|"
    r"(?:每个|每一个|各个|每张卡(?:上)?的?|每块卡(?:上)?的?)\s*(?:进程|rank|gpu|卡|worker)[^。？?！\n]{0,20}?"
    r"(?:加载|保存|存取|存|保留|拷贝|复制|持有|放|读)[^。？?！\n]{0,6}?(?:一份|副本|完整的)|"
    r"(?:进程|rank|卡)之?间[^。？?！\n]{0,6}共享|各(?:存|自保存|自存|持有|有)一份", _I)
# how to train on several cards, asked with no setup (a how-to: concept): "how do I train on several
# cards?", "how to enable multi-GPU training?", "怎样开启多卡训练", "单机多卡训练怎么配置"
_MULTI_GPU = (r"(?:multi-?gpu|multiple (?:gpus|cards|devices)|several (?:gpus|cards|devices)|many (?:gpus|cards)|"
              r"more than one (?:gpu|card)|all (?:the |my )?(?:gpus|cards)|(?:two|four|eight|\d+) (?:gpus|cards))")
_MULTI_GPU_ZH = r"(?:多(?:张|块|个)?\s*(?:卡|显卡|gpu)|单机多卡|多机多卡)"
_MULTI_GPU_HOW = re.compile(
    r"(?:how (?:do|can|should|could|would) (?:i|we|you|one)|how to|what(?:'s| is) the (?:\w+ )?way to)\b[^.?!\n]{0,40}?" + _MULTI_GPU + "|"
    r"(?:如何|怎么|怎样|怎么样)(?:才能|才可以|能|可以)?(?:进行|开启|实现|配置|设置|使用|用|做|跑)?[^。？?！\n]{0,10}?" + _MULTI_GPU_ZH + "|"
    + _MULTI_GPU_ZH + r"[^。？?！\n]{0,16}(?:怎么|如何|怎样)(?:做|进行|开启|配置|设置|弄|实现|跑|用)|"
    + _MULTI_GPU_ZH + r"[^。？?！\n]{0,12}(?:应该|要)怎么", _I)
# the memory a job requires, asked beside "would N cards be enough" ("would 2 x 4090 cover the memory
# it needs?", "or would there be a need for more VRAM?", "所需的显存"): a quantity, not a choice
# Only the required memory set against the cards ("enough ... or a need for more VRAM", "cover the memory
# needed", "够...所需的显存"): "can the needed memory be split over two cards?" alone stays a can-question.
_REQ_MEM = (r"(?:\b(?:memory|vram)\b[^.?!\n]{0,12}\b(?:required|needed|necessary)\b|\b(?:required|needed|necessary) (?:gpu )?"
            r"(?:memory|vram)\b|\b(?:memory|vram)\b[^.?!\n]{0,40}\brequires?\b|\bneed\w*\s+(?:more\s+)?(?:gpu\s+)?(?:memory|vram)\b|"
            r"\bneed for (?:more )?(?:memory|vram)\b)")
_ENOUGH = r"(?:\benough\b|\bsuffic\w*|\bcover\b|\bmeet\b)"
_REQ_MEM_ZH = r"(?:所需|需要)的?(?:显存|内存|资源)"
_REQUIRED_MEMORY = re.compile(_ENOUGH + r"[^.?!\n]{0,80}?" + _REQ_MEM + "|" + _REQ_MEM + r"[^.?!\n]{0,40}?" + _ENOUGH + "|"
                              r"(?:够|满足|足够)[^。？?！\n]{0,30}?" + _REQ_MEM_ZH + "|" + _REQ_MEM_ZH + r"[^。？?！\n]{0,20}(?:够|满足|足够)", _I)
# a choice between two memory sizes (of one card or two): how much memory the run needs, capacity
# ("40G or 80G A100?", "A100 40G还是80G", "24GB vs 48GB card")
_MEMORY_SIZE_CHOICE = re.compile(r"\b\d{2,3}\s*g(?:i?b)?\b[^.?!。？\n]{0,12}?(?:\bor\b|还是|\bvs\.?|versus|或者?)\s*"
                                 r"(?:(?:a|h)\d{3}\s*)?\d{2,3}\s*g(?:i?b)?\b", _I)
_REQUIREMENTS = re.compile(r"requirements?\b|minimum (?:number|amount|count) of (?:gpus?|cards?|nodes?|machines?|(?:gpu )?memory|vram)|硬件(?:条件|要求|需求)|配置要求|最低配置", _I)
_PREAMBLE = re.compile(r"^\s*(?:hi|hello|hey)?[,!\s]*(?:i(?:'m| am) curious|i wonder(?:ing)?|i(?:'d| would) like to (?:ask|know)|"
                       r"i want to (?:ask|know)|请问|想问一下|我想问一下|我想请教一下)\s*[,，:：]?\s*", _I)
# the best option asked for ("What is best for ... DDP or FSDP?", "the best way to shard 70B on 16 GPUs",
# "哪种最合适"): with a setup, a recommendation (without one, a concept)
_BEST_Q = re.compile(r"what(?:'s| is| are| would be) (?:the )?best|\bbest (?:way|strategy|option|choice|setup|approach|config\w*|"
                     r"practice)\b|最好|最合适|最佳|最优", _I)
_ACHIEVED = re.compile(r"how is .{1,60} achieved", _I)
_FASTER_THAN = re.compile(r"\b(?:is|are|would|will)\b.{0,40}\b(?:faster|slower|better|worse|cheaper)\b.{0,12}\bthan\b", _I)
_FIRST_PERSON_WORD = re.compile(r"\b(?:i|my|we|our|me)\b|我", _I)
_ADVICE = re.compile(r"should|need|用什么|用啥|怎么做|如何", _I)
# a run's symptom the message reports, beyond an OOM or an error: one GPU busy, no speed-up, uneven
# memory, a setting without effect, a killed process
_RUN_SYMPTOM = re.compile(r"\bonly (?:uses?|using|used|runs? on|utili[sz]es?) (?:one|a single|1|the first) (?:gpu|card|device)|"
                          r"(?:uses?|using|runs? on) only (?:one|a single|1) (?:gpu|card)|concentrates? on a single gpu|"
                          r"\bgpu\s*0 (?:is )?(?:busy|used|utili[sz]ed|at 100)|只有.{0,12}(?:在跑|在用|利用率|有负载)|只用了?一张卡|"
                          r"利用率\s*[=:：]?\s*0\s*%|(?:same|similar) (?:speed|throughput|time)|speed is (?:the )?same|"
                          r"(?:speed|速度)[^.。]{0,60}(?:similar|same as|一样|差不多)|different amounts? of (?:gpu )?memory|uneven|不均衡|"
                          r"不均匀|\d\s*号卡[^。，,]{0,12}(?:占用|显存|利用率)|不起作用|没有?作用|没有?效果|doesn'?t (?:work|take effect|help)|"
                          r"has no effect|burst\w* (?:the )?(?:gpu )?memory|memory (?:burst|explod)|爆内存|exits? with (?:return )?code|"
                          r"return code\s*=?\s*-?\d|"
                          # an error the run raised, named: a traceback's "XError:" line, the launcher's wrapper or
                          # its exit code, the rendezvous port taken ("是什么原因" after one asks for its cause)
                          r"\b\w+(?:error|exception):|childfailederror|address already in use|eaddrinuse|\bexitcode\b|"
                          # memory compared with another run of the asker's: more than on one GPU, than the older model
                          r"\b(?:uses?|takes?|needs?|shows?|using) (?:much |far |a lot |significantly |way )?more (?:gpu )?"
                          r"(?:memory|vram) than\b|\b(?:more|higher) (?:gpu )?(?:memory|vram) (?:usage )?than\b|"
                          r"显存[^。？！\n]{0,10}(?:明显|远)?(?:高于|高很多|多很多|更高)|(?:多占|多用)了?[^。？！\n]{0,8}显存|"
                          r"比单卡多(?:占|用)|"
                          # one node of several working: the launcher ran on one machine only
                          r"\bonly (?:one|a single|1|the first) (?:node|machine|server)\b.{0,30}?(?:works?|working|runs?|running|"
                          r"trains?|training|is used|busy)|(?:other|remaining|rest of the) (?:nodes?|machines?|servers?)"
                          r"[^.?!\n]{0,40}(?:idle|not (?:working|running|used|training))|"
                          r"只有(?:一个|一台|1个|第一个|主)(?:节点|机器|服务器).{0,12}(?:正常)?(?:工作|在跑|运行|训练)|"
                          r"(?:其他|另外|其余|另一)(?:几个|的|台)?(?:节点|机器|服务器).{0,16}(?:没有?(?:工作|运行|占用|动)|空闲|不工作)|"
                          # the GPUs waiting: low or fluctuating utilisation, a DataLoader worker killed
                          r"gpu[- ]?(?:util\w*|usage|load)\b.{0,24}?(?:\b(?:low|poor|fluctuat\w*|unstable)\b|(?<![\d.])[1-5]?\d ?%)|"
                          r"\b(?:low|poor|fluctuating|unstable) (?:gpu[- ]?)?(?:util\w*|usage)\b|"
                          r"利用率.{0,10}(?:低|不高|只有|上不去|波动|忽高忽低|很差|跳|不稳定|(?<![\d.])[1-5]?\d ?%)|"
                          r"(?:gpu|显卡)\s*占用率.{0,10}(?:低|不高|只有|上不去|很差|(?<![\d.])[1-5]?\d ?%)|"
                          r"(?:数据加载|数据读取|读数据|数据预处理|dataloader)[^。？?\n]{0,10}(?:慢|瓶颈|跟不上)|"
                          r"(?:multi-?gpu|more gpus|the (?:extra|other) gpus|more cards).{0,20}(?:do(?:es)? nothing|did nothing|"
                          r"(?:doesn.t|does not|didn.t|did not) help)|多卡.{0,6}(?:没有?用|没效果|无效)|"
                          r"worker.{0,30}(?:exited unexpectedly|killed by signal)|"
                          # more cards, no faster: the same time per step or no speed-up
                          r"\bnot (?:any |much |really )?faster\b|\bno (?:real |noticeable )?speed-?up\b|"
                          r"\b(?:speed|it/s|throughput|step time)\b[^.?!\n]{0,20}\b(?:did not|didn.t|does not|doesn.t) "
                          r"(?:seem to )?(?:improve|increase|go up|change)\b|"
                          r"(?<!有)(?:没有?|并没有?|并不|没怎么)(?:加速|变快|提速)|(?:没|并没|没有)起作用|\bcrawl(?:s|ing)?\b|"
                          r"(?:step|iteration|iter) times? .{0,40}\b(?:same|similar|equal|unchanged|(?:did not|didn.t) change)\b|"
                          r"\b(?:same|similar|equal|identical) (?:time|step time|duration) (?:per|for each|of each)|"
                          r"(?:每个?|单个?)(?:step|步|迭代|iter)(?:的)?(?:时间|耗时|用时).{0,4}(?:一样|相同|差不多|没变)|"
                          # a slowdown as a ratio: "twice as slow as one GPU", "half the speed", "慢了一倍"
                          r"\b(?:twice|two times|three times|\d+(?:\.\d+)? ?(?:x|times)) (?:as slow|as long|slower|longer)\b|"
                          r"\b(?:half|a third|a fraction) (?:of )?(?:the|as) (?:speed|fast|throughput)|"
                          r"\bno (?:\w+ )?(?:speed|performance|throughput) (?:gain|improvement|benefit|increase)|"
                          r"慢(?:了)?(?:一倍|两倍|\d+倍|一半)|速度(?:只有|减半|降了一半)|(?:速度|性能)[^。？?\n]{0,8}(?:没有?|毫无)(?:提升|提高)|"
                          # a run that stops: a hang or a freeze at some epoch (no error printed)
                          r"\b(?:hangs?|hung|hanging|stuck|deadlock\w*)\b|"
                          # "freeze" also names frozen weights ("a frozen reference model"): only a run that freezes
                          r"\b(?:freez(?:es|ing)|froze|frozen|stall(?:s|ed|ing)?)\s+(?:at|after|on|during|when|forever|indefinitely|every|for)\b|"
                          r"\b(?:training|run|job|process|it|program|script) (?:freezes|froze|stalls|stalled)\b|"
                          r"stops? (?:making )?progress|卡住|卡死|卡在|不动了|停住|假死|死锁|没有?反应|"
                          # memory that grows over a run or jumps on one card until it crashes
                          r"memory[^.?\n]{0,30}\b(?:keeps? (?:growing|increasing|rising|climbing|going up)|grows|creeps? up|climbs?|"
                          r"(?:spikes?|jumps?|shoots?) up|suddenly (?:spikes?|jumps?|rises|increases|grows))\b|"
                          r"\bsuddenly (?:spikes?|jumps?|shoots? up|explodes?)\b|\b(?:exceeds?|goes over|went over) the (?:\w+ )?limit\b|"
                          r"(?:显存|内存|占用)[^。？?\n]{0,12}(?:一直|持续|不断|逐渐|突然)(?:上涨|增长|增加|涨|升高|飙升|暴涨)|"
                          r"(?:显存|内存)[^。？?\n]{0,6}(?:暴涨|飙升|激增)|(?:相差|差别|差异)(?:很多|很大|巨大)|"
                          r"超(?:过|出)了?(?:显存)?上限|\bcrash(?:es|ed)?\b|崩溃|挂了|挂掉|"
                          # host memory: the process killed, RAM figures of a run (host RAM, not out of scope)
                          r"\b(?:gets?|got|was|is|being) killed\b|oom[- ]?killer|被(?:系统)?(?:杀|kill)|进程被杀|"
                          r"\b(?:cpu|host|system|virtual|physical) (?:virtual )?(?:memory|ram)\b[^.?\n]{0,24}\d+\s*g|"
                          r"(?:内存|虚拟内存)(?:占用|使用)?[^。？?\n]{0,6}\d+\s*多?\s*g|"
                          # one card busy, named by its index or as the first ("only cuda:0 is busy", "only
                          # the first GPU does any work", "只用了0", "只用到了第一张卡", "其余的卡利用率为0")
                          r"\bonly (?:the )?(?:first|one|a single|1) (?:gpu|card|device)\b[^.?!\n]{0,16}\b(?:busy|used|utili[sz]ed|"
                          r"working|running|active|does|did|doing)\b|\bonly (?:gpu|cuda|card|device) ?:?#?0\b|"
                          r"\b(?:other|remaining|second|rest of the)(?: \w+)? (?:gpus?|cards?)\b[^.?!\n]{0,24}\b(?:idle|unused|empty|at 0 ?%)|"
                          r"只(?:用|跑|占)(?:到|上)?了?\s*(?:第一张|第一块|0(?![\d.])\s*号?|卡\s*0(?![\d.])|gpu\s*0(?![\d.]))|"
                          r"(?:其他|其余|别的|另外|剩下)的?(?:几张|几块)?(?:卡|gpu|显卡)[^。？！，,\n]{0,8}(?:利用率|占用)[^。？！，,\n]{0,4}"
                          r"(?:为|是|都是|都为|只有)?\s*0(?![\d.])|"
                          # a run that waits until a timeout ("hits an NCCL timeout", "sits there", "一直等待", "超时")
                          r"\btim(?:ed|es)? ?out\b|\btimeouts?\b|\bsits? there\b|\bstops? progressing\b|超时|一直等待?|没动静|"
                          # memory that swings between steps ("goes up and down each step", "显存忽高忽低", "每个step显存都在变")
                          r"\b(?:memory|vram)\b[^.?!\n]{0,30}\b(?:goes|going|go|jumps?|swings?|bounces?) (?:up and down|back and forth)|"
                          r"\b(?:memory|vram)\b[^.?!\n]{0,30}\b(?:fluctuat\w*|swing(?:s|ing)?|oscillat\w*)|\bfluctuating (?:gpu )?(?:memory|vram)\b|"
                          r"显存[^。？！\n]{0,10}(?:忽高忽低|波动|上下浮动|跳来跳去|不稳定|时高时低|变来变去)|"
                          r"(?:每个?|每一)\s*(?:step|步|迭代|iter|batch)[^。？！\n]{0,10}显存[^。？！\n]{0,6}(?:都)?(?:在)?(?:变|不一样|不同)|"
                          # memory or speed against the expected ("比预想的高很多", "higher than expected", "barely faster")
                          r"(?:显存|内存|占用)[^。？?\n]{0,12}比(?:预想|预期|想象|估计|预估)的?[^。？?\n]{0,4}(?:高|大|多)|"
                          r"\b(?:memory|vram)\b[^.?!\n]{0,30}\b(?:higher|more|larger) than (?:i )?(?:expected|estimated)|"
                          r"\b(?:barely|hardly|only slightly|marginally) faster\b|\b(?:this|so) slow\b|"
                          r"\b(?:epoch|step|iteration) time\b[^.?!\n]{0,20}\b(?:barely|hardly|only slightly) (?:dropped|changed|improved|fell|went down)|"
                          # GPU 0 fuller than the others ("GPU 0 uses much more memory than the other cards")
                          r"\b(?:gpu|cuda|card|device|rank) ?:?#?0\b[^.?!\n]{0,40}\b(?:more|higher|larger) (?:memory|vram)\b", _I)


@dataclass(frozen=True)
class Cue:
    """One class of question wording and the intent it asks for. ``needs``: context flags that must
    hold; ``unless``: flags that rule it out (see ``_flags``). The first cue of ``QUESTION_CUES``
    that applies to a question sentence is its class."""

    name: str
    intent: str
    pattern: re.Pattern[str]
    needs: frozenset[str] = frozenset()
    unless: frozenset[str] = frozenset()


def _cue(name: str, intent: str, pattern: re.Pattern[str], needs: str = "", unless: str = "") -> Cue:
    return Cue(name, intent, pattern, frozenset(needs.split()), frozenset(unless.split()))


# Order is precedence. Flags: ``own`` the message is about a run or setup of the person's; ``mine``
# it speaks of the person's own run; ``setup`` a model or hardware is stated; ``symptom`` a run's
# failure or slowdown is reported; ``i_here`` / ``first_person`` the sentence says I/my/we;
# ``why_only`` its only fix cue is a bare why; ``can`` it is a can-I/which question; ``advice`` it
# asks what to do ("should", "need", "用什么").
QUESTION_CUES: tuple[Cue, ...] = (
    _cue("two_api_versions", "concept", _API_VERSIONS),       # "FSDP1 or FSDP2?" wherever it is asked
    _cue("strategy_equivalent", "concept", _STRATEGY_EQUIVALENT),  # "FSDP's equivalent of ZeRO-2?" with any setup
    _cue("batch_and_lr_with_gpus", "concept", _SCALING_Q, unless="symptom"),  # "lr and batch size on 4 GPUs?"
    _cue("what_went_wrong", "troubleshoot", _PROBLEM_Q),
    _cue("is_it_normal", "troubleshoot", _NORMAL_Q, needs="symptom"),  # before the comparison cues
    _cue("per_process_copy", "concept", _PER_PROCESS_COPY, unless="symptom"),  # before the quantity cues
    _cue("requirements", "capacity", _REQUIREMENTS),
    _cue("memory_size_choice", "capacity", _MEMORY_SIZE_CHOICE),
    _cue("best_option", "recommend", _BEST_Q, needs="setup"),
    _cue("diagnose_after_symptom", "troubleshoot", _DIAGNOSE_Q, needs="symptom"),  # "how can I locate it?"
    _cue("how_it_works", "concept", _CONCEPT_STRONG, unless="i_here"),
    _cue("how_achieved", "concept", _ACHIEVED),
    _cue("strategy_faster_for_setup", "recommend", _STRATEGY_FASTER, needs="setup"),  # "DeepSpeed faster than DDP on 32 A100?"
    _cue("which_is_faster", "concept", _FASTER_THAN, unless="mine"),  # "Is an H100 faster than an A100 for 7B?"
    _cue("design_choice", "concept", _DESIGN_WHY, unless="i_here"),
    _cue("why_in_general", "concept", _WHY, needs="why_only", unless="own symptom"),  # "为什么FSDP的显存比DDP少？"
    _cue("fix_or_why", "troubleshoot", _FIX_Q),
    _cue("knob_after_failure", "troubleshoot", _KNOB_Q, needs="symptom"),
    _cue("save_memory_after_failure", "troubleshoot", _SAVE_Q, needs="symptom"),
    _cue("improve_after_symptom", "troubleshoot", _IMPROVE_Q, needs="symptom"),
    _cue("quantity", "capacity", _CAPACITY_Q),
    _cue("cards_needed", "capacity", _CARDS_NEEDED_Q),
    _cue("required_memory", "capacity", _REQUIRED_MEMORY),
    _cue("multi_gpu_how_to", "concept", _MULTI_GPU_HOW, unless="setup symptom"),
    _cue("the_projects_code", "concept", _PROJECT_Q, unless="setup first_person"),
    _cue("choice_in_general", "concept", _CHOICE, needs="can", unless="setup first_person advice"),
    _cue("can_or_which", "recommend", _CAN_Q),
    _cue("save_memory", "recommend", _SAVE_Q),
    _cue("what_is", "concept", _CONCEPT_Q, unless="setup"),
)


def _flags(sentence: str, *, has_setup: bool, own: bool, mine: bool, symptom: bool) -> frozenset[str]:
    """The context flags of one question sentence (the names ``QUESTION_CUES`` use)."""
    flags = {name for name, on in (("setup", has_setup), ("own", own), ("mine", mine), ("symptom", symptom)) if on}
    sentence = _PREAMBLE.sub("", sentence)  # "I'm curious, why do you ...": the asking is not the person's run
    if _OWN_RUN.search(sentence):
        flags.add("i_here")
    if _FIRST_PERSON_WORD.search(sentence):
        flags.add("first_person")
    if _WHY.search(sentence) and not _FIX_Q.search(_WHY.sub(" ", sentence)):
        flags.add("why_only")
    if _CAN_Q.search(sentence):
        flags.add("can")
    if _ADVICE.search(sentence):
        flags.add("advice")
    return frozenset(flags)


def _question_class(sentence: str, *, has_setup: bool, own: bool = True, mine: bool = True,
                    symptom: bool = False) -> str | None:
    """The intent one question sentence asks for (None: not a question, or none of ours): the first
    cue of ``QUESTION_CUES`` whose pattern it matches and whose conditions hold."""
    if not _QUESTION.search(sentence):
        return None
    flags = _flags(sentence, has_setup=has_setup, own=own, mine=mine, symptom=symptom)
    for cue in QUESTION_CUES:
        if cue.needs <= flags and not cue.unless & flags and cue.pattern.search(sentence):
            return cue.intent
    return None


# A question that fixes a run outranks one that asks for a quantity, which outranks "can my setup do
# it", which outranks a question about how things work: "需要单张卡的显存多少？有没有办法将模型分到两张卡上？"
# asks for the fix; "minimal hardware requirement ... Is it possible with 4 40G A100?" for a quantity.
_RANK = {"concept": 0, "recommend": 1, "capacity": 2, "troubleshoot": 3}


def intent_of(prose: str, *, has_setup: bool, oom: bool) -> str:
    """The intent of a question from the person's own words (``prose``: config/log blocks removed)."""
    return read_intent(prose, has_setup=has_setup, oom=oom).intent


def read_intent(prose: str, *, has_setup: bool, oom: bool) -> IntentReading:
    """The intent of one message and whether a question sentence decided it (see the module doc)."""
    text = prose.strip()
    symptom = bool(oom or _TROUBLE.search(text) or _SYMPTOM.search(text))
    if not text:
        return IntentReading("troubleshoot" if oom else "recommend", False, oom)
    scope = scope_of(text, has_setup=has_setup)
    if scope is not None:
        return IntentReading(scope, True, symptom)
    own = has_setup or oom or bool(_OWN_RUN.search(text)) or bool(_SYMPTOM.search(text))
    mine = oom or bool(_OWN_RUN.search(text))
    # a run's failure the message reports (narrower than ``symptom``: a "why" in general is none)
    run_symptom = oom or bool(_SYMPTOM.search(text) or _RUN_SYMPTOM.search(text)) or bool(
        _TROUBLE.search(text) and (has_setup or _OWN_RUN.search(text)))
    asked = [(x, c) for x in sentences_of(text)
             if (c := _question_class(x, has_setup=has_setup, own=own, mine=mine, symptom=run_symptom))]
    if asked:
        decided = max((c for _, c in asked), key=_RANK.__getitem__)
        can = decided == "recommend" and not any(c == "recommend" and _CHOICE.search(x) for x, c in asked)
        return IntentReading(decided, True, symptom, can)
    return IntentReading(_fallback(text, has_setup=has_setup, oom=oom), False, symptom)


# An RL method named in words: the multi_model_rl topic's words (PPO, GRPO, DPO, RLHF, actor/critic,
# a reward or reference model) and "reinforcement learning" / "强化学习" themselves.
_RL_METHOD = re.compile(dict(_TOPIC_RULES)["multi_model_rl"] + r"|reinforcement learning|强化学习", _I)


def names_rl(text: str) -> bool:
    """The message names an RL method (PPO, GRPO, DPO, RLHF, a reward or reference model, "强化学习").
    Read by bot.knowledge.answering: an RL passage never answers a message that names none."""
    return isinstance(text, str) and bool(_RL_METHOD.search(text))


# A message with no classifiable question: the same table form, read on the whole message (what it
# reports, then its words). Flags: ``oom``, ``setup``, ``own`` (I/my/我), ``reported`` (an issue, a bug,
# an error named), ``trouble`` (a failure or slowdown word) and ``tools`` (a strategy named).
_WILL_IT_OOM = re.compile(r"会\s*oom\s*吗|会爆显存吗|will (?:it|this) (?:oom|fit)|would (?:it|this) oom", _I)
_REPORTED = re.compile(r"\bissues?\b|problem|\bbug\b|error|问题|报错", _I)
_TOOLS = re.compile(r"fsdp|ddp|zero|deepspeed|shard|hsdp", _I)
_ANY = re.compile(r"", _I)
FALLBACK_CUES: tuple[Cue, ...] = (
    _cue("feature_discussion", "concept", _FEATURE, unless="oom"),  # "It would be beneficial if HYBRID_SHARD ..."
    _cue("how_it_works", "concept", _CONCEPT_STRONG, unless="oom setup"),
    _cue("will_it_oom", "capacity", _WILL_IT_OOM, unless="oom"),
    _cue("oom_reported", "troubleshoot", _ANY, needs="oom"),
    _cue("symptom", "troubleshoot", _SYMPTOM),
    _cue("run_symptom", "troubleshoot", _RUN_SYMPTOM),
    _cue("trouble_with_setup", "troubleshoot", _TROUBLE, needs="setup"),
    _cue("trouble_of_mine", "troubleshoot", _TROUBLE, needs="own"),
    _cue("trouble_reported", "troubleshoot", _TROUBLE, needs="reported"),
    _cue("tools_behaviour", "concept", _TROUBLE, needs="tools"),  # "full_shard ... its training speed is slow"
    _cue("strategy_enough", "recommend", _STRATEGY_ENOUGH),
    _cue("quantity", "capacity", _CAPACITY),
    _cue("what_is", "concept", _CONCEPT, unless="setup"),
    _cue("tools_discussion", "concept", _TOOLS, unless="setup own"),  # a statement about the tools, no run of theirs
)


def _fallback(text: str, *, has_setup: bool, oom: bool) -> str:
    """A message with no classifiable question: the first ``FALLBACK_CUES`` entry that applies, else recommend."""
    flags = {name for name, on in (("oom", oom), ("setup", has_setup), ("own", bool(_OWN_RUN.search(text))),
                                   ("reported", bool(_REPORTED.search(text))), ("tools", bool(_TOOLS.search(text)))) if on}
    for cue in FALLBACK_CUES:
        if cue.needs <= flags and not cue.unless & flags and cue.pattern.search(text):
            return cue.intent
    return "recommend"
