"""Names with their spans: models and accelerators from the catalog, sizes from unknown names.

Card and model names come from ``bot.catalog.list_gpus()``/``list_models()`` and their aliases
(never a hand-kept list here), so a card the catalog engineer adds is read the same day. Each
alias becomes a pattern that accepts the separators people type ("a100-40g", "A100 40G",
"a100_40gb"). Matching is two-step for speed: a cheap regex of alias *heads* finds candidate
positions, then the full alias patterns are tried only there (linear in the text).

A card the catalog lacks is still recognised as a card (never as a model size): "Ascend 910B"
is a card even in a catalog without it, and an unknown name shaped like a card next to a count
or a memory size ("8x Zephyrion Z9", "4 MI325X 256GB") is reported so the answer can ask.

Model names are read by words (first-contact batch j): an alias matched only by gluing its words into
one that is another catalog family's name ("tinyllama" is TinyLlama, not the test model "tiny-llama"),
a size word alone or joined before a family word ("tiny", "tiny-bert"), and a folder or organisation of
a path ("mistral-community/pixtral-12b") are not the catalog entry they contain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from bot.catalog import UnknownNameError, list_gpus, list_models, lookup_family, lookup_gpu, lookup_model
from bot.catalog.accelerators import BARE_NUMBER_NAMES

MAX_MENTIONS = 24  # a question names a few cards; a pasted list of thousands is read no further
_TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)?|[\u4e00-\u9fff]+")
_SEP = r"[\s_\-]*"


@dataclass(frozen=True)
class NameMention:
    start: int
    end: int
    raw: str
    name: str | None        # catalog name, None when the catalog lacks it
    memory_gb: float | None = None  # a size written with a card name ("A100-40G")
    form: str = ""          # "pcie" / "sxm" / "nvl" written with the card


def _alias_pattern(alias: str) -> str | None:
    """"llama2-7b" -> llama[sep]2[sep]7[sep]b. A separator is optional wherever the alias has one, and
    between a word of two or more letters and a number ("qwen 2.5", "rtx 4090"); never inside "a100"
    (so "a 100" is not an A100)."""
    low = alias.lower()
    tokens = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(low)]
    if not tokens:
        return None
    parts = []
    for i, (tok, start, _) in enumerate(tokens):
        if i:
            prev, pstart, pend = tokens[i - 1]
            glued = pend == start
            if not glued or (prev[0].isalpha() and len(prev) >= 2) or prev[0].isdigit():
                parts.append(_SEP)
            elif prev.isalpha() and len(prev) == 1 and tok[0].isdigit() and len(tok) >= 3:
                parts.append("-?")  # "a-100" is an A100 ("a 100" is not)
        if tok == "x" and 0 < i < len(tokens) - 1 and tokens[i - 1][0][0].isdigit() and tokens[i + 1][0][0].isdigit():
            parts.append("[x×*]")  # "8x7b" as people type it: "8*7B", "8×7B" (LlamaFactory#2321)
            continue
        parts.append(re.escape(tok).replace(r"\.", r"[._]") if tok[0].isdigit() else re.escape(tok))
    if len(tokens) > 1 and len(tokens[-1][0]) == 1 and tokens[-1][0].isalpha() and tokens[-2][0][-1].isdigit():
        parts.append("(?![a-z])")  # "4090d" is a card; "4090 ds zero3" is a 4090 and DeepSpeed (LlamaFactory#5070)
    return "".join(parts)


def _compile(aliases: dict[str, str]) -> tuple[re.Pattern, re.Pattern, dict[str, str], dict[str, str]]:
    """(head regex, full regex with one group per alias order, group -> catalog name, group -> the
    alias as the catalog writes it)."""
    items = []
    for alias, name in aliases.items():
        pat = _alias_pattern(alias)
        if pat:
            items.append((len(pat), pat, alias, name))
    items.sort(key=lambda t: -t[0])
    # heads: the first two tokens of each alias ("a100" -> "a[\s_-]*100"), so a bare "a" in prose
    # is not a candidate position for the full alias set
    heads = sorted({_head(a) for _, _, a, _ in items}, key=len, reverse=True)
    # ASCII boundaries: a name is not glued to other letters/digits ("A100" inside "XA1000" is not one).
    # a name may follow a count glued to it ("8xH100", "4A6000"); letters after a name that ends in
    # a digit are another word glued on in Chinese text ("3090lora"), a digit means another name
    # ... or a card size glued before it ("8*32GV100", Qwen#916)
    head_re = re.compile(r"(?:(?<=\dx)|(?<=\dg)|(?<=\d)(?=[a-z])|(?<![a-z0-9]))(?:" + "|".join(heads) + ")", re.I | re.A)
    full_re = re.compile(r"(?:" + "|".join(f"({p})" for _, p, _, _ in items) + r")(?:(?<=\d)(?!\d)|(?=s(?![a-z0-9])|[^a-z0-9]|$))",
                         re.I | re.A)
    names = {str(i): name for i, (_, _, _, name) in enumerate(items)}
    written = {str(i): alias for i, (_, _, alias, _) in enumerate(items)}
    return head_re, full_re, names, written


def _head(alias: str) -> str:
    pattern = _alias_pattern(alias) or re.escape(alias.lower())
    # the first two tokens of the alias pattern: enough to reject a bare "a" or "qwen" quickly
    pieces = pattern.split(_SEP)
    return _SEP.join(pieces[:2]) if len(pieces) > 1 else pattern[: max(4, len(pattern))]


@lru_cache(maxsize=4)
def _gpu_matchers(signature: tuple[str, ...]):
    aliases: dict[str, str] = {}
    for g in list_gpus():
        for key in (g.name, *g.aliases):
            aliases.setdefault(key, g.name)
            # the catalog name without its memory/form suffix ("A100 80GB SXM" -> "A100") is
            # matched too; the size written next to it then picks the variant.
        base = re.split(r"\s+\d+\s*GB", g.name)[0]
        aliases.setdefault(base, g.name)
    return _compile(aliases)


@lru_cache(maxsize=4)
def _model_matchers(signature: tuple[str, ...]):
    aliases: dict[str, str] = {}
    for m in list_models():
        if getattr(m, "approximate", False) and m.name.startswith("generic"):
            continue
        for key in (m.name, *m.aliases):
            if len(_TOKEN.findall(key.lower())) >= 1 and len(key) >= 3:
                aliases.setdefault(key, m.name)
    return _compile(aliases)


def _signature(items) -> tuple[str, ...]:
    return tuple(x.name for x in items)


_CARD_SUFFIX = re.compile(r"(?:[-_ ]{0,3}(pcie|sxm\d?|nvl))?(?:[-_ ]{0,3}(\d{1,3})[ ]?(?:gb|gib|g)(?![a-z]))?"
                          r"(?:[-_ ]{0,3}(pcie|sxm\d?|nvl))?", re.I | re.A)


_FORM_SUFFIX = re.compile(r"(?:[-_ ]{0,3}(pcie|sxm\d?|nvl))?", re.I | re.A)


def _scan(text: str, head_re: re.Pattern, full_re: re.Pattern, names: dict[str, str], written: dict[str, str]):
    """(start, end, catalog name, the alias that matched) for each name found, left to right."""
    pos = 0
    for head in head_re.finditer(text):
        if head.start() < pos:
            continue
        m = full_re.match(text, head.start())
        if not m:
            continue
        idx = m.lastindex - 1 if m.lastindex else 0
        yield m.start(), m.end(), names[str(idx)], written[str(idx)]
        pos = m.end()


def find_gpus(text: str) -> list[NameMention]:
    """Every catalog card named in ``text`` with the size/form written beside it."""
    head_re, full_re, names, written = _gpu_matchers(_signature(list_gpus()))
    out: list[NameMention] = []
    for start, end, name, _alias in _scan(text, head_re, full_re, names, written):
        if len(out) >= MAX_MENTIONS:
            break
        if text[end - 1].isdigit() and _o_typo_ahead(text, start, end):
            continue  # "A10O" is an A100 and "L4OS" an L40S typed with a letter O (find_card_typos), not an A10/L4
        has_size = re.search(r"\d\s*(?:gb|gib|g)$", text[start:end], re.I | re.A)
        suffix = (_FORM_SUFFIX if has_size else _CARD_SUFFIX).match(text, end)
        groups = suffix.groups() + (None, None) if suffix else (None, None, None)
        form = (groups[0] or groups[2] or "").lower() if suffix else ""
        size = float(groups[1]) if suffix and not has_size and groups[1] else None
        end2 = suffix.end() if suffix and suffix.group(0).strip("-_ ") else end
        raw = text[start:end2]
        resolved = _resolve_gpu(raw, size, form) or name
        if size is None:
            written = re.search(r"(?<![a-z0-9])(\d{1,3})\s*(?:gb|gib|g)(?![a-z])", raw, re.I | re.A)
            size = float(written.group(1)) if written else None
        out.append(NameMention(start, end2, raw, resolved, size, form))
    return sorted(out + _bare_number_cards(text, out), key=lambda m: m.start)[:MAX_MENTIONS]


# A bare card number ("1080") is a card only with card context beside it: a count with a card measure word
# or "x" before it ("两张1080", "2x 1070"), a card word or a memory size after it ("1080显卡", "a 1060 card",
# "1080 8G"). Never a resolution or a length: "1080p", "1920x1080", "1080x1920", "seq len 1080".
_BARE_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])(" + "|".join(BARE_NUMBER_NAMES) + r")(?![0-9]|\.\d)", re.A)
_BARE_BEFORE = re.compile(r"(?:(?:\d{1,3}|[一两二三四五六七八十几多])\s*(?:张|块|台|x|×|\*)|gtx|geforce|nvidia|英伟达|"
                          r"(?:gpu|显卡|card)\s*(?:is|:|：|是|为|用的是|型号是?)?\s*(?:an?\s+)?)\s*$", re.I)
_BARE_AFTER = re.compile(r"\s*(?:显卡|卡|显存|gpus?\b|cards?\b|graphics\b|[x×*]\s*\d{1,2}(?![\d]))|"
                         r"[-_ ]{0,3}\d{1,2}\s?(?:gb|gib|g)(?![a-z])", re.I | re.A)
_BARE_NOT_CARD = re.compile(r"(?:\d{3,4}\s*[x×*]\s*$)|(?:分辨率|resolution|seq|length|长度|len|tokens?|像素|pixels?|size|尺寸)"
                            r"[\s_=:：a-z]{0,8}$", re.I | re.A)
_BARE_NOT_AFTER = re.compile(r"[pPiI](?![A-Za-z])|\s*[x×*]\s*\d{3,4}|\s*(?:tokens?|px|pixels?|像素|分辨率)", re.A)


def _bare_number_cards(text: str, known: list[NameMention]) -> list[NameMention]:
    """Bare card numbers (``BARE_NUMBER_NAMES``) read as the card where the text around says card."""
    out: list[NameMention] = []
    for m in _BARE_NUMBER.finditer(text):
        if any(k.start < m.end() and m.start() < k.end for k in known):
            continue
        before, rest = text[max(0, m.start() - 12): m.start()], text[m.end():]
        if _BARE_NOT_CARD.search(before) or _BARE_NOT_AFTER.match(rest):
            continue
        after = _BARE_AFTER.match(rest)
        if not (after or _BARE_BEFORE.search(before)):
            continue
        size = re.search(r"(\d{1,2})\s?(?:gb|gib|g)$", after.group(0), re.I | re.A) if after else None
        name = BARE_NUMBER_NAMES[m.group(1)]
        if size:  # "1060 3G": the size picks the variant
            name = _resolve_gpu(f"gtx {m.group(1)} {size.group(1)}g", float(size.group(1)), "") or name
        end = m.end() + (after.end() if size and after else 0)
        out.append(NameMention(m.start(), end, text[m.start(): end], name, float(size.group(1)) if size else None))
    return out


# Letters O typed for zeros after a card's digits, then at most a two-letter suffix ("L4OS", "A1OO")
_O_RUN = re.compile(r"([Oo]+)([A-Za-z]{0,2})(?![A-Za-z0-9])", re.A)


def _o_typo_ahead(text: str, start: int, end: int) -> bool:
    """True when the card matched at text[start:end] continues with letter O's that, read as zeros, make
    another name: bare O's as before ("A10O"), or O's and a suffix that name a catalog card ("L4OS" ->
    L40S); "L4 OK" and "L4os" that name nothing stay the card as written."""
    m = _O_RUN.match(text, end)
    if not m:
        return False
    if not m.group(2):
        return True
    typed = text[start:end] + "0" * len(m.group(1)) + m.group(2)
    try:
        lookup_gpu(typed)
    except UnknownNameError:
        return False
    return True


@lru_cache(maxsize=512)
def _resolve_gpu(raw: str, size: float | None, form: str) -> str | None:
    if size is None:
        written = re.search(r"(?<![a-z0-9])(\d{1,3})\s*(?:gb|gib|g)(?![a-z])", raw, re.I | re.A)
        size = float(written.group(1)) if written else None
    base = re.sub(r"[-_ ]*\d+\s*(?:gb|gib|g)(?![a-z]).*$", "", raw, flags=re.I | re.A).strip()
    base = re.sub(r"[-_ ]*(?:sxm\d?|pcie)$", "", base, flags=re.I | re.A).strip() or raw
    size_txt = f"{size:g}g" if size else ""
    form_txt = "pcie" if form.startswith("pcie") or "pcie" in raw.lower() else ("nvl" if form == "nvl" else "")
    first = () if size and not re.search(r"\d\s*(?:gb|gib|g)", raw, re.I | re.A) else (raw,)
    for cand in (*first, f"{base} {size_txt} {form_txt}", f"{base} {form_txt} {size_txt}", f"{base} {size_txt}",
                 f"{base} {form_txt}", base):
        cand = " ".join(cand.split())
        if not cand:
            continue
        try:
            return lookup_gpu(cand).name
        except UnknownNameError:
            continue
    return None


# A release word between a family and its size ("Qwen-2.5-instruct 32B", "llama 3.1 chat 70B"):
# blanked for matching (same length, so spans stay the user's text). Glued to the family's letters it
# is part of the family's one word ("StarCoderBase-7B" is StarCoderBase, not StarCoder at 7B).
_VARIANT_WORD = re.compile(r"(?:(?<=[a-z0-9.])[-_ ]|(?<=[0-9.]))(?:instruct|chat|base|hf)(?=[-_ ]+\d+(?:\.\d+)?\s*b(?![a-z]))",
                           re.I | re.A)
# Words that say a size within a family's names ("Whisper-tiny", "BERT-base", "GPT-2 Medium"): alone
# they name no model, and joined before a family word they make another, smaller family's name
# ("tiny-bert", "MiniLlama": not BERT-base, not a Llama of the catalog)
_SIZE_WORDS = r"(?:tiny|mini|small|base|medium|large|nano|micro|xl|xxl)"
_SIZE_WORD = re.compile(_SIZE_WORDS, re.I | re.A)
_SIZE_WORD_JOINED = re.compile(r"(?<![A-Za-z0-9])" + _SIZE_WORDS + r"[-_]?$", re.I | re.A)
_LETTER_WORDS = re.compile(r"[a-z]+")
# a path or a repository id: the characters of one token that holds a "/"
_PATH_CHARS = re.compile(r"[^\s'\"`()\[\]{},;=]")


def _glued_words(written: str, alias: str) -> list[str]:
    """The words of ``written`` that glue two or more of the alias's letter words into one
    ("tinyllama" against the alias "tiny-llama"), in order."""
    mine, theirs = _LETTER_WORDS.findall(written.lower()), _LETTER_WORDS.findall(alias.lower())
    glued = []
    for word in mine:
        if word in theirs:
            continue
        for i in range(len(theirs)):
            joined = ""
            for j in range(i, len(theirs)):
                joined += theirs[j]
                if j > i and joined == word:
                    glued.append(word)
                if len(joined) >= len(word):
                    break
    return glued


def _word_reading(text: str, start: int, end: int, name: str, alias: str) -> str | None | bool:
    """How a catalog match reads as a name (word boundaries and the longest name win):

    - the alias's words glued into one word that is another catalog family's name ("tinyllama"
      against the alias "tiny-llama" of a 6M test model, the family TinyLlama): that family's model
      when it has one size, else no model (its size is asked);
    - a size word alone ("tiny", "base"), or a catalog name after a size word joined to it
      ("tiny-bert", "mini_llama"): no model of the catalog;
    True: the match stands."""
    written = text[start:end]
    for word in _glued_words(written, alias):
        family = lookup_family(word)
        if family is None:
            continue
        members = {catalog for _, catalog in family.members}
        if name in members:
            return True
        return members.pop() if len(members) == 1 else None
    if _SIZE_WORD.fullmatch(written.strip()) and written.strip() != text.strip():
        return None
    token_start = start
    while token_start > 0 and re.match(r"[A-Za-z0-9_\-]", text[token_start - 1]):
        token_start -= 1
    if token_start < start and _SIZE_WORD_JOINED.search(text[token_start:start]):
        return None
    return True


def _path_token(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of the path or repository id holding ``text[start:end]`` (None: not in one)."""
    a, b = start, end
    while a > 0 and _PATH_CHARS.match(text[a - 1]):
        a -= 1
    while b < len(text) and _PATH_CHARS.match(text[b]):
        b += 1
    return (a, b) if "/" in text[a:b] or "\\" in text[a:b] else None


