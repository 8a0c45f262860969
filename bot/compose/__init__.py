"""Answer composition: (evidence, decision) -> the structured ``Answer`` (the fourth stage).

This package assembles structure: which sentences an answer has and in what order, and which
figures each one quotes. It writes no wording: every sentence is a message of the per-language
catalogs (``bot/answer/messages/{en,zh}.yaml``, rendered by ``bot.answer.catalog``), whose
placeholders name the figures they print. Each figure is bound to its key (``numbers`` key,
``setup.<field>``, ``cite.<n>``) and recorded in ``Sections.figure_keys``; the renderer
(``bot.render``) lays the sections out and emits ``Answer.figures`` in text order.

- ``bot.compose`` (here): the entry, the three shapes of answer (out of scope, no setup, a setup),
  the setup as read, the table rows, the calculator citation's quote, the how-to;
- ``bot.compose.say``: ``Say`` (figure binding over the catalogs) and ``Citations``;
- ``bot.compose.reasons``: one wording function per ``bot.decide.Code``;
- ``bot.compose.forum``: retrieved passages and forum verdicts.

A sentence whose figure is missing is dropped and logged (``SHARDWISE_STRICT_MESSAGES=1``, set
by the tests, raises instead): an answer never prints "?" for a figure. No calculator call and no
knowledge lookup here: everything comes from the evidence.
"""

from __future__ import annotations

import re
from typing import Any

from bot.answer import (
    Answer,
    HowTo,
    Recommendation,
    Sections,
    SetupItem,
    TableRow,
)
from bot.answer.catalog import render
from bot.compose.forum import forum_verdicts, passages
from bot.compose.reasons import fix_changes, reason_text
from bot.compose.say import (
    VARIANT_WORDS,
    Citations,
    Say,
    config_name,
    sentence,
)
from bot.decide import (
    TOLERANCE,
    Code,
    Decision,
    checkpointing_on,
    combined_fix,
    count_is_asked,
)
from bot.decide.direct import deepspeed_user, passages_shown
from bot.evidence import (
    BUCKET_FUSED,
    BUCKET_FUSED_CKPT,
    Config,
    Evidence,
)
from bot.parallel_evidence import is_stated, plan_row_pick
from bot.render import (
    SHORT_PROSE_CHARS,
    fmt,
    multi_model_text,
    notice_text,
    problem_text,
    question_text,
    render_markdown,
)
from bot.strategies import label, optimizer_label, short_label
from bot.understand.notes import contradiction_question, note_text

_QUESTION_NOTES = {"model_unsized"}  # notes that are asked as the answer's question, not shown as notices
DESIGN_FIELDS = ("model", "params_b", "gpu", "gpu_memory_gb", "gpu_count", "gpus_per_node", "nodes",
                 "intra_node_link", "inter_node_link", "inter_node_gbps", "precision", "optimizer",
                 "finetune", "seq_len", "micro_batch", "activation_checkpointing", "cpu_ram_gb")


# --------------------------------------------------------------------------------------------
# Entry
# --------------------------------------------------------------------------------------------


