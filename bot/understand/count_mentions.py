"""The role of each GPU figure in a message before the count rules read one: which figures are not
the count of the asker's run (a device index, a comparison's single-card baseline, one card per
process, a fallback, machines tried in turn, a count restated later) and which add up to it (the
other cards beside one named, two kinds of card). First-contact batch h, "Roles of counts", and the
role classes of batches a-g.

- A device index names one card, it counts none: "GPU 0", "the 0 GPU", "cuda:0", "0号卡", "卡0".
  Its digits are blanked, so "the 0 GPU gets more memory" is never a count of 0 (a count of zero
  would make a complete question "invalid"). A list of indices ("GPUs 0 and 1", "0,1号卡",
  "cuda:0 and cuda:1") is a weak count, the number of indices, said to come from a device list.
- The other cards beside one named by role or index ("主卡 ... 另外3个卡", "GPU 0 ... the other 3")
  are that many plus the one (``rest_and_one``).
- Two kinds of card, each counted ("two 40G A100s and one 80G GPU", "两张A100和一张H100"), are their
  sum (``mixed_cards``, read in ``bot.understand.reader`` where the card names are known).
- Some of the machine's cards ("4 of the 8 GPUs", "8张卡，我只用了其中4张") are the run's count
  (``subset_count``), the total said in a note.
- A count offered as a fallback ("单卡能跑吗？不行的话两张呢", "If not, would 2 A100s do?") is weighed,
  not the setup: blanked and noted.
- The same run tried on several machines in turn ("在两台电脑上执行都是这样", "the same error on two
  different machines") is no multi-node run: blanked and noted.
- One card per process ("每个进程独享一张显卡", "one GPU per process") is the layout of a data-parallel
  run, not its count: blanked and noted.
- One card as the baseline of a comparison ("多卡比单卡还慢", "slower than on one GPU", "单卡的数倍",
  "几倍于单卡") is what the run is compared with, not the asker's count: it is blanked, and the count
  is the multi-GPU one if written, else unknown (asked, never defaulted).
- A count restated later supersedes the earlier one ("I had 4 GPUs ... now it runs on 8",
  "原来用2张卡，现在换成4张", "went from 2 to 4 GPUs"): the earlier mentions are blanked and noted.

``settle_counts(text)`` returns the text with the figures that are no count blanked (same length, so
spans stay valid), the notes (code, values) the answer says, and the device-list count, if one;
``rest_and_one`` and ``mixed_cards`` give the counts that add up;
``restated_count(text)`` the text with the earlier count blanked, its note and the later count. Both
run inside ``bot.understand.prose.read_counts``, the second after the failed/working run roles
(``bot.understand.run_roles``), which keep their own pair of counts, and only where no machines are
named (a grid of machines x GPUs has its own rules).
"""

from __future__ import annotations

import re

from bot.understand.counts import COUNT, GPU, G, to_int

_GPU_WORD = r"(?:gpus?|cards?|devices?|" + G + r")"
# A card written as an index: the number after the card word ("GPU 0", "GPU#1", "gpu id 2", "cuda:0",
# "device 3"), an index in the singular after "the" ("the 0 GPU", "the 1 card": "the 4 GPUs" is a
# count), an ordinal ("the 0th GPU"), and in Chinese "0号卡", "1号GPU", "卡0", "显卡1", "第0张卡".
# Never a colon with a space after it: "GPUs: 8" is a label for a count.
_INDEX = re.compile(
    r"\b(?:gpu|cuda|device|card|rank)(?:\s*(?:#|id|no\.?|index)\s*|\s*[:\-_]|\s+)(\d{1,2})(?![\d.]|\s*(?:x|×|\*|gi?b|g)\b)"
    r"(?!\s*(?:gpus|cards|devices|张|块|个|卡|台|" + G + r"))|"
    # ("the 2 GPU run", "the 8 GPU node" are counts used as an adjective)
    r"\bthe\s+(\d{1,2})(?:st|nd|rd|th)?\s+(?:gpu|card|device)\b(?!s)(?![\s-]+(?:setups?|runs?|config\w*|machines?|nodes?|box(?:es)?|"
    r"servers?|training|jobs?|cases?|systems?|instances?|clusters?|versions?|experiments?|modes?|variants?|results?)\b)|"
    r"\b(\d{1,2})(?:st|nd|rd|th)\s+(?:gpu|card|device)\b|"
    r"(?<![\d.])(\d{1,2})\s*号\s*(?:卡|显卡|gpu|GPU|设备|" + G + r")|(?:(?<![\d张块个])卡|显卡|设备)\s*(\d{1,2})(?![\d.]|\s*(?:张|块|个|号|gi?b|g\b))|"
    r"第\s*(\d{1,2})\s*(?:张|块|个)\s*(?:卡|显卡|gpu|GPU|" + G + r")|"
    # zero cards is never a count: "显存都集中在了0卡" names card 0
    r"(?<![\d.])(0)\s*(?:张|块|个)?\s*(?:卡|显卡|gpus?\b|cards?\b|devices?\b)",
    re.I | re.A)