def find_models(text: str) -> list[NameMention]:
    """Every catalog model named in ``text``, read by words: a match that glues the alias's words into
    another family's name, or a size word alone, is not the catalog entry (``_word_reading``); in a
    path, a name in a folder before the one that names a model is the folder ("mistral-community/
    pixtral-12b" is Pixtral)."""
    head_re, full_re, names, written = _model_matchers(_signature(list_models()))
    masked = _VARIANT_WORD.sub(lambda m: " " * len(m.group(0)), text)
    found: list[NameMention] = []
    for s, e, name, alias in _scan(masked, head_re, full_re, names, written):
        reading = _word_reading(text, s, e, name, alias)
        if reading is None or reading is False:
            continue
        found.append(NameMention(s, e, text[s:e], name if reading is True else str(reading)))
    models: list[NameMention] = []
    folders: list[NameMention] = []
    for m in found:
        token = _path_token(text, m.start, m.end)
        later = token is not None and any(o is not m and token[0] <= o.start < token[1] and "/" in text[m.end: o.start]
                                          for o in found)
        (folders if later and token is not None and _is_folder(text, token, m) else models).append(m)
    # a folder's name is still a name (its digits are no size of the run), listed after the model the path names
    return models + folders


def _is_folder(text: str, token: tuple[int, int], m: NameMention) -> bool:
    """Whether the name ``m`` is a folder of the path ``token``: a path of several folders or from a root
    ("/data/llama/Qwen2.5-7B", "~/hf/..."), or an organisation holding a family word
    ("mistral-community/pixtral-12b"); "chatglm-6b/chatglm2-6B" is two names offered together."""
    path = text[token[0]: token[1]]
    if path.count("/") + path.count("\\") > 1 or path[:1] in "/~.\\" or "://" in path:
        return True
    seg_start = max(text.rfind("/", token[0], m.start), text.rfind("\\", token[0], m.start)) + 1 or token[0]
    seg_start = max(seg_start, token[0])
    seg_end = min([i for i in (text.find("/", m.end, token[1]), text.find("\\", m.end, token[1])) if i >= 0] or [token[1]])
    return (m.start, m.end) != (seg_start, seg_end)


