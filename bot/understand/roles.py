"""Clauses whose figures are not the run's: hardware in an aside, another project's setup.

A number's role comes from its clause. "We also have some V100s" names hardware the person owns
but does not train on; "the llama-recipes config uses 4 nodes" is someone else's setup. Before the
prose rules read counts and sizes, ``set_aside(marked)`` blanks such clauses (same length, so
spans stay valid) and says which it blanked, so the answer can say what it did not take as the
run's. An aside is set aside only when the run's hardware is named elsewhere (a lone "we also have
8 A100s" is the only hardware there is).
"""

from __future__ import annotations

import re

from bot.understand.counts import GPU

# A clause: up to a sentence stop, a semicolon or a line break (Chinese commas too, since
# "另外还有几张V100" is one clause of a longer sentence).
_CLAUSE = re.compile(r"[^.;；。!?！？\n，,]+", re.A)
_ASIDE = re.compile(r"\b(?:we|i)\s+(?:also|additionally)\s+(?:have|has|got|own)\b|\balso\s+(?:have|got)\b|\bbesides\b|"
                    r"\bapart from (?:that|these|those)\b|\bin addition,? we\b|另外(?:还)?有|此外(?:还)?有|我们还有|还有(?=[^，,。]{0,8}"
                    r"(?:张|块|台|" + GPU + r"))|也有(?=[^，,。]{0,8}" + GPU + r")", re.I | re.A)
# Where somebody else ran it: "the authors tested on 80 GB A100s", "the paper benchmarked it on
# H100s", "官方在A100 80G上测试的". The card there is the project's reference (a requirement at
# most), never the asker's; the asker's own cards are named in another clause.
_TESTED_BY = (r"\b(?:they|the (?:original )?authors?|the (?:paper|readme|repo|model card|original (?:paper|work|repo))|"
              r"(?:the )?(?:developers|maintainers|official (?:team|repo)))\s+(?:(?:says?|said|states?|mentions?|reports?)\s+"
              r"(?:that\s+)?(?:it|they|the model)\s+(?:was|were)\s+)?(?:(?:have|has|had)\s+)?(?:tested|benchmarked|evaluated|"
              r"validated|trained|pretrained|pre-trained|fine-?tuned|reported|ran|run)\b|"
              r"(?:官方|原作者|作者|论文|项目|仓库|README|模型卡|别人|他们|大佬)(?:里|中|的)?(?:是|都是)?(?:在|用)[^，,。；;]{0,24}"
              r"(?:测试|训练|跑|实验|评测|验证|微调)|(?:官方|原作者|作者|论文|项目|别人|他们|大佬)(?:的)?(?:测试|实验|训练|评测)(?:时|中|环境)?"
              r"(?:用了|用的|使用了|使用的|是|在)")
# The same without a subject ("it was tested on A100 80GB", "是在A100上测试的"): somebody else's
# only where the clause does not speak of the asker ("I trained it on 4 A100s" is the run's).
_PASSIVE_TESTED = re.compile(r"\b(?:it|this|the model|the code|the recipe)\s+(?:was|were|has been|is)\s+(?:tested|benchmarked|"
                             r"evaluated|validated|trained|pretrained|pre-trained)\s+(?:on|with|using)\b|"
                             r"(?:^|[^我])是在[^，,。；;]{0,24}上(?:测试|训练|评测|验证)(?:的|过)", re.I | re.A)
# What a project says it can run on, with no subject of the asker's: "this tracker can be trained on
# 4*2080Ti", "the model can be fine-tuned with 8 V100s" (first-contact batch h); the asker's own
# words before it only report it ("I noticed that ...", "I read that ...")
_CAN_BE_RUN = re.compile(r"\b(?:it|this|that|the)\s+(?:[a-z0-9-]+\s+){0,2}?(?:can|could|should|is able to)\s+be\s+(?:trained|run|"
                         r"fine-?tuned|reproduced|finetuned)\s+(?:on|with|using|in)\b", re.I | re.A)
_REPORTING = re.compile(r"\b(?:i|we)\s+(?:(?:have|had|just)\s+)?(?:noticed|notice|read|saw|see|found|heard|learned|learnt|think|"
                        r"thought|believe|understand|know)\b(?:\s+(?:that|in|on|from))?", re.I | re.A)
# Reading somebody else's figures: "I read in the read me that only 1 A100 GPU was used", "according to
# the paper, 8 A100s", "the model card mentions 4 A100s", "官方说可以用4张2080Ti训练", "README里写着单卡就能跑",
# "据说4张卡就能训练" (first-contact batch h)
_SOURCE = r"(?:paper|readme|read\s?me|docs?|documentation|repo|repository|model card|blog|report|tutorial|guide|authors?|maintainers?)"
_READ_IN = (r"\b(?:read|saw|seen|see|noticed|found)\s+(?:it\s+)?(?:in|on|from)\s+(?:the|your|their|its|this)\s+" + _SOURCE + r"\b|"
            r"\baccording to\s+(?:the|your|their|its|this)\s+" + _SOURCE + r"\b|"
            r"\b(?:the|your|their|its)\s+" + _SOURCE + r"\s+(?:claims?|mentions?|states?|notes?|suggests?|lists?|shows?|reports?|"
            r"writes?|wrote|said)\b|"
            r"(?:官方|原作者|作者|论文|项目|仓库|README|readme|文档|说明|模型卡|教程)(?:里|中|上|的)?(?:说|写着|写的|写了|提到|表示|声称|介绍)|"
            r"\b(?:you|you guys|y'all|they|the team)\s+(?:(?:have|had)\s+)?(?:mention(?:ed|s)?|say|says|said|claim(?:ed|s)?|state[ds]?|"
            r"wrote|write|report(?:ed|s)?|recommend(?:ed|s)?)\b|"
            r"(?:你们|您|他们)(?:在\S{0,8}?里)?(?:说|写|提到|表示|推荐)|据说|听说|号称")
