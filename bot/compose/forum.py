"""Retrieved passages and forum verdicts in the answer: each claim with its verdict, checked
against this setup's figures where it is about communication or memory."""

from __future__ import annotations

import logging
from typing import Any

from bot.answer import (
    ForumVerdictItem,
    Sections,
)
from bot.compose.say import Citations, Say, figure_count, sentence
from bot.corpus_evidence import (
    ClaimDocs,
    DocSentence,
    first_sentence,
)
from bot.decide import (
    Decision,
)
from bot.evidence import Evidence

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Knowledge: passages and forum verdicts
# --------------------------------------------------------------------------------------------


def passages(ev: Evidence, sec: Sections, cites: Citations) -> None:
    for p in ev.passages:
        n = cites.add(p.id, p.kind, p.title, p.url, p.quote)
        line = f"{p.quote} [{n}]"
        if line in (sec.direct_answer or "") or line in (sec.headline or "") or any(line in x for x in sec.passages):
            continue
        count = figure_count(p.quote)
        if count:
            sec.figure_keys[line] = [f"cite.{n}"] * count
        sec.passages.append(line)


VERDICTS = ("supported", "contradicted", "unverifiable", "misleading", "holds_only_when")


def forum_verdicts(ev: Evidence, d: Decision, say: Say, sec: Sections, cites: Citations) -> None:
    """Each applicable claim with its verdict; a claim whose condition this setup does not meet
    (or does not state) is shown as "depends on X". Communication and memory claims are checked
    against this setup's own figures; other corrections keep their first sentence when a doc
    sentence holds every figure in it (found by the evidence stage: ``claim.doc_sentence``)."""
    sep = say.word("words.sentence_sep")
    for claim in ev.claims:
        n = cites.add(claim.forum_id, "forum", claim.title or claim.forum_id, claim.url or None, claim.quote)
        verdict = claim.verdict if claim.verdict in VERDICTS else "unverifiable"
        judgement = getattr(claim, "judgement", "judged")
        applies = bool(getattr(claim, "applies", True)) and judgement in ("judged", "holds", "does_not_hold")
        note = str(getattr(claim, "condition_note", "") or "")
        if not applies or judgement in ("holds", "does_not_hold"):
            # the claim judged against its condition: the knowledge layer's wording; the condition's
            # figures are in the forum citation's title, so they are bound to it
            text = (say.word("forum.note", note=note.rstrip("。.")) if note else
                    say.word("forum.depends_on", cond=claim.condition or say.word("words.the_setup")))
            count = figure_count(text)
            if count:
                say.figure_keys[text] = [f"cite.{n}"] * count
        else:
            text = say.msg("forum.verdict", words=say.word(f"words.verdict.{verdict}"))
            extra = _claim_check(ev, claim, say, cites)
            if extra:
                keys = say.figure_keys.get(extra, [])
                text = text + sep + extra
                if keys:
                    say.figure_keys[text] = keys
        sec.forum.append(ForumVerdictItem(forum_id=claim.forum_id, quote=claim.quote, verdict=verdict,  # type: ignore[arg-type]
                                          condition=claim.condition or None, text=text, citation=n))


def _cite_doc(ref: DocSentence | None, cites: Citations) -> int | None:
    """Cite a doc sentence the evidence stage found for a claim, if any."""
    return cites.add(ref.doc_id, "doc", ref.title, ref.url, ref.sentence) if ref is not None else None


def _claim_check(ev: Evidence, claim: Any, say: Say, cites: Citations) -> str:
    topic = getattr(claim, "topic", "")
    docs = ev.claim_docs.get(claim.claim_id, ClaimDocs())
    if topic == "communication":
        doc_n = _cite_doc(docs.ratio, cites)
        general = say.raw("forum.comm_general", ratio=say.val(1.5, f"cite.{doc_n}"), d=f" [{doc_n}]") if doc_n else ""
        fs = ev.config("fsdp_full_shard") if ev.estimate is not None else None
        if fs is not None:
            return sentence(lambda: say.msg("forum.comm_setup", general=general, fs=fs), "forum.comm_setup")
        return say.msg("forum.comm_general_only", general=general) if doc_n else ""
    if topic == "memory" and ev.estimate is not None:
        ddp, fs = ev.config("ddp"), ev.config("fsdp_full_shard")
        if ddp is not None and fs is not None:
            return sentence(lambda: say.msg("forum.memory", ddp=ddp, fs=fs), "forum.memory")
    first = first_sentence(claim.correction or "")
    if not first:
        return ""
    count = figure_count(first)
    doc_n = _cite_doc(docs.correction, cites)
    if doc_n is None and count:
        return ""
    line = first + (f" [{doc_n}]" if doc_n else "")
    if count:
        say.figure_keys[line] = [f"cite.{doc_n}"] * count
    return line

