"""Figures the message gives twice: contradictions (asked about, never picked silently) and
alternatives (weighed by the asker, each answered).

- ``roles_and_contradictions``: the notes on the roles the reader gave figures (a used figure, a
  requirement, ...), the prose rules' contradictions and a card named with a size it is not sold
  with ("my A100 has 24GB"). A contradiction the reading settles is computed on one reading and
  said in one line (``contradiction_computed``); one it cannot settle is a problem, worded by the
  message catalogs (``problem.said_both``) in the answer's language.
- ``read_alternatives``: card sizes, cards or GPU counts listed as alternatives ("40GB or 80GB
  A100", "A100 or H100", "4 or 8 GPUs"): the smallest bounds the table, each gets a line
  (notes ``memory_alternatives``, ``card_alternatives``, ``count_alternatives``), never a
  contradiction.
Both run inside ``bot.understand.reader.read_turn`` on its copy of the text with names marked.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.catalog import UnknownNameError, lookup_gpu
from bot.catalog.accelerators import memory_variant
from bot.core.setup import Problem
from bot.understand import Contradiction, Provenance, ReadNote
from bot.understand.counts import GPU, MODEL
from bot.understand.prose import memory_alternatives
from bot.understand.spans import NameMention, _resolve_gpu, card_family
from bot.understand.text import origin

if TYPE_CHECKING:  # pragma: no cover
    from bot.understand.prose_reading import ProseReading
    from bot.understand.reader import Reading

# "my A100 has 24GB", "A100 with 24GB": a size said of the card itself
_SIZE_OF_CARD = re.compile(GPU + r"+\s*(?:(?:only|just)\s+ha(?:s|ve)|has|have|with|is|comes with|只有|仅有|才有|有|是|为|[(（])\s*(?:only\s*|just\s*)?"
                           r"(\d{1,3})\s*(?:gb|g)(?![a-z])", re.I | re.A)


def roles_and_contradictions(out: Reading, prose, aside_notes: list, cfg, gpus: list[NameMention], marked: str,
                              unblanked: str = "") -> None:
    """Notes on the roles the reader gave figures, and contradictions (each also a problem, so the
    answer asks which reading holds instead of computing one picked silently)."""
    for code, values in [*aside_notes, *prose.notes]:
        if code == "used_not_capacity" and "gpu_memory_gb" in out.fields:
            continue  # the card's size is known: the used figure needs no explanation
        # a note quotes the person's words: a span read from the marked copy gets its names back
        values = {k: (origin(v, unblanked or marked, out.text) if isinstance(v, str) and (GPU in v or MODEL in v) else v)
                  for k, v in values.items()}
        out.notes.append(ReadNote(code, values))
    if cfg.observed.get("one_process"):
        out.notes.append(ReadNote("one_process", {"span": cfg.observed["one_process"]}))
    found = [Contradiction(name, tuple(values), tuple(spans)) for name, values, spans in prose.contradictions]
    if gpus and gpus[0].name and gpus[0].memory_gb is None and (said := _SIZE_OF_CARD.search(marked)):
        from bot.catalog import list_gpus

        family = card_family(gpus[0].name)
        sizes = {float(x.memory_gb) for x in list_gpus() if card_family(x.name) == family}
        value = float(said.group(1))
        if sizes and all(abs(value - size) > 0.03 * size for size in sizes):
            found.append(Contradiction("gpu_memory_gb", (family.upper(), value), (gpus[0].raw, said.group(0).lstrip(GPU))))
    for c in found:
        if any(x.field == c.field for x in out.contradictions):
            continue
        out.contradictions.append(c)
    _settle_card_memory(out)
    for c in out.contradictions:
        # A contradiction in the person's own words is not an unusable setup: the answer computes
        # on one reading (the per-card figure written; else the value read) and says so in one line
        # with one question (issue 24: never a silent pick, never a refusal with nothing else)
        read = out.fields.get(c.field)
        if read is None:
            shown = tuple(f"{v:g}" if isinstance(v, float) else str(v) for v in c.values)
            out.problems.append(Problem.of(c.field, "said_both", shown=shown))
            continue
        spans = [str(x).strip() for x in (c.spans or c.values)][:2]
        out.notes.append(ReadNote("contradiction_computed", {
            "field": c.field, "a": spans[0], "b": spans[-1],
            "value": f"{read:g} GB" if c.field == "gpu_memory_gb" else (f"{read:g}B" if c.field == "params_b" else read)}))


def _settle_card_memory(out: Reading) -> None:
    """A card named with a memory size it is not sold with ("my 3090 with 11G", "A100 24GB x 8",
    "8*11G 3090"): the per-card figure written is what the person has (a cut-down or shared card,
    or a typo in the name), so it is computed and the card's catalog name is dropped (kept as the
    unknown card's label); the contradiction stays on record for the answer's one question."""
    f, prov = out.fields, out.provenance
    said = next((c for c in out.contradictions if c.field == "gpu_memory_gb" and c.values and isinstance(c.values[0], str)),
                None)
    if said is not None:
        value = float(said.values[1])
    elif "gpu" in f and f.get("gpu_memory_gb") and prov.get("gpu_memory_gb") is not None and \
            prov["gpu_memory_gb"].source == "stated" and not any(c.field == "gpu_memory_gb" for c in out.contradictions) \
            and not any(n.code == "memory_alternatives" for n in out.notes):  # "40G还是80G" lists sizes
        try:
            card = lookup_gpu(f["gpu"])
        except UnknownNameError:
            return
        value = float(f["gpu_memory_gb"])
        if abs(card.memory_gb - value) <= 1 or memory_variant(card, value) is not None:
            return
        out.contradictions.append(Contradiction("gpu_memory_gb", (card_family(card.name).upper(), value),
                                                (prov["gpu"].span, prov["gpu_memory_gb"].span)))
    else:
        return
    if "gpu" in f:
        out.unknown_gpu = prov["gpu"].span if prov.get("gpu") is not None and prov["gpu"].span else f["gpu"]
        f.pop("gpu")
        prov.pop("gpu", None)
    span = said.spans[-1] if said is not None else prov["gpu_memory_gb"].span
    f["gpu_memory_gb"] = int(value) if value.is_integer() else value
    prov["gpu_memory_gb"] = Provenance("stated", str(span).strip())


# Two or more cards or counts offered as alternatives: "A100 or H100", "A100还是H100", "H100 vs H200",
# "4 or 8 GPUs", "4张还是8张": the asker weighs them, so each gets a line (never a contradiction)
_OR = r"\s*(?:\bor\b|还是|或者?|\bvs\.?|versus|/|、)\s*"
_COUNT_ALTERNATIVES = re.compile(r"(?<![\d.])(\d{1,3})\s*(?:张|块|台|卡|x|gpus?|cards?)?" + _OR + r"(\d{1,3})\s*(?:x\s*)?"
                                 r"(?:张|块|(?:个\s*)?(?:gpus?|cards?|卡|显卡)|" + GPU + ")", re.I)


def _card_alternatives(text: str, gpus: list[NameMention]) -> tuple[list[str], str, str] | None:
    """The distinct catalog cards named next to each other with "or"/"还是"/"vs" between them."""
    chain: list[NameMention] = []
    for g in gpus:
        if g.name and chain and re.fullmatch(_OR, text[chain[-1].end: g.start]) and \
                card_family(g.name) != card_family(chain[-1].name or ""):
            chain.append(g)
        elif len(chain) < 2 and g.name:
            chain = [g]
    if len(chain) < 2:
        return None
    return [g.name for g in chain if g.name], text[chain[0].start: chain[-1].end], chain[0].raw.strip()


def _count_alternatives(marked: str, own: str) -> tuple[list[int], str] | None:
    """Two GPU counts offered as alternatives ("4 or 8 GPUs", "4 or 8 A100s", "4张还是8张"), read on
    the copy with card names marked; the span is the person's words."""
    m = _COUNT_ALTERNATIVES.search(marked)
    if not m or m.group(1) == m.group(2):
        return None
    counts = sorted({int(m.group(1)), int(m.group(2))})
    span = own[m.start(): m.end()].strip()
    return (counts, span) if all(0 < c <= 4096 for c in counts) else None