# A list of indices: "GPUs 0 and 1", "GPU 0,1,2,3", "gpus 0-3", "cuda:0 and cuda:1", "devices 0, 1",
# "0,1号卡", "0、1、2号卡", "卡0和卡1"
_IDS = r"\d{1,2}(?:\s*(?:,|，|、|\band\b|和|与|/)\s*\d{1,2})+|\d{1,2}\s*[-~～]\s*\d{1,2}"
_INDEX_LIST = re.compile(
    r"\b(?:gpus?|devices?|cards?)(?:\s*(?:#|ids?)\s*|\s*[:=]?\s*)(" + _IDS + r")(?![\d.]|\s*(?:gpus|cards|x\b|gi?b|g\b))|"
    r"\bcuda:\d{1,2}(?:\s*(?:,|\band\b|/)\s*cuda:\d{1,2})+|"
    r"(?<![\d.])(" + _IDS + r")\s*号\s*(?:卡|显卡|gpu|GPU|" + G + r")|"
    r"(?:卡|显卡)\s*\d{1,2}(?:\s*(?:,|，|、|和|与)\s*(?:卡|显卡)?\s*\d{1,2})+",
    re.I | re.A)


def _indices(words: str) -> int:
    """How many devices an index list names ("0,1,2" 3, "0-3" 4, "cuda:0 and cuda:1" 2)."""
    if span := re.search(r"(\d{1,2})\s*[-~～]\s*(\d{1,2})", words):
        low, high = int(span.group(1)), int(span.group(2))
        return high - low + 1 if high > low else 0
    return len(re.findall(r"\d{1,2}", words))


# One card as the baseline of a comparison: "比单卡还慢", "和单卡差不多", "相比单卡", "单卡的1.5倍",
# "原来单卡的数倍", "几倍于单卡", "slower than (on) a single GPU", "compared to one GPU",
# "2x faster than one card", "vs. single GPU", "the speed-up over a single GPU"
_ONE = r"(?:单卡|单张卡?|单块卡?|单个(?:gpu|GPU|显卡)|一张卡|一块卡|1\s*张卡|1\s*卡|单\s*gpu|单\s*GPU)"
_ONE_EN = r"(?:an?\s+single|a|one|1|single)[\s-]+(?:gpu|card|device)(?:[\s-]+(?:run|training|setup|case|baseline))?\b"
_BASELINE = re.compile(
    r"(?:比|于|较|相比(?:于)?|相对(?:于)?|对比|比起|和|跟|与|同)\s*(?:原来的?|之前的?|用)?\s*(" + _ONE + r")(?=[^，,。；;\n]{0,12}?"
    r"(?:慢|快|差|多|少|高|低|一样|一致|相同|差不多|相当|倍|提升|加速|没区别|没有区别|区别))|"
    r"(" + _ONE + r")(?:的|时的?|训练的?|速度的?)?\s*(?:\d+(?:\.\d+)?|[几数两一二三四五六七八九十]+)\s*倍|"
    r"倍于\s*(" + _ONE + r")|"
    r"\b(?:than|vs\.?|versus|compared\s+(?:to|with)|relative\s+to|over|against)\s+(?:(?:on|with|using|in)\s+)?(?:that\s+of\s+)?(?:the\s+)?("
    + _ONE_EN + r")|"
    r"\b(?:\d+(?:\.\d+)?|several|a few|two|three|four|many)\s*(?:x|times)\s+(?:(?:faster|slower|more|less|larger|bigger|higher|"
    r"lower)\s+)?(?:than\s+|that\s+of\s+|what\s+)?(?:(?:on|with|using|in)\s+)?(?:the\s+)?(" + _ONE_EN + r")",
    re.I | re.A)