def card_family(gpu_name: str) -> str:
    """"A100 80GB SXM" -> "a100", "RTX 4090 24GB" -> "rtx 4090", "H100 NVL 94GB" -> "h100 nvl"."""
    return re.split(r"[\s_\-]+\d+(?:\.\d+)?\s*G(?:i?B)?(?![A-Za-z])", gpu_name, maxsplit=1, flags=re.I)[0].strip().lower()


def model_params_b(name: str) -> float | None:
    try:
        spec = lookup_model(name)
    except UnknownNameError:
        return None
    value = getattr(spec, "published_params_b", None) or None
    if value:
        return float(value)
    try:
        return float(spec.params) / 1e9  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a spec without a count: the size is unknown, not an error
        return None


# Cards the catalog may lack, by shape rather than by a list: an accelerator family word, or a
# short letters+digits token written next to a count or a memory size.
_ACCEL_FAMILY = re.compile(r"(?:ascend|昇腾)\s*-?\s*((?:910|310)(?:pro)?[a-z]?\d?)(?![\da-z])", re.I | re.A)
# Consumer cards of other vendors the catalog may lack ("RX 5600XT", "Radeon RX 7900 XTX", "Arc A770")
_VENDOR_FAMILY = re.compile(r"(?<![A-Za-z0-9])(?:radeon\s*)?rx\s*-?\d{3,4}\s*(?:xtx|xt|gre)?(?![A-Za-z0-9])|"
                            r"(?<![A-Za-z0-9])(?:intel\s+)?arc\s*a\d{3}(?![A-Za-z0-9])", re.I | re.A)
