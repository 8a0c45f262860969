"""Issue 25: a troubleshooting answer reads like an expert's few lines: "Most likely [n]: <gist>."
(the playbook entry's cause in one short sentence), then how to check and fix it; the entry's full
cause is in the full answer. Every entry of every playbook file has a gist (``GIST_MAX_CHARS``), one
sentence, printing no figure its cause lacks, and the loader refuses one missing or too long.

The questions are our own phrasings (none is a question of ``evals/cases/first_contact_*.jsonl``:
checked below), answered offline (no retrieval: the playbook and the calculator are local)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _helpers import answer_offline

from bot.answer.catalog import render
from bot.figures import numbers_in_text, strip_code_blocks
from bot.knowledge.playbook import (
    GIST_MAX_CHARS,
    LANGS,
    PlaybookError,
    clear_caches,
    get_entry,
    load_playbook,
)
from bot.numwords import candidate_values, spelled_numbers
from evals.bench_diagnosis import lead_cause
from evals.harness import Case
from evals.metrics import check_number_traceability

# the first sentence, marker and gist together: about a line (issue 25), never the cause's paragraph
FIRST_SENTENCE_CHARS = {"en": 160, "zh": 80}
# a sentence ends at a Latin stop before a space or at a CJK stop (evals.first_contact.first_sentence)
_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？]")


def _gists():
    for entry in load_playbook():
        for lang in LANGS:
            yield pytest.param(entry, lang, id=f"{entry.id}-{lang}")


@pytest.mark.parametrize(("entry", "lang"), list(_gists()))
def test_every_entry_has_a_one_sentence_gist_within_the_limit(entry, lang):
    gist = entry.text("gist", lang)
    assert gist and len(gist) <= GIST_MAX_CHARS[lang], (entry.id, len(gist))
    assert not _SENTENCE_END.search(gist) and not gist.endswith((".", "。")), gist  # the answer adds the stop
    assert gist != entry.text("cause", lang) and gist != entry.text("title", lang), "a gist is the cause said short"
    if lang == "zh":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in gist), gist
    else:
        assert not any("\u4e00" <= ch <= "\u9fff" for ch in gist), gist


@pytest.mark.parametrize(("entry", "lang"), list(_gists()))
def test_a_gist_prints_no_figure_its_cause_lacks(entry, lang):
    """Every figure a gist prints is bound to the entry's citation, whose quote is the cause, check
    and fix: a digit must be the cause's own, a number word one of the quote's figures."""
    gist = entry.text("gist", lang)
    cause = {m.value for m in numbers_in_text(entry.text("cause", lang))}
    assert all(m.value in cause for m in numbers_in_text(gist)), gist
    quoted = {m.value for m in numbers_in_text(" ".join(entry.text(n, lang) for n in ("title", "cause", "check", "fix")))}
    for word in spelled_numbers(strip_code_blocks(gist)):
        assert set(candidate_values(word)) & quoted, (gist, word)


_ENTRY = ("- id: pb-x\n  title: {{en: a, zh: 一}}\n{gist}  cause: {{en: a, zh: 一}}\n  check: {{en: a, zh: 一}}\n"
          "  fix: {{en: a, zh: 一}}\n  symptoms: {{en: [a], zh: [一]}}\n  sources: [https://example.org]\n")


@pytest.mark.parametrize("gist", [
    "",  # no gist at all
    "  gist: {en: a}\n",  # no Chinese
    "  gist: {en: '', zh: 一}\n",  # empty English
    "  gist: {en: '.', zh: 一}\n",  # only a stop
    f"  gist: {{en: {'a' * (GIST_MAX_CHARS['en'] + 1)}, zh: 一}}\n",  # one character over, en
    f"  gist: {{en: a, zh: {'一' * (GIST_MAX_CHARS['zh'] + 1)}}}\n",  # one character over, zh
])
def test_the_loader_refuses_a_missing_or_long_gist_naming_the_entry(tmp_path, gist):
    (tmp_path / "part9-new.yaml").write_text("entries:\n" + _ENTRY.format(gist=gist), encoding="utf-8")
    clear_caches()
    try:
        with pytest.raises(PlaybookError, match=r"part9-new\.yaml.*pb-x.*gist"):
            load_playbook(tmp_path)
    finally:
        clear_caches()


def test_a_gist_at_the_limit_loads_and_loses_its_stop(tmp_path):
    gist = f"  gist: {{en: '{'a' * GIST_MAX_CHARS['en']}.', zh: '{'一' * GIST_MAX_CHARS['zh']}。'}}\n"
    (tmp_path / "part9-new.yaml").write_text("entries:\n" + _ENTRY.format(gist=gist), encoding="utf-8")
    clear_caches()
    try:
        entry = load_playbook(tmp_path)[0]
    finally:
        clear_caches()
    assert entry.text("gist", "en") == "a" * GIST_MAX_CHARS["en"]
    assert entry.text("gist", "zh") == "一" * GIST_MAX_CHARS["zh"]


LONG_SAMPLE = ("pb-oom-long-sample", "pb-oom-long-inputs-per-sample-batch")
ONE_GPU = ("pb-launcher-single-process",)
HANG = ("pb-collective-hang-mid-run",)
SLOW_NODES = ("pb-multi-node-slow-link", "pb-nccl-not-using-ib", "pb-multi-node-use-hsdp")
CASES = [
    (LONG_SAMPLE, "We get OOM only occasionally, after thousands of steps, and it seems to happen when a very long "
                  "document shows up in the batch"),
    (LONG_SAMPLE, "After running fine for hours, training hit CUDA out of memory at step 41000"),
    (LONG_SAMPLE, "Out of memory after 20 hours of training, on a batch that held one extremely long sequence"),
    (LONG_SAMPLE, "训练稳定跑了十几个小时，到第三万步左右突然爆显存"),
    (LONG_SAMPLE, "跑到第八万步时显存溢出，前面一直很稳定"),
    (LONG_SAMPLE, "前面几千步显存很稳，碰到一条超长的序列就爆显存了"),
    (ONE_GPU, "I started training with `python finetune.py` on a machine with 8 GPUs, but nvidia-smi shows only the "
              "first card working"),
    (ONE_GPU, "nvidia-smi shows only GPU 0 busy while the other three cards stay idle; I start the job with python train.py"),
    (ONE_GPU, "Only the first GPU is used on my 2-GPU workstation when I run python main.py"),
    (ONE_GPU, "8卡机器上直接 python finetune.py 启动，nvidia-smi 里只有第一张卡在跑"),
    (ONE_GPU, "服务器有两张卡，但只有0号卡有负载，脚本是直接用python运行的"),
    (ONE_GPU, "我用 python 直接启动训练脚本，结果只有一张卡在跑，其他卡都空闲"),
    (HANG, "Halfway through epoch 2 the DDP job freezes inside an all_reduce and never moves again"),
    (HANG, "Our multi-GPU run hangs at a collective after a few hundred iterations, nothing in the logs"),
    (HANG, "DDP training freezes mid-epoch on 4 GPUs, every rank stuck in all_reduce"),
    (HANG, "8卡训练跑到一半卡住了，GPU利用率一直100%，直到NCCL watchdog超时"),
    (HANG, "训练跑了几个小时后卡在 allreduce 不动了"),
    (HANG, "多卡DDP训练中途卡死在 all_gather，GPU 利用率一直是100%"),
    (SLOW_NODES, "Multi-node training with two machines is slower than one machine alone"),
    (SLOW_NODES, "Training on two nodes is slower than on one node; the nodes are linked by Ethernet"),
    (SLOW_NODES, "Our multi-node run over Ethernet is slower than a single machine"),
    (SLOW_NODES, "两台机器一起训练，速度比一台还慢，机器之间是千兆网"),
    (SLOW_NODES, "多机训练比单机慢很多，节点间只有以太网"),
    (SLOW_NODES, "扩到三台机器后比单台机器还慢，网络是以太网"),
]


def _lang(text: str) -> str:
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"


def test_the_phrasings_are_our_own_in_both_languages():
    asked = set()
    for path in Path(__file__).resolve().parents[2].glob("evals/cases/first_contact_*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                asked.add(" ".join(str(json.loads(line).get("question") or "").split()))
    asked.discard("")
    assert len(asked) > 100  # the batches were read
    for _, question in CASES:
        assert not any(question in q or q in question for q in asked), question
    for ids in {c[0] for c in CASES}:
        langs = [_lang(q) for i, q in CASES if i == ids]
        assert langs.count("en") >= 3 and langs.count("zh") >= 3, ids


@pytest.mark.parametrize(("expected", "question"), CASES)
def test_the_first_sentence_is_the_gist_then_the_check_and_fix(expected, question):
    answer = answer_offline(question)
    lang = answer.language
    assert lang == _lang(question)
    got, sentence = lead_cause(answer)
    assert got in expected, (got, sentence)
    entry = get_entry(got)
    n = next(c.n for c in answer.citations if c.id == got)
    lead = render(lang, "direct.playbook_lead", {"n": n, "gist": entry.text("gist", lang)})
    assert sentence == lead, sentence
    assert len(sentence) < FIRST_SENTENCE_CHARS[lang], (len(sentence), sentence)
    # then how to check and fix it, in the short form; the cause in full only in the full answer
    after = answer.text[answer.text.index(lead) + len(lead):].lstrip()
    assert after.startswith(entry.text("check", lang)), after[:120]
    assert entry.text("fix", lang) in answer.text
    cause = entry.text("cause", lang)
    assert cause not in answer.text and cause in answer.full_text
    # every figure printed is still bound to a key or the citation (the gist's to the entry's)
    result = check_number_traceability(Case(id="t", turns=[question]), answer)
    assert result.passed, result.detail


@pytest.mark.parametrize(("question", "entry_id"), [
    ("torchrun on 4 GPUs with num_workers=12 in every loader, and the box has 16 CPU cores; steps are slow",
     "pb-dataloader-workers-oversubscribe"),
    ("8卡训练，每个进程 num_workers=8，机器只有32核，训练很慢", "pb-dataloader-workers-oversubscribe"),
])
def test_a_lead_in_the_questions_figures_keeps_its_sentence_and_folds_the_cause(question, entry_id):
    answer = answer_offline(question)
    got, sentence = lead_cause(answer)
    assert got == entry_id, sentence
    gist = get_entry(entry_id).text("gist", answer.language)
    assert gist not in sentence  # its own first sentence, with the question's figures
    cause = get_entry(entry_id).text("cause", answer.language)
    assert cause not in answer.text and cause in answer.full_text


def test_a_cited_sentence_printed_on_its_own_is_the_sources_wording():
    """The traceability metric strips a doc quote's sentences one by one (the lead prints an entry's
    check and fix apart from its cause); a number word of the answer's own still has no source."""
    question = "Halfway through epoch 2 the DDP job freezes inside an all_reduce and never moves again"
    answer = answer_offline(question)
    case = Case(id="t", turns=[question])
    doc = next(c for c in answer.citations if c.id.startswith("pb-"))
    quote = doc.quote + " Seventeen ranks wait for the last one here."  # a sentence the text prints alone
    citations = [c.model_copy(update={"quote": quote}) if c is doc else c for c in answer.citations]
    quoted = answer.model_copy(update={"citations": citations,
                                       "text": answer.text + "\n\nSeventeen ranks wait for the last one here."})
    assert check_number_traceability(case, quoted).passed, check_number_traceability(case, quoted).detail
    own = quoted.model_copy(update={"text": answer.text + "\n\nSeventeen ranks wait."})
    result = check_number_traceability(case, own)
    assert not result.passed and "spelled-out" in result.detail
