"""The evidence drawn from the repository's knowledge, beside the calculator's (``bot.evidence``).

``bot.evidence.build_evidence`` calls these on its ``Evidence`` record, once per question:
- ``read_failure``: what the message reports failing (an OOM, a kill, a hang, a slowdown, an
  error) and the facts and figures it already states, read with the playbook's signals;
- ``playbook_matches``: the diagnosis playbook's entries whose symptoms the text names, with what
  the calculator adds (``states_exceed_card``), at most ``PLAYBOOK_CAUSES``;
- ``add_passages``: the passages the hybrid search retrieves for the question (``MAX_PASSAGES``),
  a claim about another thread's setup opening only where it matches the asker those two read
  (``passage_asker``);
- ``add_claims``: the forum claims that apply to the setup (``MAX_CLAIMS``) and, for each, the doc
  sentences a verdict may quote (``ClaimDocs``), so composition reads no corpus.
Each step degrades to nothing (and a log line) when its data is unavailable: knowledge never stops
an answer.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from bot.core.setup import ResolvedSetup, TrainingSetup
    from bot.evidence import Evidence
    from bot.parse import Parsed

log = logging.getLogger(__name__)

MAX_PASSAGES = 3
MAX_CLAIMS = 4


@dataclass(frozen=True)
class DocSentence:
    """A knowledge doc's sentence an answer quotes beside a forum verdict."""

    doc_id: str
    title: str
    url: str | None
    sentence: str


@dataclass(frozen=True)
class ClaimDocs:
    """For one forum claim: the doc sentence with the 1.5x volume ratio (communication claims)
    and the one holding every figure of the correction's first sentence."""

    ratio: DocSentence | None = None
    correction: DocSentence | None = None


def add_passages(ev: Evidence, setup: TrainingSetup) -> None:
    """Passages for the question itself (every answer goes through the hybrid search). Run after
    ``read_failure`` and ``playbook_matches``: a claim about another thread's setup opens the
    answer only where it matches the asker (``passage_asker``)."""
    question = ev.question
    try:
        from bot.knowledge.answering import retrieve_passages

        ev.passages = list(retrieve_passages(question or " ".join(ev.parsed.topics), language=ev.language,
                                             topics=list(ev.parsed.topics), setup=setup, k=MAX_PASSAGES,
                                             params_b=_model_size(ev.parsed), asker=passage_asker(ev, setup)))
    except Exception as err:  # a broken index must not take the answer down; the log says why
        log.warning("passage retrieval failed: %s", err)
        ev.passages = []
    if "params_b" in ev.parsed.missing:  # no setup: the claims are judged conditionally
        add_claims(ev, None)


def passage_asker(ev: Evidence, setup: TrainingSetup) -> Any:
    """The asker a case claim is compared with (bot.knowledge.case_claims.Asker): the size, the
    strategies the question and the setup name, the failure read from the message, and the topics
    of the reader and of the playbook entries matched on its symptoms. None without a question."""
    if not ev.question:
        return None
    from bot.knowledge.case_claims import asker_facts

    topics = [*ev.parsed.topics, *(t for m in ev.playbook for t in m.entry.topics)]
    return asker_facts(ev.question, topics=topics, params_b=_model_size(ev.parsed),
                       finetune=getattr(setup, "finetune", None), failure=ev.failure_kind)


def _model_size(parsed: Parsed) -> float | None:
    """The model's size in billions as the question gives it (stated, a pasted config, or a
    catalog name), before the setup is resolved; None when unknown."""
    from bot.catalog import UnknownNameError, lookup_model

    if parsed.setup.params_b:
        return float(parsed.setup.params_b)
    spec = getattr(parsed, "model_spec", None)
    if spec is not None:
        return float(spec.params_b)
    try:
        return float(lookup_model(parsed.setup.model).params_b) if parsed.setup.model else None
    except UnknownNameError:
        return None


# A troubleshooting answer leads with at most this many causes (issue 25: "the two or three causes
# that match its symptoms, ranked"); an entry needs a matched symptom in the person's words.
PLAYBOOK_CAUSES = 3


def read_failure(ev: Evidence) -> None:
    """What the message reports failing in the person's run (``failure_kind``): the words of a
    kill, an OOM, a slowdown or an error, else an OOM the reader found in a log; a failure named
    only as one to avoid or to ask about is none (``failure_hypothetical``)."""
    question = ev.question or ""
    try:
        from bot.knowledge.playbook import failure_kind, hypothetical_only, reports_hang

        kind, hypothetical, hang = failure_kind(question), hypothetical_only(question), reports_hang(question)
    except Exception as err:  # the signals are data in the repo: a broken file must not stop an answer
        log.warning("playbook signals unavailable: %s", err)
        kind, hypothetical, hang = None, False, False
    if getattr(ev.parsed.observed, "oom", False) and kind in (None, "slow", "error") and not hypothetical:
        kind = "oom"
    ev.failure_kind, ev.failure_reported, ev.failure_hypothetical = kind, kind is not None, hypothetical
    ev.failure_hang = hang and kind in ("error", "slow")
    try:
        from bot.knowledge.playbook import facts_given, stated_number, stated_numbers

        ev.given = facts_given(question)
        ev.stated = {key: stated_number(question, key) for key in ("num_workers", "cpu_cores", "stated_requirement_gb")}
        ev.stated["gpu_counts"] = stated_numbers(question, "gpu_counts")
    except Exception as err:  # the signals are data in the repo: a broken file must not stop an answer
        log.warning("playbook signals unavailable: %s", err)


