"""One wording function per reason code (``bot.decide.Code``): each picks the catalog message and
the configurations it quotes; the words are in ``bot/answer/messages``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from bot.answer.catalog import SetupView
from bot.compose.say import LINK_NAMES, VARIANT_WORDS, Citations, Say, capacity_needs, figure_count, sentence
from bot.decide import (
    Code,
    Decision,
    Reason,
    checkpointing_on,
    combined_fix,
    fits_with_margin,
)
from bot.evidence import (
    BUCKET_FUSED,
    CKPT,
    Config,
    Evidence,
    variant_key,
)
from bot.render import (
    field_name_text,
)
from bot.strategies import STRATEGY_TO_ZERO, ZERO_TO_STRATEGY, label, short_label, zero_name

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Reasons, what-ifs and direct answers: one wording function per reason code
# --------------------------------------------------------------------------------------------

Wording = Callable[[Evidence, Decision, Reason, Say, Citations], str]
_WORDING: dict[Code, Wording] = {}
# codes worded without a configuration of their own; every other code needs ``values["config"]``
_NO_CONFIG = {Code.LORA_DDP_FITS, Code.FINETUNE_FITS, Code.CAPACITY, Code.LINK_ASSUMED, Code.OBSERVED_OOM,
              Code.OOM_DOMINATED, Code.OPTIMIZER_8BIT, Code.SINGLE_GPU, Code.SMALLER_MB, Code.HSDP_IF_SLOW,
              Code.FAST_LINK_FULL_SHARD, Code.COMPARE, Code.ASKED_STRATEGY, Code.FEASIBLE, Code.LOG_ZERO2_STEP,
              Code.NEED_CHECKPOINTING, Code.CAPACITY_ANSWER, Code.DDP_KNOBS, Code.WHY_FSDP_SLOWER,
              Code.WHY_MULTI_NODE_SLOW, Code.ZERO_MAPPING, Code.MEMORY_NOT_DIVIDED, Code.LORA_SHARDING_GAIN,
              Code.FROM_PASSAGES, Code.PLAYBOOK, Code.PLAYBOOK_OTHERS, Code.PLAYBOOK_CAUSE, Code.PARALLEL_PLAN,
              Code.ASKED_PARALLEL, Code.SIZE_LIMITS, Code.DIAGNOSE_NEEDS, Code.COMBINED_FIX,
              Code.NO_COMBINATION_FITS}


def words_for(*codes: Code) -> Callable[[Wording], Wording]:
    def register(fn: Wording) -> Wording:
        for code in codes:
            _WORDING[code] = fn
        return fn
    return register


def reason_text(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations | None = None) -> str:
    """The sentence for a reason, what-if or direct answer ("" when it has nothing to say)."""
    if r.code not in _NO_CONFIG and r.values.get("config") is None:
        return ""
    fn = _WORDING.get(r.code)
    if fn is None:
        return ""
    return sentence(lambda: fn(ev, d, r, say, cites if cites is not None else Citations()), str(r.code))




def _ran_name(v: dict[str, Any], say: Say) -> str:
    """The strategy that ran out of memory, in the user's words (the ZeRO stage they ran)."""
    if v.get("stage") is not None:
        return say.word("words.ran_name_stage", stage=v["stage"], short=short_label(v["strategy"], say.lang))
    return label(v["strategy"], say.lang)