# One card per process is the layout of a data-parallel run (one rank per GPU), not the count:
# "每个进程独享一张显卡", "每个rank用一张卡", "one GPU per process", "each process gets its own GPU"
_PER_PROCESS = re.compile(
    r"(?:每个?|每一个)\s*(?:进程|rank|worker|gpu\s*进程)\s*(?:都)?\s*(?:独享|独占|占用|占|使用|用|对应|绑定|分配|分到|分配到|负责|跑在)?(?:了)?\s*"
    r"(?:一张|一块|一个|1\s*张|1\s*个|单张?|单块)\s*(?:显卡|卡|gpu|GPU|" + G + r")|"
    r"\b(?:one|a single|1|a)\s+(?:gpu|card|device)\s+(?:per|for each|for every|to each|to every)\s+(?:process|rank|worker)\b|"
    r"\b(?:each|every)\s+(?:process|rank|worker)\s+(?:gets|uses|owns|has|takes|holds|runs on|is on|sees|is bound to)\s+"
    r"(?:its own|one|a|a single|exactly one|only one)\s+(?:gpu|card|device)\b",
    re.I | re.A)

# The other cards beside one named by its role or index: "主卡占用10GB，另外3个卡占用8GB", "GPU 0 uses 10GB and
# the other 3 use 8GB", "0卡 ... 其余一张显卡" (first-contact batch a): the count is the others and that one
_THE_ONE = re.compile(r"主卡|主GPU|0号卡|卡0|(?<![\d.])0\s*卡|\bthe (?:main|master|primary|first) (?:gpu|card)\b|\bgpu\s*0\b|\bcuda:0\b|\brank 0'?s? (?:gpu|card)\b",
                      re.I | re.A)
_THE_OTHERS = re.compile(r"\b(?:the\s+)?(?:other|remaining)\s+" + COUNT + r"(?:\s+(?:gpus?|cards?|devices?|" + G + r"s?)\b)?|"
                         r"\bthe rest of the\s+" + COUNT + r"\s+(?:gpus?|cards?|devices?)|"
                         r"(?:另外|其余|其他|其它|剩下|剩余)(?:的)?\s*" + COUNT + r"\s*(?:张|块|个)?\s*(?:卡|显卡|gpu|GPU|" + G + r")?",
                         re.I | re.A)

# A count offered as the fallback of the one asked about: "单卡能跑吗？不行的话两张呢", "Is a single A100
# enough? If not, would 2 A100s do?" (first-contact batch a): the fallback is weighed, the first is the setup
_FALLBACK = re.compile(r"(?:不行的话|如果不行|要是不行|不行就|不够的话|如果不够|要是不够|放不下的话|跑不了的话|否则|要不然|不然的话|再不行|"
                       r"\bif not\b|\botherwise\b|\bor else\b|\bfailing that\b|\bif (?:that|it|this) (?:doesn't|does not|won't|will not|"
                       r"can't|cannot) (?:work|fit|be enough|suffice)\b|\bif (?:it's|it is|that's|that is) not enough\b)", re.I | re.A)

# A count the message restates later: the earlier one is marked as the past ("I had", "originally",
# "at first", "原来", "之前", "一开始"), the later one as the present or a change ("now", "then",
# "switched to", "made it train on", "现在", "后来", "换成", "改成", "加到").
_EARLIER_CUE = re.compile(r"(?:\b(?:i|we)\s+(?:had|was using|were using|started with)|\b(?:originally|initially|at first|"
                          r"previously|earlier|used to)|原来|原先|本来|之前|以前|起初|一开始|开始(?:时|的时候)|最初)"
                          r"[^.;。；!?！？\n]{0,24}$", re.I | re.A)