def compose(ev: Evidence, d: Decision) -> Answer:
    """The Answer for ``ev`` decided as ``d``; ``text`` is rendered from the sections."""
    lang = ev.language
    parsed = ev.parsed
    cites = Citations()
    numbers: dict[str, Any] = (ev.numbers() if ev.resolved is not None or ev.inference is not None
                               or ev.sizes is not None else {})
    if ev.resolved is not None:  # DESIGN's fields, then every run option that is set (the calc
        # citation is verified by recomputing from this setup, so nothing it used may be missing)
        setup = {k: v for k, v in ev.resolved.setup.model_dump().items()
                 if k in DESIGN_FIELDS or v is not None}
    else:
        setup = {k: v for k, v in parsed.setup.model_dump().items() if k in DESIGN_FIELDS and v is not None}
    if ev.inference is not None:
        setup = dict(ev.inference.setup())
    if ev.resolved is not None:
        numbers["decision.tolerance_pct"] = round(TOLERANCE * 100)
    calc_n = None
    if ev.resolved is not None:
        calc_n = cites.add("calc", "calc", render(lang, "source.calc", {}), None, calc_quote(ev.resolved))
    say = Say(lang, numbers, setup, calc_n)
    sec = Sections()
    # the DeepSpeed-layout notice describes the table's rows: none without a computed setup
    sec.notices = [notice_text(n, lang) for n in _notices(parsed) if n != "earlier_setup_kept"
                   and not (n == "deepspeed_layout" and ev.resolved is None)]
    sec.notices += ev.store_notices
    if ev.resolved is not None and getattr(ev.resolved.model, "is_moe", False):
        sec.notices.append(notice_text("moe_expert_parallel", lang))
    if ev.resolved is not None and getattr(ev.resolved.model, "eager_attention", False):
        sec.notices.append(notice_text("eager_attention", lang))
    if parsed.observed.models or "multi_model_rl" in parsed.topics:
        sec.notices.append(multi_model_text(parsed.observed.models, lang))
    # what the reader did that the person should know (a size read from a name, a count implied,
    # memory in use that is not the card's): bot.understand.notes words each note
    sec.notices += [note_text(n, lang) for n in getattr(parsed, "notes", [])
                    if n.code not in _QUESTION_NOTES and n.code not in parsed.notices]  # said once

    if d.status == "out_of_scope" or parsed.empty:
        _out_of_scope(ev, d, say, sec, cites)
    elif d.status == "invalid":
        sec.headline = say.word("headline.invalid")
        asked = [contradiction_question(c, lang) for c in getattr(parsed, "contradictions", [])]
        contradicted = {c.field for c in getattr(parsed, "contradictions", [])}
        sec.reasons = asked + [problem_text(p, lang) for p in ev.problems
                               if p.field not in contradicted]  # a contradiction is asked once
    elif ev.resolved is None:
        _without_setup(ev, d, say, sec, cites)
    else:
        _with_setup(ev, d, say, sec, cites)

    if passages_shown(ev):
        passages(ev, sec, cites)
    forum_verdicts(ev, d, say, sec, cites)
    unsized = next((n for n in getattr(parsed, "notes", []) if n.code == "model_unsized"), None)
    sec.questions = [note_text(unsized, lang) if q == "params_b" and unsized is not None else question_text(q, lang)
                     for q in d.questions]
    sec.figure_keys = {**say.figure_keys, **sec.figure_keys}
    provenance = _provenance(ev)
    sec.setup_read = _setup_read(ev, setup, provenance)
    why = list(sec.reasons)
    answer = Answer(
        status=d.status, intent=d.intent, language="zh" if lang == "zh" else "en", setup=setup,  # type: ignore[arg-type]
        provenance=provenance, missing=list(d.questions),
        recommendation=Recommendation(strategy=d.strategy, alternatives=list(d.alternatives),
                                      confidence=d.confidence, why=why),  # type: ignore[arg-type]
        numbers=numbers, citations=cites.items, questions=list(d.questions), sections=sec,
    )
    return render_markdown(answer)


def _setup_read(ev: Evidence, setup: dict[str, Any], provenance: dict[str, Any]) -> list[SetupItem]:
    """Every setup field the answer used, where it came from and the text it was read from (the
    answer's "Read: ... from `...`" line). Run options left at PyTorch's defaults are assumed."""
    spans = ev.parsed.provenance or {}
    assumed = set(ev.resolved.assumed) if ev.resolved is not None else set()
    items = []
    for k, v in setup.items():
        if v is None or not isinstance(v, str | int | float | bool):
            continue
        source = provenance.get(k) or ("assumed" if k in assumed else "stated")
        span = getattr(spans.get(k), "span", None) if source != "assumed" else None
        items.append(SetupItem(field=k, value=v, source=source, span=span or None))
    return items


