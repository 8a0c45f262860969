"""Name matching shared by the model and accelerator catalogs: lookup keys for names as people
write them (either language), the size written in a model name, model families built from the
catalog's own names, the error for an unknown name and the close-name suggestions it carries.

Rules (each covers a class of names, not one spelling):
- a key is lower case, without an organisation prefix (``Qwen/``; a "/" before a digit is the
  name's own, ``ViT-B/16``), a release suffix
  (``-Instruct``, ``-chat``, ``-hf``) or separators: ``Qwen/Qwen2.5-7B-Instruct`` -> ``qwen2.57b``;
- Chinese family names become the Latin family word first (``千问2.5-7B`` -> ``qwen2.5-7b``),
  from the table in ``models.json`` (``zh_names``);
- ``2_5`` between digits is a version (``internlm2_5-7b`` is InternLM2.5), ``1_8b`` a size (1.8B);
- a size token (``7b``, ``0.5B``, ``8x7b``, ``560m``) not glued to letters or digits splits a
  name into its family (the words before it, release words dropped) and its size:
  ``internlm2-chat-20b`` -> family ``internlm2``, size 20B (``split_name``; ``size_in_name``
  gives the size alone, for a name whose family the catalog lacks).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from bot.core.errors import UserError


class UnknownNameError(UserError, LookupError):
    """An unknown model or GPU name; ``suggestions`` holds the closest catalog names. ``family``
    is the model family the name belongs to when the family is known but the size is not (or not
    one the catalog has): the reader can then ask for the size, or read it from the name."""

    def __init__(self, kind: str, name: str, suggestions: list[str], hint: str = "", family=None):
        self.kind, self.name, self.suggestions, self.family = kind, name, suggestions, family
        did_you_mean = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown {kind} {name!r}.{did_you_mean}{(' ' + hint) if hint else ''}")


def suggest(key: str, index: dict, names_of, limit: int = 3) -> list[str]:
    """Catalog names whose normalised keys are close to ``key`` (difflib ratio >= 0.6)."""
    close = difflib.get_close_matches(key, list(index), n=8, cutoff=0.6)
    return list(dict.fromkeys(names_of(index[c]) for c in close))[:limit]


# --- keys ------------------------------------------------------------------------------------

_SUFFIXES = re.compile(r"([-_ .](instruct|chat|it|hf|base|pt|pretrained))+$")
_META = re.compile(r"^meta[-_ ]")
_NOT_KEY = re.compile(r"[^a-z0-9.\u4e00-\u9fff]")
_ORG = re.compile(r"^.*/(?=[^/\d][^/]*$)")
# Release words anywhere in a family part ("internlm2-chat", "qwen2.5-coder-instruct"): a
# checkpoint's tuning, not its shape.
RELEASE_WORDS = frozenset({"instruct", "chat", "it", "hf", "base", "pt", "pretrained", "sft", "dpo", "rlhf",
                           "gguf", "awq", "gptq", "int4", "int8", "fp8", "bf16", "fp16", "hf-format"})
_SEPARATORS = re.compile(r"[-_ ·・.]+")
_VERSION_UNDERSCORE = re.compile(r"(?<=\d)_(?=\d(?:[-_ ]|$))")  # "internlm2_5-7b" -> "internlm2.5-7b"
_SIZE_UNDERSCORE = re.compile(r"(?<=[-_ /])(\d)_(\d)(?=[bm](?![a-z]))")  # "qwen-1_8b" -> "qwen-1.8b", not "foo2_7b"
# A size: digits with b/m, optionally "NxM" experts, not glued to letters/digits/dots before it
# ("a3b" in "30b-a3b" is not a size: it is the activated count) nor to letters/digits after.
SIZE_TOKEN = re.compile(r"(?<![a-z0-9.])(?:(\d{1,3})\s*x\s*)?(\d{1,4}(?:\.\d{1,3})?)\s*([bm])(?![a-z0-9])")

_ZH_NAMES: dict[str, str] = {}


def set_zh_names(table: dict[str, str]) -> None:
    """Install the Chinese -> Latin family-word table (longest names replaced first)."""
    _ZH_NAMES.clear()
    _ZH_NAMES.update(sorted(table.items(), key=lambda kv: -len(kv[0])))
    for cached in (latin, norm_key, split_name):  # keys made before depend on the old table
        cached.cache_clear()


@lru_cache(maxsize=16384)
def latin(text: str) -> str:
    """``text`` lower-cased with Chinese family names replaced by their Latin family word."""
    text = text.lower().strip()
    for zh, word in _ZH_NAMES.items():
        if zh in text:
            rest = text.replace(zh, " ")
            # "通义千问Qwen2.5", "智谱 ChatGLM3": the Latin name is written too, the Chinese one goes
            text = (rest if word in rest else text.replace(zh, word)).strip()
    text = _VERSION_UNDERSCORE.sub(".", text)
    return _SIZE_UNDERSCORE.sub(r"\1.\2", text)


def _drop_org(text: str) -> str:
    """``Qwen/Qwen2.5-7B`` -> ``Qwen2.5-7B``; a "/" before a digit is part of the name
    (``ViT-B/16``, ``DiT-XL/2``), not an organisation."""
    org = _ORG.match(text)
    return text[org.end():] if org else text


@lru_cache(maxsize=16384)
def norm_key(text: str) -> str:
    """A lookup key: lower case, no organisation prefix, no -instruct/-chat/-hf/-base suffix."""
    text = _drop_org(latin(text))
    text = _META.sub("", _SUFFIXES.sub("", text))
    return _NOT_KEY.sub("", text)  # Chinese characters stay: "可图" is a name


# --- sizes and families --------------------------------------------------------------------------


def size_label(experts: str | None, number: str, unit: str) -> str:
    """A size as the catalog writes it: "7B", "0.5B", "560M", "8x7B"."""
    value = f"{float(number):g}"
    return f"{int(experts)}x{value}B" if experts else f"{value}{unit.upper()}"


@dataclass(frozen=True)
class NameParts:
    """A model name split at its size: ``family_key`` (a lookup key), ``family_text`` (as
    written), ``size`` ("20B"), or ``size`` None when no size is written."""

    family_key: str
    family_text: str
    size: str | None


@lru_cache(maxsize=16384)
def split_name(text: str) -> NameParts | None:
    """The family and size written in a model name, or None when nothing precedes a size
    (``7b``) or the name has no family words."""
    low, orig = latin(text), text.strip()
    if len(orig) != len(low):  # a Chinese name was replaced: the Latin form is the one to show
        orig = low
    cut = len(low) - len(_drop_org(low))
    low, orig = low[cut:], orig[cut:]
    if re.match(r"meta[-_ ]", low):
        low, orig = low[5:], orig[5:]
    size = SIZE_TOKEN.search(low)
    head = orig[: size.start()] if size else orig
    words = [w for w in _SEPARATORS.split(head.strip()) if w]
    # a release word is dropped; a version dot between digits stays ("qwen2.5", "llama 3.1")
    kept: list[str] = []
    for word in re.split(r"([-_ ·・]+)", head.strip()):
        if word.strip("-_ ·・").lower() in RELEASE_WORDS:
            continue
        kept.append(word)
    family_text = "".join(kept).strip("-_ ·・.")
    key = norm_key(family_text) if words else ""
    key = key.strip(".")
    if not key:
        return None
    return NameParts(key, family_text, size_label(*size.groups()) if size else None)


@dataclass
class FamilyRecord:
    """A family built from catalog names: its display name and size -> catalog name."""

    name: str
    members: dict[str, str]


def size_billions(size: str) -> float:
    """"7B" -> 7.0, "560M" -> 0.56, "8x7B" -> 56.0."""
    n = re.match(r"(?:(\d+)x)?([\d.]+)([BM])", size)
    if not n:
        return 0.0
    return float(n.group(2)) / (1000 if n.group(3) == "M" else 1) * int(n.group(1) or 1)


def build_families(entries: Iterable[tuple[str, tuple[str, ...], float]],
                   extra_aliases: dict[str, list[str]]) -> dict[str, FamilyRecord]:
    """Family key -> record, from every (catalog name, aliases, parameters in billions): each name
    or alias with a size written in it makes its model the member of that size of the family
    written before the size. Catalog names come first (they name the family and win a contested
    size). A "size" over 3x the model's count is not its size (a repo's "39B" training samples;
    MoE names give the active or the per-expert size, below the total).
    ``extra_aliases``: family display name -> more names for it ("千问", "qwen-chat")."""
    families: dict[str, FamilyRecord] = {}
    entries = list(entries)
    billions = {name: b for name, _, b in entries}
    passes = [[(name, name) for name, _, _ in entries],
              [(a, name) for name, aliases, _ in entries for a in aliases]]
    for written_list in passes:
        for written, target in written_list:
            parts = split_name(written)
            if parts is None or parts.size is None or size_billions(parts.size) > 3 * billions[target]:
                continue
            record = families.setdefault(parts.family_key, FamilyRecord(parts.family_text, {}))
            record.members.setdefault(parts.size, target)
    for display, aliases in extra_aliases.items():
        own = split_name(display)
        named = families.get(own.family_key) if own else None
        if named is None:
            continue
        named.name = display
        for alias in aliases:
            key = norm_key(alias)
            if not key:
                continue
            other = families.get(key)
            if other is not None and other is not named:  # another spelling of the same family
                for size, target in other.members.items():
                    named.members.setdefault(size, target)
            families[key] = named
    return families


def size_in_name(text: str) -> float | None:
    """The parameter count in billions written in a model name, by the rules above, or None:
    "internlm2-chat-20b" -> 20.0, "Qwen-1_8B-Chat" -> 1.8, "foo2_7b_chat" -> 7.0 (not 2.7),
    "Mixtral-8x7B" -> 56.0 (experts x size: the name's own arithmetic, not the shared count),
    "bloom-560m" -> 0.56, "Qwen3-30B-A3B" -> 30.0 (the activated "A3B" is not the size)."""
    size = SIZE_TOKEN.search(latin(text))
    return size_billions(size_label(*size.groups())) if size else None
