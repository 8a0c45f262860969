"""Rules behind the second corpus review (../shared/review/corpus-round-2.md), each a class of
statements rather than one sentence, and each figure recomputed from bot.calc's byte counts:

- paged AdamW is never presented as a smaller optimizer state;
- 70B full fine-tuning: the per-GPU state with DeepSpeed's fp32 master copy or with paged 32-bit
  moments is stated (81.5 GiB on 8 GPUs), not "fits without offload";
- HSDP's cross-node all-reduce is per FSDP unit, not once per step;
- a per-GPU state figure that "fits every card" is checked against the cards the table lists;
- the 1.11 / 1.13 / 2.0 FSDP constructor facts;
- the accumulation ratio is given with sync disabled, (2k+1)/2;
- torchtitan's fp32 reduction is cited to its job config;
- FSDP's optimizer state is 8 B/param of moments (fp32 params are the master copy);
- DDP's 16 B/param breakdown uses fp32 parameters and gradients;
- every Chinese doc has an English twin, and twins share their calc tags and decimal figures.

Each checker takes the knowledge root, so it can be run against an older corpus."""

from __future__ import annotations

import re

import pytest

from bot.calc.memory import PRECISIONS, optimizer_bytes_per_param
from bot.knowledge.calc_tags import TAG
from bot.knowledge.corpus import load_docs, load_forum
from bot.knowledge.sentences import quotable_units

GIB = 2**30
_CJK = re.compile(r"[\u4e00-\u9fff]")
_NUM = re.compile(r"(?<![A-Za-z0-9_.])\d+\.\d+(?![0-9.])")
_LINK = re.compile(r"\]\([^)]*\)")


def _docs(root=None):
    return {d.id: d for d in load_docs(root)}


def _texts(root=None):
    """(where, text) for every doc and every forum claim's correction and explanation."""
    out = [(d.id, d.text) for d in load_docs(root)]
    for answer in load_forum(root):
        for claim in answer.claims:
            out += [(claim.id, claim.correct), (claim.id, claim.correct_zh), (claim.id, claim.explanation)]
    return out


def _sentences(text: str) -> list[str]:
    return quotable_units(TAG.sub("", text)) or [text]


# ---- 1. paged AdamW -------------------------------------------------------------------------

_PAGED = re.compile(r"(?i)paged(?![-_ ]?kv)")
_SMALLER = re.compile(r"(?i)smaller|less\b|更少|更小|~?\s?6\s?(B|bytes?|字节)|8-bit/paged|8-bit或paged|paged 8-bit")
_SAYS_32 = re.compile(r"(?i)32[- ]?bit|32位|optim_bits=32|not a smaller|不会更少|does not take less|spike|峰值")


def paged_as_smaller(root=None) -> list[str]:
    """Sentences that put paged AdamW among the smaller states without saying it keeps 32-bit moments."""
    bad = []
    for where, text in _texts(root):
        plain = TAG.sub("", text)
        for sentence in _sentences(text):
            at = max(plain.find(sentence), 0)
            # the correction may follow in the next clause ("...；paged AdamW保留32位动量")
            context = plain[at:at + len(sentence) + 200]
            if _PAGED.search(sentence) and _SMALLER.search(sentence) and not _SAYS_32.search(context):
                bad.append(f"{where}: {sentence[:120]}")
    return bad


def test_paged_adamw_is_never_a_smaller_state():
    assert paged_as_smaller() == []


# ---- 2. 70B on one node -----------------------------------------------------------------------

def seventy_b_figures(root=None) -> list[str]:
    bf16, mixed = PRECISIONS["bf16"], PRECISIONS["bf16-mixed"]
    # DeepSpeed ZeRO-3 with 8-bit Adam: 16-bit params and grads + an fp32 master partition + 8-bit moments
    deepspeed_8bit = bf16.param + bf16.grad + mixed.param + optimizer_bytes_per_param("adam8bit", bf16)
    # bf16 weights + paged 32-bit AdamW (moments in fp32), gradients freed in backward
    paged_32 = bf16.param + optimizer_bytes_per_param("adamw", mixed)
    problems = []
    for doc_id in ("doc-70b-full-finetune", "doc-70b-full-finetune-zh"):
        text = _docs(root)[doc_id].text
        for bytes_per_param in (deepspeed_8bit, paged_32):
            figure = f"{70e9 * bytes_per_param / 8 / GIB:.1f}"
            if figure not in text:
                problems.append(f"{doc_id} lacks {figure} GiB per GPU ({bytes_per_param:.2f} B/param on 8 GPUs)")
    return problems