_LATER_WORDS = (r"(?:\bnow\b|\bthen\b|\blater\b|\bafterwards?\b|\bafter that\b|\bthis time\b|\binstead\b|"
                r"\b(?:switched|changed|moved|upgraded|increased|scaled|went|bumped|expanded|grew)\s+(?:up\s+)?to\b|"
                r"\b(?:made|got|have|had)\s+it\s+(?:to\s+)?(?:train(?:ing)?|run(?:ning)?|work(?:ing)?)\s+(?:on|with)\b|"
                r"现在|目前|后来|然后|换成|换了|换到|改成|改用|改为|改到|变成|增加到|加到|扩到|扩展到|升级到|再用|又用|用上了)")
# the cue and the later count in one clause ("我现在只有4张4090，单卡显存24G": 单卡 is the card's size)
_LATER_CUE = re.compile(_LATER_WORDS + r"[^.;。；!?！？\n,，]{0,24}$", re.I | re.A)
_MENTION = re.compile(COUNT + r"\s*(?:张|块|个)?\s*(?:卡|显卡|(?:nvidia\s+)?(?:gpus?|cards?|devices?)\b|" + G + r"s?)|"
                      + COUNT + r"\s*(?:张|块)(?!\s*(?:图|照片|表|纸))|"
                      r"(单卡|单张卡|一张卡|一块卡|\b(?:a\s+)?single\s+(?:gpu|card)\b|\bone\s+(?:gpu|card)\b)", re.I | re.A)
_SINGLE_WORD = re.compile(r"单卡|单张卡|一张卡|一块卡|(?:a\s+)?single\s+(?:gpu|card)|one\s+(?:gpu|card)", re.I | re.A)
# "from 2 to 4 GPUs", "from 2 GPUs to 4", "2 -> 4 GPUs", "从2卡加到4卡", "由2张卡增加到4张", "2卡→4卡"
_FROM_TO = re.compile(r"\bfrom\s+" + COUNT + r"\s*(?:x\s*)?(?:" + _GPU_WORD + r"s?)?\s*(?:to|->|→)\s*" + COUNT
                      + r"(?![\d.]|\s*(?:gi?b|g|k|m|b|%|steps?|epochs?|hours?|h|min|s)\b)|"
                      + COUNT + r"\s*(?:" + _GPU_WORD + r"s?)?\s*(?:->|→|=>)\s*" + COUNT + r"\s*(?:x\s*)?" + _GPU_WORD + r"|"
                      r"(?:从|由)\s*" + COUNT + r"\s*(?:张|块)?\s*(?:卡|显卡|gpu|GPU|" + G + r")?\s*"
                      r"(?:增加|加|扩|扩展|换|改|升|提升|变|增)?\s*(?:到|成|为|至)\s*" + COUNT + r"\s*(?:张|块|卡|显卡|gpu|GPU|" + G + r")",
                      re.I | re.A)
# "now I've got it running on 8": the later count with its unit said once, in the earlier mention
_LATER_BARE = re.compile(r"(?:\bon|\bwith|\bto|\buse|\busing|用|到|成|为)\s*(\d{1,3})(?![\d.]|\s*(?:gi?b|g|b|k|m|%|x|steps?|epochs?|hours?|"
                         r"min\w*|s|nodes?|machines?|小时|分钟|步|轮|台|机|节点)\b|\s*(?:小时|分钟|步|轮|台|机|节点|号|倍))", re.I | re.A)