def _notices(parsed: Any) -> list[str]:
    out = list(parsed.notices)
    if parsed.injection:
        out.append("injection")
    sized_by_name = any(n.code in ("size_from_name", "moe_from_name") for n in getattr(parsed, "notes", []))
    if parsed.unknown_model and not sized_by_name:  # the note says more: where the size came from
        out.append("unknown_model")
    return out


def _provenance(ev: Evidence) -> dict[str, Any]:
    """Field -> where its value came from: the parser's provenance, else assumed (a default of
    ``resolve_setup``), else stated (said, or derived from what was said: a GPU's memory)."""
    out: dict[str, Any] = {}
    for name, p in (ev.parsed.provenance or {}).items():
        source = getattr(p, "source", p)
        if name in DESIGN_FIELDS and source in ("stated", "config", "log", "history", "carried", "assumed"):
            out[name] = source
    if ev.resolved is not None:
        for name in ev.resolved.assumed:
            if name in DESIGN_FIELDS:
                out[name] = "assumed"
        # A field the reader never gave was derived from another: it is only as stated as its source.
        # A card's memory the reader did not give comes from the catalog's card, an assumed one (the
        # A100 80GB default) or one sold in several sizes ("A100" is 40 or 80 GB): assumed, never
        # stated (first-contact batches a, c, d, e). The node layout derived from an assumed count is
        # assumed too.
        if "gpu_memory_gb" not in out and ev.resolved.setup.gpu_memory_gb is not None:
            out["gpu_memory_gb"] = "assumed"
        if out.get("gpu_count") == "assumed":
            for name in ("gpus_per_node", "nodes"):
                out.setdefault(name, "assumed")
        for name in DESIGN_FIELDS:
            if getattr(ev.resolved.setup, name, None) is not None:
                out.setdefault(name, "stated")
    return out


def calc_quote(resolved: Any) -> str:
    """The calc citation's quote: every input the figures depend on, in one line."""
    s = resolved.setup
    model = resolved.model
    if model.approximate:  # a bare size: the calculator uses an inferred Llama-style shape
        name = f"generic {fmt(s.params_b or model.params_b)}B model (approximate shape,"
    else:
        name = model.name
    gpu = resolved.gpu.name if resolved.gpu else f"{fmt(resolved.gpu_memory_gb)} GB GPU"
    if resolved.nodes > 1:
        where = (f"{resolved.nodes} nodes x {resolved.gpus_per_node} x {gpu}, {resolved.intra_node_link} "
                 f"in a node, {resolved.inter_node_link} {fmt(resolved.inter_node_gbps)} Gb/s between nodes")
    else:
        where = f"{resolved.gpu_count} x {gpu}, {resolved.intra_node_link}"
    ft = {"full": "full fine-tune", "lora": f"LoRA rank {s.lora_rank}", "qlora": f"QLoRA rank {s.lora_rank}"}
    opt = optimizer_label(s.optimizer)
    parts = [f"{name} {fmt(model.params_b)}B params" + (")" if model.approximate else ""), where, s.precision, opt,
             ft.get(s.finetune or "full", s.finetune), f"seq {s.seq_len}", f"micro-batch {s.micro_batch}",
             "activation checkpointing" if s.activation_checkpointing else "no activation checkpointing"]
    if s.cpu_ram_gb:
        parts.append(f"{fmt(s.cpu_ram_gb)} GB CPU RAM")
    return ", ".join(str(p) for p in parts)




# --------------------------------------------------------------------------------------------
# The three shapes of answer
# --------------------------------------------------------------------------------------------