# A clause that only names the source, the figures following it: "According to the paper, 8 A100s ...",
# "In the README, ...", "论文里，..."
_SOURCE_LEAD = re.compile(r"(?:according to|as (?:stated|said|written|mentioned) in|in|from)\s+(?:the|your|their|its|this)\s+"
                          + _SOURCE + r"|(?:论文|README|readme|文档|官方文档|说明)(?:里|中|上)(?:说|写的是|写着)?", re.I | re.A)
# Where a clause about somebody else's run turns to the asker's own ("... but my 4 RTX 4090 go OOM").
_MY_TURN = re.compile(r"\b(?:but|while|whereas|yet|and|though|although)\s+(?:on\s+|with\s+)?(?:my|our|i|we)\b|"
                      r"(?:但是?|可是|而|不过)?我(?:的|们)?", re.I | re.A)
_FIRST_PERSON = re.compile(r"\b(?:i|we|my|our|me|us)\b|我", re.I | re.A)
_OTHERS = re.compile(r"\b(?:config|configs|recipe|recipes|example|examples|paper|readme|tutorial|blog|repo|guide|docs?|"
                     r"benchmark|report)\s+(?:uses?|used|has|had|trains?|trained|runs?|ran|recommends?|says?|sets?|is set to|"
                     r"assumes?)\b|\b(?:they|the authors|others|other people|someone|people|(?:my |a |our )?(?:colleagues?|coworkers?|"
                     r"co-workers?|friends?|teammates?))\s+(?:use|used|uses|train|trained|ran|run|runs|had|has)\b|"
                     r"(?:官方|别人|论文|教程|示例|例子|文档|README|仓库|他们|同事|朋友|其他人|作者|大佬)(?:里|中|上|的)?(?:配置|脚本)?(?:里|中)?"
                     r"(?:用了|用的|使用了|是|给的|推荐|写的|跑的)|" + _TESTED_BY + "|" + _READ_IN, re.I | re.A)
_FIGURE = re.compile(r"\d|" + GPU + r"|两|双|几|some|several", re.I | re.A)


def _can_be_run_elsewhere(clause: str) -> bool:
    """"this tracker can be trained on 4*2080Ti": what the project runs on, not the asker's cards (the
    asker is absent after it, and before it only reports it: "I noticed that ...")."""
    can = _CAN_BE_RUN.search(clause)
    if can is None or _FIRST_PERSON.search(clause, can.end()):
        return False
    before = clause[: can.start()]
    return not _FIRST_PERSON.search(before) or bool(_REPORTING.search(before))


def _asks(marked: str, clause: str, end: int) -> bool:
    """Whether a clause is itself asked about: it or the rest of its sentence ends at a question mark
    or asks with 吗/能不能 ("号称4张3090能跑13B，是真的吗？")."""
    rest = re.match(r"[^.。!！\n]*", marked[end:])
    return bool(re.search(r"吗|能不能|可不可以|是否|\?|？", clause + (rest.group(0) if rest else "")))


def set_aside(marked: str) -> tuple[str, list[tuple[str, dict]]]:
    """``marked`` with aside and other people's clauses blanked, and (code, values) notes."""
    notes: list[tuple[str, dict]] = []
    chars = list(marked)
    asides: list[tuple[int, int]] = []
    premises: list[tuple[int, int]] = []  # somebody's setup the question asks about ("听说两张4090就能…？")
    source_lead = False  # the clause before was "According to the paper," with no figure of its own
    for clause in _CLAUSE.finditer(marked):
        text = clause.group(0)
        lead, source_lead = source_lead, False
        if not _FIGURE.search(text):
            source_lead = bool(_SOURCE_LEAD.fullmatch(text.strip())) and marked[clause.end(): clause.end() + 1] in ",，"
            continue
        start, end = clause.span()
        if (others := _OTHERS.search(text)) or (_PASSIVE_TESTED.search(text) and not _FIRST_PERSON.search(text)) or \
                _can_be_run_elsewhere(text) or (lead and not _FIRST_PERSON.search(text)):
            code = "others_setup"
            if others and (turn := _MY_TURN.search(text, others.end())):
                # "the paper benchmarked it on H100s but my 4 RTX 4090 go OOM": the asker's part stays
                end = start + turn.start()
                text = text[: turn.start()]
        elif _ASIDE.search(text) and GPU in text:
            code = "aside_hardware"
        else:
            continue
        if code == "aside_hardware":
            asides.append((start, end))
        elif _asks(marked, text, end):
            premises.append((start, end))
        for i in range(start, end):
            chars[i] = " "
        notes.append((code, {"span": text.strip()}))
    out = "".join(chars)
    if premises and GPU not in out and not _FIRST_PERSON.search(out):
        # the setup heard of is the one asked about ("I heard two 4090s can QLoRA a 70B: FSDP or DDP?"):
        # with no card and no clause of the asker's own, it is the question's setup, not a reference beside it
        for start, end in premises:
            chars[start:end] = marked[start:end]
        spans = {marked[start:end].strip() for start, end in premises}
        notes = [n for n in notes if not (n[0] == "others_setup" and n[1]["span"] in spans)]
        out = "".join(chars)
    if asides and GPU not in out:
        # the aside held the only card named: it is the hardware there is
        for start, end in asides:
            chars[start:end] = marked[start:end]
        notes = [n for n in notes if n[0] != "aside_hardware"]
        out = "".join(chars)
    return out, notes