# The same run tried on several machines, one at a time: "在两台电脑上执行都是这样", "换了三台机器都一样", "the
# same error on two different machines", "tried it on 3 computers" (first-contact batch b): no multi-node run
_MACHINE = r"(?:machines|computers|servers|pcs|boxes|workstations|hosts)\b"
_TRIED_ON = re.compile(
    r"\b(?:on|across)\s+" + COUNT + r"\s+(?:different|separate|other)\s+" + _MACHINE + r"|"
    r"\b(?:tried|tested|ran|run|reproduced|checked)\s+(?:it\s+|this\s+|the same\s+\w+\s+)?on\s+" + COUNT + r"\s+(?:different\s+)?"
    + _MACHINE + r"(?=[^.;!?\n]{0,40}?\b(?:same|all|both|each|every|also|too|either)\b)|"
    r"(?:在|换了?|用了?|试了?)\s*" + COUNT + r"\s*(?:台|个)\s*(?:不同的?)?\s*(?:电脑|机器|服务器|主机|工作站)(?:上)?"
    r"(?=[^，,。；;\n]{0,12}?(?:都|分别|也|同样|一样))",
    re.I | re.A)


_CARD_WORD = r"(?:gpus?\b|cards?\b|devices?\b|卡|显卡|" + GPU + r")"


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _count_words(text: str, start: int, end: int) -> tuple[int, int]:
    """The count words of a mention, without the card marker beside them ("四张Ǥ" -> "四张")."""
    cut = text.find(GPU, start, end)
    return start, (cut if cut > start else end)


def restated_count(text: str) -> tuple[str, tuple[str, dict], tuple[int, str]] | None:
    """(``text`` with the earlier count blanked, the note that says so, (the later count, its words))
    when the message restates its GPU count later; else None."""
    ft = next((m for m in _FROM_TO.finditer(text)  # a card word in it: "batch size from 1 to 8" is no count
               if re.search(_CARD_WORD, m.group(0), re.I | re.A) or re.match(r"\s*(?:x\s*)?(?:nvidia\s+)?" + _CARD_WORD,
                                                                            text[m.end():], re.I | re.A)), None)
    if ft is not None:
        pair = next((i, i + 1) for i in (1, 3, 5) if ft.group(i))
        before, after = to_int(ft.group(pair[0])), to_int(ft.group(pair[1]))
        if before and after and before != after:
            words = ft.group(0).strip()
            note = ("count_superseded", {"earlier": before, "later": after, "earlier_span": words, "later_span": words})
            return _blank(text, ft.start(pair[0]), ft.end(pair[0])), note, (after, words)
    mentions = []
    for m in _MENTION.finditer(text):
        value = to_int(m.group(1) or m.group(2) or "") if (m.group(1) or m.group(2)) else 1
        if value:
            mentions.append((value, m.start(), m.end()))
    if not mentions:
        return None
    first = mentions[0]
    # one card in words is never the later count: "单卡显存24G", "a single GPU has 24GB" say a card's size
    later = next(((v, s, e) for v, s, e in mentions[1:] if v != first[0] and re.search(r"\d|" + COUNT, text[s:e])
                  and not _SINGLE_WORD.fullmatch(text[s:e].strip()) and _LATER_CUE.search(text[max(0, s - 40): s])), None)
    if later is None and len({v for v, _, _ in mentions}) == 1:
        # "I had 4 GPUs ... now I've got it running on 8": the later count with no unit after it
        for cue in re.finditer(_LATER_WORDS, text, re.I | re.A):
            if cue.start() > first[2] and (bare := _LATER_BARE.search(text, cue.start(), cue.end() + 32)) and \
                    int(bare.group(1)) not in (0, first[0]):
                later = (int(bare.group(1)), bare.start(), bare.end(1))  # "on 8"
                break
    if later is None:
        earlier_cued = next(((v, s, e) for v, s, e in mentions if _EARLIER_CUE.search(text[max(0, s - 40): s])), None)
        if earlier_cued is not None:
            later = next(((v, s, e) for v, s, e in mentions if s > earlier_cued[2] and v != earlier_cued[0]
                          and not _SINGLE_WORD.fullmatch(text[s:e].strip())), None)
    if later is None:
        return None
    blanked = [(v, s, e) for v, s, e in mentions if s < later[1] and v != later[0]]
    if not blanked:
        return None
    note = ("count_superseded", {"earlier": blanked[0][0], "later": later[0],
                                 "earlier_span": text[blanked[0][1]: blanked[0][2]].strip(),
                                 "later_span": text[later[1]: later[2]].strip()})
    for _, s, e in blanked:
        text = _blank(text, *_count_words(text, s, e))
    return text, note, (later[0], str(note[1]["later_span"]))