def _out_of_scope(ev: Evidence, d: Decision, say: Say, sec: Sections, cites: Citations) -> None:
    example = say.word("headline.example")  # no figures of its own, so the examples always trace
    if ev.parsed.empty:
        sec.headline = say.word("headline.empty", example=example)
        return
    topics = set(ev.parsed.topics)
    tpu = ev.asks_about_tpu
    if ev.inference is not None and not tpu:
        inf = ev.inference
        say.calc = cites.add("calc", "calc", say.word("source.inference"), None, inf.quote())
        sec.headline = say.word("headline.inference")
        sec.direct_answer = sentence(lambda: say.msg("inference.direct", dtype=inf.dtype), "inference.direct")
        # what to do first (quantize, tensor parallelism, a serving engine), then the quantized figures
        sec.reasons.append(say.word("inference.advice"))
        quant = ev.inference_quantized
        if "int8" in quant and "int4" in quant:
            line = sentence(lambda: say.msg("inference.quantized"), "inference.quantized")
            if line:
                sec.reasons.append(line)
        return
    if "inference" in topics:
        sec.headline = say.word("headline.inference_topic")
        return
    if tpu:
        sec.headline = say.word("headline.tpu")
        return
    sec.headline = say.word("headline.out_of_scope", example=example)
    if "earlier_setup_kept" in ev.parsed.notices:
        sec.reasons.append(say.word("headline.earlier_setup_kept"))


# Direct sentences only the full answer carries, whatever the budget: a diagnosis's first cause in
# full (its gist leads the short form, issue 25: an expert's few lines, not the source's paragraph).
FULL_ANSWER_ONLY = frozenset({Code.PLAYBOOK_CAUSE})


def _direct(ev: Evidence, d: Decision, say: Say, cites: Citations) -> tuple[list[str], list[str]]:
    """(the direct answer's sentences, in order; those of them only the full answer carries),
    worded in ``d.direct``'s order so the citations are numbered as they are read."""
    shown: list[str] = []
    folded: list[str] = []
    for r in d.direct:
        text = reason_text(ev, d, r, say, cites)
        if text:
            (folded if r.code in FULL_ANSWER_ONLY else shown).append(text)
    return shown, folded


def _without_setup(ev: Evidence, d: Decision, say: Say, sec: Sections, cites: Citations) -> None:
    direct, sec.direct_more = _direct(ev, d, say, cites)
    # answered: the first sentence leads (the headline); the rest follow it as the first reasons (the
    # renderer prints a direct answer above the headline, which would put the second sentence
    # first). The sizes a set of cards trains answer "what can I train on these?" though the model
    # is still asked.
    # A diagnosis answers too while the figures still wait for a fact: its cause leads, and the facts
    # asked follow under the questions (a "DDP when a replica fits" rule above a troubleshooting or
    # "how much does it need" answer answered nothing it asked; it stays for "DDP or FSDP?").
    if direct and (d.status == "ok" or ev.sizes is not None or ev.parsed.intent in ("troubleshoot", "capacity")):
        sec.headline, sec.reasons = direct[0], direct[1:] + sec.reasons
        return
    if direct:
        sec.direct_answer = _joined(direct, say)
    sec.headline = say.word("headline.depends", need=_facts_named(d.questions, say))


def _facts_named(fields: list[str], say: Say) -> str:
    """The facts the answer still needs, in words ("the model and the GPU count"): only those asked,
    never the ones the question gave (an "A100 40G x4" asker was told to name the GPUs)."""
    from bot.render import field_name_text

    names = list(dict.fromkeys(field_name_text("model" if f == "params_b" else f, say.lang)
                               for f in fields if f in _SETUP_FACTS))
    if not names:
        names = [field_name_text("model", say.lang), field_name_text("gpu", say.lang)]
    return say.word("words.facts_join", first=names[:-1], last=names[-1])


# the facts "it depends" names (a question about the sequence length or host RAM is asked, not named)
_SETUP_FACTS = ("params_b", "model", "gpu", "gpu_memory_gb", "gpu_count")