def read_alternatives(f: dict, prov: dict, notes: list, prose: ProseReading, own: str, marked: str,
                      gpus: list[NameMention]) -> None:
    """Sizes, cards or counts listed as alternatives, read into the fields ``f`` (with ``prov``)
    and ``notes``; a listed size or count is no longer a contradiction of the prose."""
    if (alternatives := memory_alternatives(own)) and prov.get("gpu_memory_gb") is not None and \
            prov["gpu_memory_gb"].source != "log":
        # "40GB or 80GB A100": the smallest bounds what fits; the note says both were read
        sizes, span = alternatives
        f["gpu_memory_gb"] = sizes[0]
        prov["gpu_memory_gb"] = Provenance("stated", span.strip())
        if gpus and gpus[0].name and (smaller := _resolve_gpu(gpus[0].raw, sizes[0], gpus[0].form)):
            f["gpu"] = smaller
        notes.append(ReadNote("memory_alternatives", {"sizes": sizes, "span": span.strip()}))
        prose.contradictions[:] = [c for c in prose.contradictions if c[0] != "gpu_memory_gb"]
    unblanked_cards = own  # the person's words with names (same length as ``marked``)
    if (cards := _card_alternatives(unblanked_cards, gpus)) is not None:
        # the table is for the first card named; the answer adds a line for each (bot.evidence)
        notes.append(ReadNote("card_alternatives", {"cards": cards[0], "span": cards[1], "first": cards[2]}))
    if (counts := _count_alternatives(marked, unblanked_cards)) is not None:
        # the fewest GPUs bounds what fits per card: the table is for it, a line for each count
        f["gpu_count"] = counts[0][0]
        prov["gpu_count"] = Provenance("stated", counts[1])
        prose.contradictions[:] = [c for c in prose.contradictions if c[0] != "gpu_count"]
        notes.append(ReadNote("count_alternatives", {"counts": counts[0], "span": counts[1]}))