# Two kinds of card, each with its count: "two 40G A100 GPUs and one 80G GPU", "two 4090s and one 3090",
# "两张A100和一张H100" (first-contact batch a): the run has both, so the count is their sum
_UNIT = r"(?:\s*(?:gpus?\b|cards?\b|显卡|卡))?"
_MIXED = re.compile(COUNT + r"\s*(?:张|块|个)?\s*(?:(\d{1,3})\s*(?:gib|gb|g)\s*(?:的)?\s*)?(?:nvidia\s+)?(" + G + r")?s?" + _UNIT
                    + r"\s*[,，、]?\s*(?:\band\b|\bplus\b|和|与|加上?|\+)\s*" + COUNT
                    + r"\s*(?:张|块|个)?\s*(?:(\d{1,3})\s*(?:gib|gb|g)\s*(?:的)?\s*)?(?:nvidia\s+)?(" + G + r")?s?" + _UNIT, re.I | re.A)


def mixed_cards(marked: str, names: dict[int, str]) -> tuple[int, str, tuple[int, int]] | None:
    """(the sum, its words, its span) where two groups of different cards are each counted;
    ``names`` maps a card marker's start in ``marked`` to the card's catalog name."""
    for m in _MIXED.finditer(marked):
        first, second = to_int(m.group(1)), to_int(m.group(4))
        if not first or not second or not (m.group(3) or m.group(2)) or not (m.group(6) or m.group(5)):
            continue
        if not re.search(r"gpus?|cards?|显卡|卡|" + GPU, marked[m.start(4): m.end()], re.I | re.A):
            continue
        sizes = {m.group(2), m.group(5)} - {None}
        cards = {names.get(m.start(i), "") for i in (3, 6) if m.group(i)}
        if len(sizes) == 2 or len(cards) == 2:
            return first + second, m.group(0).strip(), m.span()
    return None


# The run on some of the machine's cards: "4 of the 8 GPUs", "3 out of 8 GPUs", "8张卡，我只用了其中4张",
# "8卡的机器上只能用4张", "一共8张A100，分给我2张" (first-contact batch a: the cards the asker can use, not
# the machine's): the count is the cards used, and the total is said in a note
_OF_THE = re.compile(r"\b" + COUNT + r"\s+(?:out\s+)?of\s+(?:the|my|our|its|their|all)?\s*(?:the\s+)?" + COUNT
                     + r"\s*(?:x\s*)?(?:nvidia\s+)?(?:gpus?\b|cards?\b|devices?\b|" + G + r")", re.I | re.A)
_ONLY_SOME = re.compile(COUNT + r"\s*(?:张|块|个)?\s*(?:卡|显卡|gpu|GPU|" + G + r")[^。；;\n]{0,16}?(?:其中|只能用|只用了?|只有|仅能用|仅用了?|"
                        r"分给我|分到了?|给我|能用的?(?:只有)?)\s*(?:了)?\s*(?:其中)?\s*" + COUNT + r"\s*(?:张|块|个)")


# the words that make "one of the N" the cards a run uses ("I only use one of the 8 GPUs", "只能用其中一张")
_USES_ONE = re.compile(r"\b(?:use[sd]?|using|only|train(?:s|ed|ing)? on|run(?:s|ning)? on|ran on|allocated|assigned|given)\b|"
                       r"只用|只能用|只有|仅能用|仅用|分给我|分到|给我|能用", re.I | re.A)


# A verb of work or load right after the cards a message says "only N" of: "只有一张在跑", "只有一张有负载",
# "只有一块在用", "only one is busy" (first-contact batch k): the cards the symptom is on, the run has them all
_WORKS_AFTER = re.compile(r"\s*(?:卡|显卡|gpu|GPU|" + G + r")?\s*(?:是|还|才|一直|始终|会)?\s*(?:在|有|被)?\s*(?:跑|运行|工作|计算|用|使用|"
                          r"负载|利用率|占用|动|忙|干活|训练|满载|显存占用|跑满|吃满|有活)|"
                          r"\s+(?:of them\s+)?(?:is|are|was|were|seems?|appears?)\s+(?:\w+\s+)?(?:busy|working|used|running|active|loaded|"
                          r"utili[sz]ed|computing|doing)\b|"
                          r"\s+(?:of them\s+)?(?:does|do|did|shows?|showed|has|had|gets?|got|works?|worked)\s+(?:any\s+|some\s+)?"
                          r"(?:work|load|utili[sz]ation|activity|busy|compute)\b", re.I | re.A)