def _budget(lang: str) -> int:
    return SHORT_PROSE_CHARS["zh" if lang == "zh" else "en"]


def _within_budget(sentences: list[str], budget: int, keep_first: bool = True) -> tuple[list[str], list[str]]:
    """(shown, folded): the sentences that fit the short form's prose budget, in order, and the
    rest (once one is folded, every later one is: the order is the order asked). The first is
    always shown when ``keep_first``: it answers the question."""
    used = 0
    for i, x in enumerate(sentences):
        if used + len(x) > budget and not (keep_first and i == 0):
            return sentences[:i], sentences[i:]
        used += len(x)
    return sentences, []


def _joined(sentences: list[str], say: Say) -> str | None:
    """Sentences shown as one paragraph, its figures still bound: the paragraph's keys are its
    sentences' keys in order (the renderer binds a paragraph as a whole)."""
    if not sentences:
        return None
    text = " ".join(sentences)
    if len(sentences) > 1:
        say.figure_keys[text] = [k for x in sentences for k in say.figure_keys.get(x, [])]
    return text


def _with_setup(ev: Evidence, d: Decision, say: Say, sec: Sections, cites: Citations) -> None:
    lang = ev.language
    direct, folded = _direct(ev, d, say, cites)
    conf = say.word(f"words.confidence.{d.confidence}")
    fix = combined_fix(ev, d)
    if count_is_asked(ev) and ev.capacity is not None and ev.capacity.gpu_count is not None:
        # "how many H100s do I need?": the count found leads; the strategies below are worked out on
        # the count assumed in its place, so no fit-or-not verdict is drawn from them
        sec.headline = say.msg("headline.count_asked", conf=conf)
    elif d.strategy == "none" and d.plan is not None:
        degrees = d.plan.plan.degrees
        sec.headline = say.msg("headline.plan", conf=conf, tp=degrees.get("tp", 1) > 1, cp=degrees.get("cp", 1) > 1,
                               pp=degrees.get("pp", 1) > 1,
                               ckpt=say.word(f"words.ac.{d.plan.policy}") if d.plan.policy != "none" else "")
    elif d.strategy == "none" and fix is not None:  # "nothing fits" only when no combination does
        sec.headline = say.msg("headline.fits_with_changes", conf=conf, changes=fix_changes(fix, say))
    elif d.strategy == "none":
        sec.headline = say.word("headline.nothing_fits", conf=conf)
    else:  # the renderer prints the direct answer first, then this
        name = config_name(d.chosen, lang) if d.chosen is not None else label(d.strategy, lang)
        alts = say.word("words.list_sep").join(label(a, lang) for a in d.alternatives)
        sec.headline = say.word("headline.recommendation", name=name, conf=conf, alts=alts)
    pick = plan_row_pick(ev.plan_rows) if is_stated(ev.parallel) else None
    # "how many GPUs?" and an assumed GPU count: the rows are at a count nobody chose, so the
    # capacity answer (or the pure-DP verdict) keeps the lead; the table still shows them
    count_open = ev.parsed.intent == "capacity" or "gpu_count" in getattr(ev.resolved, "assumed", ())
    if pick is not None and not count_open:
        # a stated TP/CP/PP plan that fits with a data-parallel strategy on the ranks it leaves: the
        # recommendation names the whole plan, not the pure data parallelism the rows below it weigh
        headline = sentence(lambda: _plan_headline(ev, pick, say, conf), "stated plan headline")
        sec.headline = headline or sec.headline
        # the direct answer leads with the plan's row too; the pure-DP sentences (the second table's
        # pick) follow it, folded when the budget is spent, so the two never read as one verdict
        lead = sentence(lambda: _plan_lead(ev, pick, say), "stated plan lead")
        if headline and lead:
            direct = [lead] + direct
    # the short form's prose is the direct answer and the headline: the direct sentences past the
    # budget are folded (the first always stays, with its figures), after those only the full answer carries
    shown, past = _within_budget(direct, _budget(lang) - len(sec.headline))
    sec.direct_answer, sec.direct_more = _joined(shown, say), folded + past
    sec.table = [_row(c, d, lang) for c in d.rows]
    if sec.table and is_stated(ev.parallel):
        # the rows are the calculator's pure data parallelism over every GPU; the stated TP/CP/PP
        # plan is computed on its own (bot.parallel_evidence), so the title names what they are
        degrees = ev.parallel.plan.degrees
        sec.table_title = sentence(lambda: say.msg(
            "headline.table_pure_dp", tp=degrees.get("tp", 1) > 1, cp=degrees.get("cp", 1) > 1,
            pp=degrees.get("pp", 1) > 1), "table title") or None
    if is_stated(ev.parallel) and ev.plan_rows:
        sec.plan_table = [_plan_row(r, r is pick and not count_open, lang) for r in ev.plan_rows]
        degrees = ev.parallel.plan.degrees
        sec.plan_table_title = sentence(lambda: say.msg(
            "headline.plan_table_title", tp=degrees.get("tp", 1) > 1, cp=degrees.get("cp", 1) > 1,
            pp=degrees.get("pp", 1) > 1), "plan table title") or None
    sec.reasons = [x for x in (reason_text(ev, d, r, say) for r in d.reasons) if x]
    for fig in ev.stored:
        if fig.strategy not in (d.strategy, "ddp"):
            continue
        n = cites.add(fig.run_id, "bench", say.word("source.stored", kind=fig.kind, run_id=fig.run_id),
                      None, fig.summary)
        key = "stored.simulation" if fig.kind == "simulation" else "stored.run"
        sec.reasons.append(say.msg(key, peak=say.val(fig.peak_gib, f"cite.{n}"), label=label(fig.strategy, lang), n=n))
    sec.what_ifs = [x for x in (reason_text(ev, d, r, say) for r in d.what_ifs) if x]
    if ev.scenarios:
        sec.reasons = _scenario_lines(ev.scenarios, "scenario.intro", say, cites) + sec.reasons
    if ev.count_scenarios:
        sec.reasons = _scenario_lines(ev.count_scenarios, "scenario.intro_count", say, cites) + sec.reasons
    if ev.size_scenarios:
        sec.reasons = _scenario_lines(ev.size_scenarios, "scenario.intro_sizes", say, cites) + sec.reasons
    if ev.listed_count_scenarios:
        sec.reasons = _scenario_lines(ev.listed_count_scenarios, "scenario.intro_counts_listed", say, cites) + sec.reasons
    if ev.card_scenarios:
        sec.reasons = _scenario_lines(ev.card_scenarios, "scenario.intro_cards", say, cites) + sec.reasons
    sec.howto = _howto(ev, d)