_CARD_SHAPE = r"(?:rtx\s*)?[A-Z][A-Za-z]{0,9}[-\s]?[A-Z]?\d{1,4}[A-Za-z]{0,3}"
_UNKNOWN_CARD = [
    re.compile(r"(?<![A-Za-z0-9_.ǤḾ])\d{1,3}\s*(?:x|×|\*)\s*(" + _CARD_SHAPE + r"(?:\s+[A-Z][a-z]+)?)\s+(?:accelerators?|gpus?|cards?|npus?)",
               re.I | re.A),
    re.compile(r"(?<![A-Za-z0-9_.ǤḾ])\d{1,3}\s*(?:张|块|卡)\s*(" + _CARD_SHAPE + r"|(?:rtx\s*)?\d{4}(?:\s*ti)?)(?![\dA-Za-z])"),
]


def find_unknown_cards(text: str, known: list[NameMention]) -> list[NameMention]:
    """Cards named in ``text`` that the catalog does not know (outside ``known`` spans)."""
    out: list[NameMention] = []

    def free(s: int, e: int) -> bool:
        return not any(k.start < e and s < k.end for k in known + out)

    for m in _ACCEL_FAMILY.finditer(text):
        if free(m.start(), m.end()):
            label = "Ascend " + m.group(1).replace(" ", "").upper()
            out.append(NameMention(m.start(), m.end(), m.group(0), None))
            object.__setattr__(out[-1], "raw", label)
    for m in _VENDOR_FAMILY.finditer(text):
        if free(m.start(), m.end()):
            out.append(NameMention(m.start(), m.end(), " ".join(m.group(0).split()), None))
    for pattern in _UNKNOWN_CARD:
        for m in pattern.finditer(text):
            s, e = m.span(1)
            token = m.group(1)
            if not free(s, e) or re.fullmatch(r"\d+\s*[a-z]*", token, re.I | re.A):
                continue
            if re.search(r"(?i)^(?:gpu|gpus|card|node|b|g|gb)$", token):
                continue
            out.append(NameMention(s, e, token, None))
    return out