def subset_count(text: str) -> tuple[str, tuple[str, dict], tuple[int, str]] | None:
    """(``text`` with the machine's total blanked, the note, (the cards used, their words)) where the
    run uses some of the machine's cards; else None."""
    for pattern in (_OF_THE, _ONLY_SOME):
        for m in pattern.finditer(text):
            used, total = (to_int(m.group(1)), to_int(m.group(2))) if pattern is _OF_THE else (to_int(m.group(2)), to_int(m.group(1)))
            if used == 1 and not _USES_ONE.search(text, max(0, m.start() - 24), m.end()):
                continue  # "one of my 4 cards is idle", "其中一个rank卡住": the card a symptom is on
            if _WORKS_AFTER.match(text, m.end()):
                continue  # "8张卡只有一张有负载": the card that works, the run has all eight
            if used and total and 0 < used < total:
                at = m.start(2) if pattern is _OF_THE else m.start(1)
                end = m.end(2) if pattern is _OF_THE else m.end(1)
                words = m.group(0).strip()
                return _blank(text, at, end), ("count_subset", {"used": used, "total": total, "span": words}), (used, words)
    return None


# One card of the run said as "one of them" before "the other N": "one GPU sits at 0% while the other 7
# are at 100%", "某个gpu利用率为0，另外7个100%", "一张卡0%，其余7张100%" (first-contact batch j): a part and
# the rest, so the run has N + 1 cards
_A_PART = re.compile(r"\b(?:one|a single|a|one of the|one of my|one of our)\s+(?:nvidia\s+)?(?:gpus?|cards?|devices?|ranks?|processe?s?|workers?|" + G + r")|"
                     r"(?:某|有|其中)(?:一)?(?:个)\s*(?:rank|进程|worker)|"
                     r"(?:某|有)(?:一)?(?:个|张|块)\s*(?:gpu|GPU|卡|显卡|" + G + r")|(?<![\d一两二三四五六七八九十几])(?:一)(?:个|张|块)\s*(?:gpu|GPU|卡|显卡|" + G + r")",
                     re.I | re.A)
# "the other 2 nodes", "其余3台机器": others of another kind, never cards
_OTHERS_NOT_CARDS = re.compile(r"\s*(?:nodes?|machines?|servers?|hosts?|processes|workers|epochs?|steps?|models?|台|个?节点|个?进程|机器)",
                               re.I | re.A)


def rest_and_one(text: str) -> tuple[str, tuple[int, str]] | None:
    """(``text`` with "the other N" blanked, (N + 1, its words)) where one card is named by its role
    or index ("主卡", "GPU 0") beside "the other N", or said as a part before them ("one GPU ... the
    other 7", "一张卡 ... 其余7张"); else None."""
    others = next((m for m in _THE_OTHERS.finditer(text) if (n := to_int(m.group(1) or m.group(2) or m.group(3) or ""))
                   and 0 < n < 64 and not _OTHERS_NOT_CARDS.match(text, m.end())), None)
    if others is None:
        return None
    one = _THE_ONE.search(text) or next((m for m in _A_PART.finditer(text, 0, others.start())), None)
    if one is None:
        return None
    n = to_int(others.group(1) or others.group(2) or others.group(3) or "") or 0
    return _blank(text, *others.span()), (n + 1, others.group(0).strip())