def _howto(ev: Evidence, d: Decision) -> list[HowTo]:
    from bot.howto import SnippetSpec, snippets, torchtitan_items

    r = ev.resolved
    # a plan past FSDP (TP/CP/PP) runs with torchtitan: its TOML degrees and launch line first
    plan = torchtitan_items(ev.parallel.toml, ev.parallel.torchrun, language=ev.language) if ev.parallel else []
    if r is None or d.chosen is None:
        return plan
    spec = SnippetSpec(strategy=d.strategy, nodes=r.nodes, gpus_per_node=r.gpus_per_node,
                       precision=r.setup.precision, checkpointing=checkpointing_on(ev, d.chosen),
                       bucket_view=d.chosen.variant in (BUCKET_FUSED, BUCKET_FUSED_CKPT),
                       device_type=_device(r)[0], backend=_device(r)[1])
    return plan + snippets(spec, deepspeed=deepspeed_user(ev), language=ev.language)


def howto_for(strategy: str, resolved: Any, *, deepspeed: bool = False, language: str = "en") -> list[HowTo]:
    """How-to items for a strategy on a resolved setup (the web page's panel)."""
    from bot.howto import SnippetSpec, snippets

    device_type, backend = _device(resolved)
    spec = SnippetSpec(strategy=strategy, nodes=resolved.nodes, gpus_per_node=resolved.gpus_per_node,
                       precision=resolved.setup.precision, checkpointing=bool(resolved.setup.activation_checkpointing),
                       device_type=device_type, backend=backend)
    return snippets(spec, deepspeed=deepspeed, language=language)