# A card name typed with one slip: a letter O for a zero ("A10O", "H1OO") or one digit left out
# ("A00 40G", "H10 80G"). Token shape: a few letters, then digits (or O's) only.
_TYPO_TOKEN = re.compile(r"(?<![A-Za-z0-9_.\-/])((?:rtx\s?)?[A-Za-z]{1,3})([0-9Oo]{2,4})([A-Za-z]{0,2})(?![A-Za-z0-9_\-])",
                         re.I | re.A)
# what makes a token a card and not a version or a code: a memory size after it, a count before it
# ("8 x", "4张"), or a card word after it
_TYPO_AFTER = re.compile(r"[-_ ]{0,3}(\d{1,3})\s?(?:gb|gib|g)(?![a-z])|\s*(?:gpus?|cards?|显卡|卡)", re.I | re.A)
_TYPO_BEFORE = re.compile(r"(?:\d{1,3}\s*(?:x|×|\*|张|块|台)|[两二三四五六八十]\s*[张块台]|\b(?:two|four|eight|dual))\s*$",
                          re.I)


@lru_cache(maxsize=4)
def _card_bases(signature: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Card names without sizes as typed keys ("a100", "rtx3090", "h100") -> the catalog cards."""
    out: dict[str, set[str]] = {}
    for g in list_gpus():
        for key in (card_family(g.name), *g.aliases):
            k = re.sub(r"[^a-z0-9]", "", key.lower())
            if re.fullmatch(r"[a-z]{1,6}\d{2,4}(?:[a-z]{1,2})?", k) and not re.search(r"\d(?:g|gb)$", key.lower()):
                out.setdefault(k, set()).add(g.name)
    return {k: tuple(sorted(v)) for k, v in out.items()}


@dataclass(frozen=True)
class CardTypo:
    """A card-shaped token the catalog does not know that one slip away names catalog cards."""

    mention: NameMention    # the span as written; ``name`` set when one card fits, else None
    options: tuple[str, ...]  # the catalog cards it could be (one when it was read as that card)


def find_card_typos(text: str, known: list[NameMention]) -> list[CardTypo]:
    """Card names with a slip: an O typed for a zero, or one digit missing. A token is read only
    next to a card's context (a memory size after it, a count before it, a card word after it);
    the written memory size narrows the candidates ("A00 40G": A100 has a 40 GB card, A800 has
    not). One candidate: the card, said in a note; several: the options, for one question."""
    bases = _card_bases(_signature(list_gpus()))
    found: list[CardTypo] = []
    for m in _TYPO_TOKEN.finditer(text):
        if any(k.start < m.end() and m.start() < k.end for k in known):
            continue
        letters, digits, tail = re.sub(r"\s", "", m.group(1)).lower(), m.group(2).lower(), m.group(3).lower()
        after = _TYPO_AFTER.match(text, m.end())
        o_typo = "o" in digits and any(ch.isdigit() for ch in digits)  # "A10O": a card only a slip away
        if not (o_typo or after or _TYPO_BEFORE.search(text[max(0, m.start() - 8): m.start()])):
            continue
        if letters + digits + tail in bases:
            continue  # a card as written
        keys: set[str] = set()
        if "o" in digits and digits.replace("o", "0") != digits:
            keys.add(letters + digits.replace("o", "0") + tail)  # "A10O" -> a100, "L4OS" -> l40s
        elif tail:
            continue  # a missing digit is guessed only on a bare letters+digits token ("A00 40G")
        elif digits.isdigit():
            keys |= {letters + digits[:i] + d + digits[i:] for i in range(len(digits) + 1) for d in "0123456789"}
        names = sorted({n for k in keys for n in bases.get(k, ())})
        if not names:
            continue
        size = float(after.group(1)) if after and after.group(1) else None
        if size is not None:
            sized = [n for n in names if (r := _resolve_gpu(f"{card_family(n)} {size:g}g", size, "")) and
                     lookup_gpu(r).memory_gb == size]
            names = sorted({_resolve_gpu(f"{card_family(n)} {size:g}g", size, "") or n for n in sized}) or names
        if size is None:  # no size written: each family's default card ("H1OO" -> the H100 SXM)
            names = sorted({_resolve_gpu(card_family(n), None, "") or n for n in names})
        families = sorted({card_family(n) for n in names})
        one = names[0] if len(families) == 1 else None
        # read as a card, the size written after it is the card's; left unknown, the size stays in
        # the text for the reader (the answer computes on it and asks which card)
        end = after.end() if one and after and after.group(1) else m.end()
        found.append(CardTypo(NameMention(m.start(), end, text[m.start(): end], one, size), tuple(names)))
    return found