# One of the run's cards or ranks named as a part of them, "其中一张卡", "其中一个rank", "one of the GPUs",
# "one of my 4 cards": the card a symptom is on, never the run's count (which is said elsewhere)
_ONE_OF_THEM = re.compile(r"其中(?:的)?\s*(?:一|1)\s*(?:个|张|块|台)?\s*(?:卡|显卡|gpu|GPU|rank|进程|worker|" + G + r")?|"
                          r"\bone of (?:the|my|our|its|those|these)\b(?=\s+(?:\d+\s+)?(?:gpus|cards|devices|ranks|processes|workers)\b)",
                          re.I | re.A)


# An operating system's version: "Windows 10", "win11", "Ubuntu 22.04", "CentOS 7" (never a count)
_OS_VERSION = re.compile(r"\b(?:windows|win|ubuntu|centos|debian|macos|mac ?os|rhel|rocky|fedora|opensuse|kylin|麒麟|统信)"
                         r"\s*-?\s*\d+(?:\.\d+)*(?:\s*(?:lts|pro|server))?", re.I | re.A)


# A sequence or context length with its figure: "seq 4096", "seq_len=8192", "max_length: 2048",
# "context 32k", "序列长度4096", "上下文 8k" (a length read by the setup rules, never a count)
_LENGTH_FIGURE = re.compile(r"\b(?:seq(?:uence)?(?:[_ -]?len(?:gth)?)?|max[_ ]?(?:seq[_ ]?)?len(?:gth)?|cutoff[_ ]?len|"
                            r"block[_ ]size|context(?:[_ ]length)?|ctx(?:[_ ]len)?)\s*[=:]?\s*\d+(?:\.\d+)?\s*k?\b|"
                            r"(?:序列长度|序列长|上下文长度|上下文|长度)\s*[=:：为是]?\s*\d+(?:\.\d+)?\s*[kK]?", re.I | re.A)


def settle_counts(text: str) -> tuple[str, list[tuple[str, dict]], tuple[int, str] | None]:
    """(text with non-counts blanked, notes, the count a device list gives or None)."""
    notes: list[tuple[str, dict]] = []
    device_list: tuple[int, str] | None = None
    for m in list(_ONE_OF_THEM.finditer(text)):
        text = _blank(text, *m.span())
    for m in list(_OS_VERSION.finditer(text)):  # "Windows 10 电脑" is one computer, not ten
        text = _blank(text, *m.span())
    for m in list(_LENGTH_FIGURE.finditer(text)):  # "seq 4096 2 nodes": the 4096 is a length
        text = _blank(text, *m.span())
    for m in list(_INDEX_LIST.finditer(text)):
        n = _indices(m.group(0))
        if device_list is None and 1 < n <= 64:
            device_list = (n, m.group(0).strip())
        text = _blank(text, *m.span())
    for m in list(_INDEX.finditer(text)):
        group = next(i for i in range(1, 8) if m.group(i) is not None)
        text = _blank(text, m.start(group), m.end(group))
        # an index is said among several cards ("the 0 GPU gets more memory than the others"): the
        # one card named elsewhere ("my GPU is a TITAN Xp") is the kind, not a count of one
        notes.append(("device_index", {"span": m.group(0).strip()}))
    for m in list(_TRIED_ON.finditer(text)):
        notes.append(("machines_tried", {"span": m.group(0).strip()}))
        text = _blank(text, *m.span())
    for m in list(_PER_PROCESS.finditer(text)):
        notes.append(("count_per_process", {"span": m.group(0).strip()}))
        text = _blank(text, *m.span())
    if (fallback := _FALLBACK.search(text)) and (GPU in text[: fallback.start()] or _MENTION.search(text, 0, fallback.start())):
        stop = re.compile(r"[.;。；!?！？\n]").search(text, fallback.end())
        for m in list(_MENTION.finditer(text, fallback.end(), stop.start() if stop else len(text))):
            if m.group(1) or m.group(2):
                notes.append(("count_fallback", {"count": to_int(m.group(1) or m.group(2)), "span": m.group(0).strip()}))
                text = _blank(text, *_count_words(text, *m.span()))
    for m in list(_BASELINE.finditer(text)):
        group = next(i for i in range(1, 6) if m.group(i) is not None)
        notes.append(("count_baseline", {"span": m.group(0).strip()}))
        text = _blank(text, m.start(group), m.end(group))
    return text, notes, device_list