def states_exceed_card(ev: Evidence) -> bool | None:
    """Whether the model states alone (weights, gradients, optimizer state) exceed each card's
    usable memory even sharded over every GPU (FULL_SHARD; the one GPU's DDP row on one card):
    the card is too small for this model whatever the strategy or batch. None when the card or the
    count is a default, not the person's (then nothing is said about the person's cards)."""
    r, est = ev.resolved, ev.estimate
    if r is None or est is None or ev.gpu_unknown or "gpu_count" in r.assumed or "gpu" in r.assumed:
        return None
    mem = est.memory["fsdp_full_shard" if r.gpu_count > 1 else "ddp"]
    return mem.params_gib + mem.grads_gib + mem.optimizer_gib > mem.usable_gib


def playbook_matches(ev: Evidence) -> list[Any]:
    """The playbook entries matching the symptoms of a troubleshooting question or of a run that
    failed (none for other questions), with the facts the calculator adds once it has run."""
    parsed = ev.parsed
    if parsed.intent != "troubleshoot" and not ev.failure_reported:
        return []
    try:
        from dataclasses import replace

        from bot.knowledge.playbook import COMPUTED_TRIGGERS, match_playbook, query_from_parsed

        query = query_from_parsed(parsed, ev.question or "")
        r = ev.resolved
        if r is not None:
            gpu_stated = not ev.gpu_unknown and "gpu" not in r.assumed
            # the card too small matters to a run that ran out of GPU memory (not to a slow one)
            exceed = states_exceed_card(ev) if ev.failure_kind == "oom" else None
            query = replace(query, states_exceed_card=exceed,
                            intra_node_link=query.intra_node_link or (r.intra_node_link if gpu_stated else None),
                            multi_node=True if r.nodes > 1 else query.multi_node)
        matches = match_playbook(query, limit=0)
    except Exception as err:  # the playbook is data in the repo: a broken file must not stop an answer
        log.warning("playbook unavailable: %s", err)
        return []
    # an entry no symptom of this text names is dropped before the cut, so entries surfacing on
    # context triggers alone (an OOM mid-run) never push a named cause out of the first three
    named = [m for m in matches if m.matched_symptoms or COMPUTED_TRIGGERS & set(m.matched_triggers)]
    return named[:PLAYBOOK_CAUSES]


def add_claims(ev: Evidence, resolved: ResolvedSetup | None) -> None:
    try:
        from bot.knowledge.forum_claims import applicable_claims

        ev.claims = list(applicable_claims(resolved, topics=list(ev.parsed.topics), language=ev.language,
                                           limit=MAX_CLAIMS))
    except Exception as err:
        log.warning("forum claims unavailable: %s", err)
        ev.claims = []
    for claim in ev.claims:  # the doc sentences a verdict may quote, found here so compose reads no corpus
        ev.claim_docs[claim.claim_id] = ClaimDocs(
            ratio=doc_sentence_for(claim.doc_ids, ["1.5x"]) if claim.topic == "communication" else None,
            correction=doc_sentence_for(claim.doc_ids, None, text=first_sentence(claim.correction or "")))


def first_sentence(text: str) -> str:
    """A correction's first sentence (the part a forum verdict quotes)."""
    return re.split(r"(?<=。)|(?<=\.)\s", text.strip(), maxsplit=1)[0].strip()


def doc_sentence_for(doc_ids: list[str], figures: list[str] | None, text: str = "") -> DocSentence | None:
    """The first sentence of the first doc in ``doc_ids`` holding every figure (``figures``, or
    those printed in ``text``); None when no doc has one."""
    from bot.figures import numbers_in_text

    if figures is None:
        figures = [m.printed for m in numbers_in_text(text)]
    try:
        from bot.knowledge.corpus import get_entry
        from bot.knowledge.sentences import complete_sentences, line_pieces
    except ImportError:
        return None
    for doc_id in doc_ids:
        try:
            doc = get_entry(doc_id)
        except Exception:
            continue
        for sentence in complete_sentences(doc.text) + line_pieces(doc.text):
            if len(sentence) > 20 and (not figures or all(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d.]\d)", sentence)
                                                          for f in figures)):
                return DocSentence(doc.id, doc.title, doc.url, sentence[:300])
    return None