def test_70b_doc_states_the_deepspeed_and_paged_figures():
    assert seventy_b_figures() == []


# ---- 3. HSDP -----------------------------------------------------------------------------------

_ONCE = re.compile(r"(?i)once per step|每步一次|one large all-reduce")


def hsdp_once_per_step(root=None) -> list[str]:
    bad = []
    for where, text in _texts(root):
        for sentence in _sentences(text):
            if _ONCE.search(sentence) and re.search(r"(?i)hsdp|hybrid|混合分片|跨节点|cross-node|across nodes", sentence) \
                    and not re.search(r"(?i)\bnot\b|不是|并不", sentence):
                bad.append(f"{where}: {sentence[:120]}")
    return bad


def test_hsdp_cross_node_all_reduce_is_not_once_per_step():
    assert hsdp_once_per_step() == []


# ---- 4. "fits every card" --------------------------------------------------------------------

_ROW = re.compile(r"^\|\s*(?P<name>[^|]+?)\s*\|\s*(?P<gb>\d+(?:\.\d+)?)\s*GB\s*\|", re.M)


def every_card_claims(root=None) -> list[str]:
    """A GiB figure in doc-gpu-specs must name every listed card that cannot hold it."""
    text = _docs(root)["doc-gpu-specs"].text
    cards = [(m.group("name"), float(m.group("gb"))) for m in _ROW.finditer(text)]
    problems = []
    for line in text.splitlines():
        for tag in TAG.finditer(line):
            if tag.group("key") != "states_gib" or "shards=" not in tag.group("args"):
                continue
            figure = float(tag.group("value"))
            for name, gb in cards:
                model_token = re.search(r"\d{4}|[A-Z]\d{2,3}", name)
                if gb * 1e9 / GIB < figure and model_token and model_token.group(0) not in line:
                    problems.append(f"{figure} GiB per GPU does not fit {name}, which the sentence does not name")
    return problems


def test_a_per_gpu_figure_names_the_cards_it_does_not_fit():
    assert every_card_claims() == []


# ---- 5. FSDP version history ------------------------------------------------------------------

def version_facts(root=None) -> list[str]:
    text = _docs(root)["doc-torch-fsdp-versions"].text
    bullets = {m.group(1): m.group(0) for m in re.finditer(r"^- \*\*([\d.-]+)\*\*.*$", text, re.M)}
    problems = []
    for arg in ("cpu_offload", "fsdp_auto_wrap_policy", "backward_prefetch"):  # the 1.11 signature
        if arg not in bullets.get("1.11", ""):
            problems.append(f"1.11 bullet lacks {arg}")
    if re.search(r"1\.13 builds already accept|1\.13[^.]*accepts? `?use_orig_params", text):
        problems.append("says 1.13 accepts use_orig_params (it is not in the 1.13 signature)")
    if "BACKWARD_PRE" not in bullets.get("2.0", "") or "use_orig_params" not in bullets.get("2.0", ""):
        problems.append("2.0 bullet lacks the new default BACKWARD_PRE or use_orig_params")
    return problems


def test_fsdp_version_history_matches_the_release_docs():
    assert version_facts() == []


# ---- 6. accumulation ratio ---------------------------------------------------------------------

def accumulation_ratio(root=None) -> list[str]:
    """Every paragraph with the calculator's accumulation ratio also gives (2k+1)/2 with sync off."""
    problems = []
    for doc in load_docs(root):
        for line in doc.text.splitlines():
            for tag in TAG.finditer(line):
                accum = re.search(r"\baccum=(\d+)", tag.group("args"))
                if tag.group("key") != "comm_ratio" or not accum or int(accum.group(1)) < 2:
                    continue
                k = int(accum.group(1))
                fair = (2 * k + 1) / 2  # two all-gathers per micro-batch + one reduce-scatter, against DDP's 2
                if f"{fair:g}" not in _NUM.findall(line) + re.findall(r"\d+(?:\.\d+)?", line):
                    problems.append(f"{doc.id}: {tag.group('value')}x at k={k} without the {fair:g}x of sync disabled")
    return problems