def _device(resolved: Any) -> tuple[str, str]:
    """The card's torch device and collective backend for the how-to (Ascend: npu + hccl, ...)."""
    gpu = getattr(resolved, "gpu", None)
    return (getattr(gpu, "device_type", "cuda") or "cuda", getattr(gpu, "backend", "nccl") or "nccl")


def _row(c: Config, d: Decision, lang: str) -> TableRow:
    keys = {"total_gib": c.key("memory", "total_gib"), "usable_gib": c.key("memory", "usable_gib"),
            "fits": c.key("memory", "fits"), "max_micro_batch": c.key("memory", "max_micro_batch"),
            "vs_ddp": c.key("comm", "vs_ddp"), "step_seconds": c.key("time", "step_seconds")}
    if c.tokens_per_s_per_gpu:
        keys["tokens_per_s_per_gpu"] = c.key("throughput", "tokens_per_s_per_gpu")
    name = short_label(c.strategy, lang)
    if c.variant in VARIANT_WORDS:
        name += " + " + render(lang, f"words.variant.{VARIANT_WORDS[c.variant]}", {})
    if c is d.chosen and not c.fits and c.max_micro_batch >= 1:  # picked at a smaller micro-batch
        name += render(lang, "words.row_accumulate", {"mb": c.max_micro_batch})
    return TableRow(strategy=c.strategy, variant=c.variant, label=name, total_gib=c.total_gib, usable_gib=c.usable_gib,
                    fits=c.fits, max_micro_batch=c.max_micro_batch, vs_ddp=c.vs_ddp, step_seconds=c.step_seconds,
                    tokens_per_s_per_gpu=round(c.tokens_per_s_per_gpu, 1) if c.tokens_per_s_per_gpu else None,
                    chosen=c is d.chosen, keys=keys)


def _plan_headline(ev: Evidence, pick: Any, say: Say, conf: str) -> str:
    """"Recommendation: TP t x PP p x <strategy> over d": the stated plan with the row that fits."""
    degrees = ev.parallel.plan.degrees
    name = label(pick.strategy, say.lang)
    if pick.variant in VARIANT_WORDS:
        name += " + " + say.word(f"words.variant.{VARIANT_WORDS[pick.variant]}")
    plan = say.raw("headline.plan_name", s=pick.key, label=name, tp=degrees.get("tp", 1) > 1,
                   cp=degrees.get("cp", 1) > 1, pp=degrees.get("pp", 1) > 1)
    return say.msg("headline.plan_stated", plan=plan, s=pick.key, label=name, conf=conf)


def _plan_lead(ev: Evidence, pick: Any, say: Say) -> str:
    """The direct answer's first sentence beside a stated plan: the picked row's figure, and DDP's
    where DDP on the same ranks does not fit."""
    name = label(pick.strategy, say.lang)
    if pick.variant in VARIANT_WORDS:
        name += " + " + say.word(f"words.variant.{VARIANT_WORDS[pick.variant]}")
    ddp = next((r for r in ev.plan_rows if r.strategy == "ddp" and not r.variant), None)
    return say.msg("direct.plan_rows_lead", s=pick.key, label=name,
                   ddp=ddp is not None and ddp is not pick and not ddp.memory.fits)