@words_for(Code.OOM_DOMINATED)
def _oom_dominated(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    others = r.values["others"]
    return say.msg("oom.dominated", others=say.word("words.list_sep").join(short_label(s, say.lang) for s in others),
                   single=len(others) == 1, name=_ran_name(r.values, say))


@words_for(Code.OOM_UNEXPLAINED)
def _oom_unexplained(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    """After a reported OOM the estimate says fits: what it cannot explain, and what to tell."""
    v = r.values
    name, ckpt_off = _ran_name(v, say), not say.setup.get("activation_checkpointing")
    assumed = [f for f in v["assumed"] if say.setup.get(f) is not None]
    if assumed:
        setup = SetupView(say.setup, say.val)
        listed = say.word("oom.assumed_join").join(f"{field_name_text(f, say.lang)} {getattr(setup, f)}" for f in assumed)
        return say.msg("oom.unexplained_assumed", assumed=listed, name=name, cfg=v["config"], ckpt_off=ckpt_off)
    return say.msg("oom.unexplained", name=name, cfg=v["config"], ckpt_off=ckpt_off)


def _simple(key: str, *names: str) -> Wording:
    """A sentence whose template takes the reason's configurations (``values[name]``) only."""
    def wording(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
        return say.msg(key, cfg=r.values.get("config"), **{n: r.values.get(n) for n in names})
    return wording


for _code, _key, _names in (
        (Code.DDP_FITS, "reason.ddp_fits", ()), (Code.TIGHT, "reason.tight", ()),
        (Code.THIN_AFTER_OOM, "reason.thin_after_oom", ()), (Code.ONLY_OFFLOAD, "reason.only_offload", ()),
        (Code.HOST_RAM_SHORT, "reason.host_ram_short", ()), (Code.ACCUMULATE, "reason.accumulate", ()),
        (Code.COMM_HEAVY, "what_if.comm_heavy", ()), (Code.DDP_MB_LIMIT, "what_if.ddp_mb_limit", ("shard",)),
        (Code.SINGLE_GPU, "reason.single_gpu", ()), (Code.SMALLER_MB, "what_if.smaller_mb", ()),
        (Code.HSDP_IF_SLOW, "what_if.hsdp_if_slow", ()), (Code.LORA_DDP_FITS, "what_if.lora_ddp_fits", ()),
        (Code.FAST_LINK_FULL_SHARD, "what_if.fast_link_full_shard", ()),
        (Code.SIMPLER_WITHIN_TOLERANCE, "reason.simpler_within_tolerance", ("faster",))):
    _WORDING[_code] = _simple(_key, *_names)
_WORDING[Code.SIMPLER_WITHIN_TOLERANCE] = lambda ev, d, r, say, cites: say.msg(
    "reason.simpler_within_tolerance", fast=r.values["faster"])


@words_for(Code.DDP_TOO_BIG)
def _ddp_too_big(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    cfg: Config = r.values["config"]
    if cfg.max_micro_batch >= 1 and not cfg.fits:
        return say.msg("reason.ddp_too_big_micro_batch", cfg=cfg)
    if (say.setup.get("finetune") or "full") in ("lora", "qlora"):
        return say.msg("reason.ddp_too_big_adapters", cfg=cfg)
    buffers = (say.numbers.get(cfg.key("memory", "buffers_gib"), 0) or 0) >= 1
    return say.msg("reason.ddp_too_big", cfg=cfg, buffers=buffers)


@words_for(Code.THROUGHPUT)
def _throughput(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    among = r.values.get("among")
    key = {"checkpointing": "reason.throughput_checkpointing", "headroom": "reason.throughput_headroom"}.get(
        str(among), "reason.throughput")
    return say.msg(key, cfg=r.values["config"])


@words_for(Code.COMM_LEAST)
def _comm_least(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    return say.msg("reason.comm_least", fs=ev.config("fsdp_full_shard"))


@words_for(Code.COMM_COST)
def _comm_cost(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    cfg: Config = r.values["config"]
    return say.msg("reason.comm_no_more" if cfg.vs_ddp <= 1.05 else "reason.comm_cost", cfg=cfg)


def _link_name(value: Any) -> str:
    return LINK_NAMES.get(str(value), str(value))


@words_for(Code.SLOW_INTER_NODE)
def _slow_inter_node(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    return say.msg("reason.slow_inter_node", cfg=r.values["config"], fs=ev.config("fsdp_full_shard"),
                   link=_link_name(say.setup.get("inter_node_link")))


@words_for(Code.OBSERVED_OOM)
def _observed_oom(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    cfg: Config | None = r.values.get("config")
    if cfg is not None and not cfg.fits:  # the estimate says the same: worth saying with its figure
        why = say.raw("reason.observed_oom_agrees", cfg=cfg)
    else:
        why = say.word("reason.observed_oom_missed")
    key = "reason.observed_oom_any_checkpointing" if r.values.get("any_checkpointing") else "reason.observed_oom"
    return say.msg(key, name=_ran_name(r.values, say), why=why)


@words_for(Code.NEEDS_CHECKPOINTING, Code.CHECKPOINTING_FASTER)
def _checkpointing(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    base: Config | None = r.values.get("base")
    if r.code == Code.NEEDS_CHECKPOINTING and base is not None:
        return say.msg("reason.needs_checkpointing", cfg=r.values["config"], base=base)
    return say.msg("reason.checkpointing_faster", cfg=r.values["config"])


@words_for(Code.BUCKET_FUSED)
def _bucket_fused(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    base = r.values.get("base")
    return say.msg("reason.bucket_fused", cfg=r.values["config"], base=base) if base is not None else ""


@words_for(Code.NOTHING_FITS)
def _nothing_fits(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    cfg: Config = r.values["config"]
    one_card = cfg.strategy == "ddp" and bool(ev.resolved and ev.resolved.gpu_count == 1)
    return say.msg("reason.nothing_fits_card" if one_card else "reason.nothing_fits", cfg=cfg)


@words_for(Code.KNOB_FLIPS)
def _knob_flips(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    cfg: Config = r.values["config"]
    knob = say.word(f"what_if.knob.{VARIANT_WORDS[cfg.variant]}") if cfg.variant in (CKPT, BUCKET_FUSED) \
        else cfg.variant
    on = not (cfg.variant == CKPT and not checkpointing_on(ev, cfg))
    thin = cfg.fits and not fits_with_margin(cfg)  # said, so it does not read as a clean fit
    return say.msg("what_if.knob_flips", cfg=cfg, base=r.values["base"], knob=knob, on=on, thin=thin)


@words_for(Code.SHARD_MB_LIMIT)
def _shard_mb_limit(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    cfg: Config = r.values["config"]  # checkpointing is only offered when this row runs without it
    return say.msg("what_if.shard_mb_limit", cfg=cfg, ckpt_on=checkpointing_on(ev, cfg))


_MODES = {"lora": "LoRA", "qlora": "QLoRA"}


@words_for(Code.FINETUNE_FITS)
def _finetune_fits(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    v = r.values
    key = variant_key(v["variant"], f"memory.{v['strategy']}.total_gib")
    return say.msg("what_if.finetune_fits_checkpointing" if v.get("checkpointing") else "what_if.finetune_fits",
                   mode=_MODES[v["finetune"]], key=key, name=label(v["strategy"], say.lang))


@words_for(Code.OPTIMIZER_8BIT)
def _optimizer_8bit(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    v = r.values  # no digits outside the bound figures ("8-bit" would read as a figure): the optimizer's names
    return say.msg("what_if.optimizer_8bit", name=label(v["strategy"], say.lang), fits=v["fits"],
                   now=f"memory.{v['strategy']}.total_gib",
                   key=variant_key(v["variant"], f"memory.{v['strategy']}.total_gib"))


@words_for(Code.CAPACITY, Code.CAPACITY_ANSWER)
def _capacity(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    cap = r.values["capacity"]
    if r.code == Code.CAPACITY_ANSWER and cap.gpu_count is None:
        return say.msg("direct.capacity_none")
    return say.msg("what_if.capacity" if r.code == Code.CAPACITY else "direct.capacity",
                   needs=capacity_needs(cap, say), name=label(cap.strategy, say.lang),
                   key=f"capacity.memory.{cap.strategy}.total_gib")


@words_for(Code.SINGLE_NODE)
def _single_node(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    s = r.values["single_strategy"]
    if not r.values["single_fits"]:
        return say.msg("what_if.single_node_no_fit", name=label(s, say.lang),
                       memory_key=f"single_node.memory.{s}.total_gib")
    return say.msg("what_if.single_node", cfg=r.values["config"], name=label(s, say.lang),
                   time_key=f"single_node.time.{s}.step_seconds")


@words_for(Code.LINK_ASSUMED)
def _link_assumed(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    return say.msg("what_if.link_assumed", link=_link_name(r.values.get("link")))


@words_for(Code.COMPARE)
def _compare(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    """"A or B?" answered for this setup: the winner, with throughput, memory and communication."""
    v, lang = r.values, say.lang
    a, b = v["pair"]
    winner = v["winner"]
    if winner is None:
        return say.msg("compare.neither", a=label(a, lang), b=label(b, lang))
    other = b if winner == a else a
    wc: Config | None = v["a"] if winner == a else v["b"]
    oc: Config | None = v["b"] if winner == a else v["a"]
    if wc is None:
        return ""
    return say.msg("compare.other_no_fit" if oc is None else "compare.both", winner=label(winner, lang),
                   other=label(other, lang), wc=wc, oc=oc)


@words_for(Code.ASKED_STRATEGY)
def _asked(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    """"Should I use X?" answered yes or no first, with X's best configuration beside the pick."""
    v = r.values
    asked = label(v["asked"], say.lang)
    if v["verdict"] == "no_fit":
        return say.msg("asked.no_fit", asked=asked, base=v["base"]) if v["base"] is not None else ""
    key = {"yes": "asked.yes", "close": "asked.close"}.get(v["verdict"], "asked.slower")
    return say.msg(key, best=v["best"], chosen=v["chosen"])


@words_for(Code.FEASIBLE)
def _feasible(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    fit: Config | None = r.values["chosen"]
    if fit is not None:
        return say.msg("direct.feasible", fit=fit)
    fix = combined_fix(ev, d)
    if fix is None:
        return say.msg("direct.feasible_no")
    ram = f"fix.memory.{fix.strategy}.host_ram_gib"  # offload moves the states to host RAM: said with it
    return say.msg("direct.feasible_with_changes", changes=fix_changes(fix, say), name=label(fix.strategy, say.lang),
                   key=f"fix.memory.{fix.strategy}.total_gib", ram=ram if ram in say.numbers else "")


def fix_changes(fix: Any, say: Say) -> str:
    """A combination's changes as a phrase ("activation checkpointing + 16 GPUs"), its figures
    still in slots for the sentence around it."""
    return say.word("words.change_join").join(say.raw(f"words.change.{c}") for c in fix.changes)


@words_for(Code.COMBINED_FIX)
def _combined_fix(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    """The combined what-if search's cheapest fit (bot.fix_search), with its figures; offload with
    the host RAM unstated asks for it."""
    fix = r.values["fix"]
    ram = f"fix.memory.{fix.strategy}.host_ram_gib"
    return say.msg("what_if.combined_fix", changes=fix_changes(fix, say), name=label(fix.strategy, say.lang),
                   key=f"fix.memory.{fix.strategy}.total_gib", usable=f"fix.memory.{fix.strategy}.usable_gib",
                   ram=ram if ram in say.numbers else "", ask_ram=fix.host_ram_unknown)


@words_for(Code.NO_COMBINATION_FITS)
def _no_combination_fits(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    tried = say.word("words.list_sep").join(say.word(f"words.change_name.{c}") for c in r.values["tried"])
    return say.msg("reason.no_combination_fits", tried=tried)


@words_for(Code.LOG_ZERO2_STEP)
def _log_zero2_step(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    row: Config | None = r.values.get("config")
    if row is None:
        return ""
    return say.msg("direct.log_zero2_step", row=row, asked=say.val(r.values["asked"], "turn"))


@words_for(Code.NEED_CHECKPOINTING)
def _need_checkpointing(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    without: Config | None = r.values["without"]
    withc: Config | None = r.values["with"]
    if r.values["needed"] and withc is not None:
        return say.msg("direct.need_checkpointing_yes", withc=withc)
    if without is not None:
        return say.msg("direct.need_checkpointing_no", without=without)
    return say.msg("direct.need_checkpointing_neither")


@words_for(Code.DDP_KNOBS)
def _ddp_knobs(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    base: Config | None = r.values.get("base")
    return say.msg("direct.ddp_knobs", knob=r.values["config"], base=base) if base is not None else ""


@words_for(Code.WHY_FSDP_SLOWER)
def _why_fsdp_slower(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    fs, ddp = r.values["fsdp"], r.values["ddp"]
    return say.msg("direct.why_fsdp_slower", fs=fs, ddp=ddp) if fs is not None and ddp is not None else ""


@words_for(Code.WHY_MULTI_NODE_SLOW)
def _why_multi_node_slow(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    if r.values.get("link_assumed"):
        return say.msg("direct.why_multi_node_slow_assumed", cfg=r.values["config"],
                       link=_link_name(say.setup.get("inter_node_link")))
    return say.msg("direct.why_multi_node_slow", cfg=r.values["config"])


@words_for(Code.ZERO_MAPPING)
def _zero_mapping(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    stage, strategy = r.values.get("stage"), r.values.get("strategy")
    mapped = label(ZERO_TO_STRATEGY[stage], say.lang) if stage is not None and stage in ZERO_TO_STRATEGY else ""
    zero = zero_name(strategy) if strategy in STRATEGY_TO_ZERO else ""
    return say.msg("direct.zero_mapping", stage=stage, mapped=mapped, zero=zero, plain=strategy == "ddp")


@words_for(Code.MEMORY_NOT_DIVIDED)
def _memory_not_divided(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    v = r.values
    adapters = v.get("finetune") in ("lora", "qlora")
    mode = "QLoRA" if v.get("finetune") == "qlora" else "LoRA"
    lora = ""
    if v.get("zero", True):
        lora = say.word("direct.memory_not_divided_lora_adapters" if adapters else "direct.memory_not_divided_lora",
                        mode=mode)
    cache = say.word("direct.memory_not_divided_cache")
    sharded: Config | None = v.get("config")
    if sharded is not None:
        return say.msg("direct.memory_not_divided_sharded", cfg=sharded, lora=lora, cache=cache)
    return say.msg("direct.memory_not_divided", lora=lora, cache=cache)


@words_for(Code.LORA_SHARDING_GAIN)
def _lora_sharding_gain(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    return say.msg("direct.lora_sharding_gain", mode="QLoRA" if r.values.get("finetune") == "qlora" else "LoRA")


@words_for(Code.FROM_PASSAGES)
def _from_passages(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    passages = r.values["passages"]
    if not passages:
        return ""
    p = passages[0]
    n = cites.add(p.id, p.kind, p.title, p.url, p.quote)
    line = f"{p.quote} [{n}]"
    count = figure_count(p.quote)
    if count:
        say.figure_keys[line] = [f"cite.{n}"] * count
    return line




@words_for(Code.PLAYBOOK, Code.PLAYBOOK_OTHERS, Code.PLAYBOOK_CAUSE)
def _playbook(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    """The causes a troubleshooting question's symptoms match, ranked: PLAYBOOK names the first with
    how to check and fix it, PLAYBOOK_OTHERS names the others (a short form may fold them),
    PLAYBOOK_CAUSE says the first in full (the full answer only); each cited to its playbook entry
    (its first source as the URL; the quote is the entry's cause, check and fix). The first
    sentence names the cause and carries its citation: in this setup's figures where the decision
    has a ``lead`` (the cards too small for the model states, the link between the nodes, the
    question's own figures), else the entry's gist after the marker ("Most likely [n]: <gist>."),
    followed by the check and the fix. The figures in an entry's words are the entry's own, bound
    to its citation (a gist has only figures its cause has: tests/unit/test_playbook_gist.py)."""
    lang = say.lang

    def cite(m: Any) -> int:
        return cites.add(m.id, "doc", m.text("title", lang), m.entry.sources[0], m.quote(lang))

    first, *others = r.values["matches"]
    n = cite(first)
    if r.code == Code.PLAYBOOK_CAUSE:
        cause = first.text("cause", lang)
        line = say.word("direct.playbook_cause", n=n, cause=cause)
        if figure_count(cause):
            say.figure_keys[line] = [f"cite.{n}"] * figure_count(cause)
        return line
    if r.code == Code.PLAYBOOK_OTHERS:
        if not others:
            return ""
        named, keys = [], []
        for m in others:
            k = cite(m)
            named.append(f"{m.text('title', lang)} [{k}]")
            keys += [f"cite.{k}"] * figure_count(m.text("title", lang))
        line = say.word("direct.playbook_others", also=say.word("words.list_sep").join(named))
        if keys:
            say.figure_keys[line] = keys
        return line
    lead = r.values.get("lead")
    if lead == "card_too_small":
        head = say.msg("direct.cause.card_too_small", cfg=r.values["config"], n=n,
                       one=(say.setup.get("gpu_count") or 1) == 1)
        rest = first.text("fix", lang)
    elif lead == "network":
        head = say.msg("direct.cause.network", cfg=r.values["config"], n=n, assumed=bool(r.values.get("link_assumed")),
                       link=_link_name(say.setup.get("inter_node_link")))
        rest = " ".join(first.text(name, lang) for name in ("check", "fix"))
    elif lead in ("workers", "below_requirement", "step_time"):  # in the question's own figures
        figures = r.values["figures"]
        for name, value in figures.items():  # what the sentence prints, bound to its key
            say.numbers[f"diagnosis.{name}"] = value
        head = say.msg(f"direct.cause.{lead}", n=n,
                       **{name: say.val(value, f"diagnosis.{name}") for name, value in figures.items()})
        rest = " ".join(first.text(name, lang) for name in ("check", "fix"))
    else:  # the entry's gist after the marker, then how to check and fix it (the full cause is folded)
        gist = first.text("gist", lang)
        head = say.word("direct.playbook_lead", n=n, gist=gist)
        if figure_count(gist):
            say.figure_keys[head] = [f"cite.{n}"] * figure_count(gist)
        rest = " ".join(first.text(name, lang) for name in ("check", "fix"))
    keys = say.figure_keys.get(head, []) + [f"cite.{n}"] * figure_count(rest)
    line = say.word("direct.playbook", head=head, rest=rest)
    if keys:
        say.figure_keys[line] = keys
    return line


@words_for(Code.DIAGNOSE_NEEDS)
def _diagnose_needs(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    """Nothing to diagnose yet: the one or two facts that decide it and the question lacks (no figures)."""
    kind, facts = r.values["kind"], r.values.get("facts") or ()
    named = [say.word(f"words.diagnose_facts.{kind}.{name}") for name in facts]
    return say.word("direct.diagnose_needs", lead=say.word("words.diagnose_needs_lead"),
                    count=say.word(f"words.diagnose_needs_count.{'two' if len(named) > 1 else 'one'}"),
                    facts=say.word("words.diagnose_facts_and").join(named))


@words_for(Code.PARALLEL_PLAN)
def _parallel_plan(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    """The ladder past FSDP (bot.calc.parallel_ladder): the degrees it adds and the per-GPU memory."""
    from bot.parallel_evidence import is_stated

    degrees = r.values["suggestion"].plan.degrees
    return say.msg("what_if.parallel_plan", tp=degrees.get("tp", 1) > 1, cp=degrees.get("cp", 1) > 1,
                   pp=degrees.get("pp", 1) > 1, before="parallel.fsdp_only_gib" in say.numbers,
                   stated=is_stated(r.values["suggestion"]), batch="parallel.local_batch" in say.numbers)


@words_for(Code.ASKED_PARALLEL)
def _asked_parallel(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    """"Should we add TP?": yes/no per the ladder, with the per-GPU figure that decides it."""
    v = r.values
    axes = [say.word(f"words.axis.{axis}") for axis in v["axes"]]
    added = set(v["added"])
    return say.msg(f"direct.asked_parallel_{v['verdict']}", asked=say.word("words.axis_list", axes=axes),
                   tp="tp" in added, cp="cp" in added, pp="pp" in added,
                   ckpt=say.word(f"words.ac.{v['policy']}") if v["policy"] != "none" else "",
                   before="parallel.fsdp_only_gib" in say.numbers, tp_asked="tp" in v["axes"],
                   per_step="parallel.tokens_per_step" in say.numbers)


@words_for(Code.SIZE_LIMITS)
def _size_limits(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:
    """"What can I train on these cards?": the largest size per method, with its own calc citation
    (recomputed by evals/metrics.py from the cards, bot.sizing)."""
    sizes = r.values["sizes"]
    n = cites.add("calc-sizes", "calc", say.word("source.sizes", count=sizes.gpu_count, gpu=sizes.gpu), None,
                  sizes.quote())
    methods = [{"id": lim.finetune, "name": say.word(f"words.method.{lim.finetune}"),
                "fits": lim.max_params_b is not None} for lim in sizes.limits]
    return say.msg("direct.size_limits", gpu=sizes.gpu, methods=methods, n=n)