def test_accumulation_ratio_is_given_with_sync_disabled():
    assert accumulation_ratio() == []


# ---- 7. torchtitan's fp32 reduction --------------------------------------------------------------

def torchtitan_reduce_source(root=None) -> list[str]:
    bad = []
    for doc in load_docs(root):
        for sentence in quotable_units(doc.text):
            if "torchtitan" in sentence and re.search(r"(?i)fp32 reduc|float32", sentence) \
                    and "job_config" not in sentence and "bf16_optimizer_states" not in sentence:
                bad.append(f"{doc.id}: {sentence[:100]}")
    return bad


def test_torchtitan_fp32_reduction_cites_its_job_config():
    assert torchtitan_reduce_source() == []


# ---- 8 and 9. FSDP's and DDP's byte layouts ---------------------------------------------------------

def layout_figures(root=None) -> list[str]:
    mixed = PRECISIONS["bf16-mixed"]
    moments = optimizer_bytes_per_param("adamw", mixed)  # FSDP/AMP: fp32 params are the master copy
    problems = []
    claim = next(c for a in load_forum(root) for c in a.claims if c.id == "forum-12-c3")
    figure = f"{7e9 * moments / GIB:.1f}"
    for text in (claim.correct, claim.correct_zh):
        if figure not in text or "78 GiB" in text:
            problems.append(f"forum-12-c3 should leave {moments:g} B/param ({figure} GiB for 7B), not ZeRO's 12")
    ddp_layout = f"{mixed.param:g} B + {mixed.grad:g} B"
    for answer in load_forum(root):
        for c in answer.claims:
            if "2 B bf16/fp16 weights + 2 B gradients" in c.correct and ddp_layout not in c.correct:
                problems.append(f"{c.id}: DDP's 16 B/param itemised as 16-bit weights and gradients")
    return problems


def test_fsdp_and_ddp_byte_layouts():
    assert layout_figures() == []


# ---- twins -------------------------------------------------------------------------------------------

def twin_problems(root=None) -> list[str]:
    docs = _docs(root)
    problems = []
    for doc_id, doc in docs.items():
        if not doc_id.endswith("-zh"):
            continue
        en = docs.get(doc_id[:-3])
        if en is None:
            problems.append(f"{doc_id} has no English twin {doc_id[:-3]}")
            continue
        tags = {d: sorted((m.group("key"), " ".join(sorted(m.group("args").split())), m.group("value"))
                          for m in TAG.finditer(x.text)) for d, x in ((doc_id, doc), (en.id, en))}
        if tags[doc_id] != tags[en.id]:
            problems.append(f"{doc_id} / {en.id}: calc tags differ: "
                            f"{set(tags[doc_id]) ^ set(tags[en.id])}")
        figures = {d: set(_NUM.findall(TAG.sub("", _LINK.sub("]", x.text)))) for d, x in ((doc_id, doc), (en.id, en))}
        if figures[doc_id] != figures[en.id]:
            problems.append(f"{doc_id} / {en.id}: figures differ: zh only {sorted(figures[doc_id] - figures[en.id])}, "
                            f"en only {sorted(figures[en.id] - figures[doc_id])}")
    return problems


def test_every_chinese_doc_has_an_english_twin_with_the_same_figures():
    assert twin_problems() == []


def test_twins_are_in_their_languages():
    for doc in load_docs():
        has_cjk = bool(_CJK.search(TAG.sub("", doc.text)))
        assert has_cjk == (doc.lang == "zh") or doc.lang == "en" and not doc.id.endswith("-zh"), doc.id
        assert doc.id.endswith("-zh") == (doc.lang == "zh"), doc.id


@pytest.mark.parametrize("checker", [paged_as_smaller, seventy_b_figures, hsdp_once_per_step, every_card_claims,
                                     version_facts, accumulation_ratio, torchtitan_reduce_source,
                                     layout_figures, twin_problems])
def test_checkers_return_lists(checker):
    assert isinstance(checker(), list)