def _plan_row(r: Any, chosen: bool, lang: str) -> TableRow:
    """A row of the stated plan's table: one data-parallel strategy, its figures keyed as
    bot.parallel_evidence.plan_row_numbers writes them."""
    k = r.key
    keys = {"total_gib": f"{k}.total_gib", "usable_gib": f"{k}.usable_gib", "fits": f"{k}.fits",
            "step_seconds": f"{k}.step_seconds", "tokens_per_s_per_gpu": f"{k}.tokens_per_s_per_gpu"}
    step = round(r.time.step_seconds, 2) if r.time is not None else None
    # throughput only where the row runs, as in the pure-DP table
    tps = round(r.time.tokens_per_s_per_gpu, 1) if r.time is not None and r.memory.fits else None
    name = short_label(r.strategy, lang)
    if r.variant in VARIANT_WORDS:
        name += " + " + render(lang, f"words.variant.{VARIANT_WORDS[r.variant]}", {})
    return TableRow(strategy=r.strategy, variant=r.variant, label=name,
                    total_gib=round(r.memory.total_gib, 2), reserved_gib=round(r.memory.reserved_gib, 2),
                    usable_gib=round(r.memory.usable_gib, 2), fits=bool(r.memory.fits), step_seconds=step,
                    tokens_per_s_per_gpu=tps, chosen=chosen, keys=keys)


def _scenario_lines(scenarios: list[Any], intro: str, say: Say, cites: Citations) -> list[str]:
    """One line per scenario (a common card, or a GPU count): DDP and full shard, and which fits."""
    lines = [say.word(intro)]
    per_count = intro in ("scenario.intro_count", "scenario.intro_counts_listed")
    yes, no = say.word("words.fits"), say.word("words.does_not_fit")
    for sc in scenarios:
        mem = sc.estimate.memory
        ddp, fs = mem["ddp"], mem["fsdp_full_shard"]
        pick = next((s for s in ("ddp", "fsdp_full_shard") if mem[s].fits), "none")
        step = sc.estimate.time["fsdp_full_shard"]
        quote = (f"{calc_quote(sc.resolved)}: DDP {fmt(ddp.total_gib)} GiB per GPU "
                 f"({'fits' if ddp.fits else 'does not fit'}), FSDP full shard {fmt(fs.total_gib)} GiB "
                 f"({'fits' if fs.fits else 'does not fit'}), usable {fmt(ddp.usable_gib)} GiB"
                 + (f", FSDP full shard step {fmt(step)} s" if intro == "scenario.intro_cards" else ""))
        title = say.word("source.count_scenario", count=sc.gpu_count, gpu=sc.gpu) if per_count else \
            say.word("source.scenario", gpu=sc.gpu)
        n = cites.add("calc", "calc", title, None, quote)
        k = f"cite.{n}"
        if intro == "scenario.intro_cards":  # cards of one size differ in speed: the line names the card
            card = re.sub(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)(?![A-Za-z0-9.])", lambda m, k=k: say.val(float(m.group(1)), k),
                          re.split(r"\s+\d+(?:\.\d+)?\s*GB", sc.gpu)[0])
            lines.append(say.msg("scenario.line_card", gpu=card, count=say.val(sc.gpu_count, k),
                                 mem_gb=say.val(sc.memory_gb, k), ddp_total=say.val(ddp.total_gib, k),
                                 fs_total=say.val(fs.total_gib, k), step=say.val(step, k),
                                 ddp_verdict=yes if ddp.fits else no, fs_verdict=yes if fs.fits else no,
                                 pick=label(pick, say.lang), n=n))
            continue
        lines.append(say.msg("scenario.line", count=say.val(sc.gpu_count, k), mem_gb=say.val(sc.memory_gb, k),
                             ddp_total=say.val(ddp.total_gib, k), fs_total=say.val(fs.total_gib, k),
                             ddp_verdict=yes if ddp.fits else no, fs_verdict=yes if fs.fits else no,
                             pick=label(pick, say.lang), n=n))
    return lines


