"""The forum + docs corpus: verbatim against the seed thread, claims well formed, docs sourced,
and the loader refusing broken files with a message that names the file."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bot.catalog import list_gpus
from bot.env import repo_root
from bot.knowledge.corpus import (
    SEED_NAME,
    STANCES,
    VERDICTS,
    CorpusError,
    all_claims,
    all_entries,
    corpus_text,
    get_entry,
    load_docs,
    load_forum,
    load_question,
    split_thread,
)

KNOWLEDGE = repo_root() / "knowledge"
COMMITTED_SEED = KNOWLEDGE / "seed" / SEED_NAME
SHARED_SEED = Path(repo_root()).parent / "shared" / "seed" / SEED_NAME
CJK = re.compile(r"[\u4e00-\u9fff]")


# --------------------------------------------------------------------------------------------
# Forum: ids, order, verbatim text
# --------------------------------------------------------------------------------------------


def test_question_and_twenty_answers_in_order():
    question = load_question()
    assert question.id == "forum-00" and question.title.startswith("forum-00: ")
    assert question.text == "MCP里用PyTorch做分布式训练，DDP和FSDP到底怎么选？"
    answers = load_forum()
    assert [a.id for a in answers] == [f"forum-{i:02d}" for i in range(1, 21)]


def test_answers_verbatim_against_committed_seed():
    question, answers = split_thread(COMMITTED_SEED.read_text(encoding="utf-8"))
    assert load_question().text == question
    assert [a.text for a in load_forum()] == answers


@pytest.mark.skipif(not SHARED_SEED.exists(), reason="shared seed thread not present in this checkout")
def test_committed_seed_is_the_shared_seed():
    assert COMMITTED_SEED.read_bytes() == SHARED_SEED.read_bytes()


def test_forum_09_is_three_paragraphs_merged():
    forum_09 = get_entry("forum-09")
    paragraphs = forum_09.text.split("\n\n")
    assert len(paragraphs) == 3
    assert paragraphs[0].startswith("老实说7B参数这个规模在MCP上跑")
    assert paragraphs[1].startswith("不过你得多留个心眼")
    assert paragraphs[2].startswith("另外有个小坑")
    # the answer after it is the "try DDP first" one, not a stray paragraph
    assert get_entry("forum-10").text.startswith("7B模型的话，我建议先试试DDP")


def test_split_thread_merges_only_continuations():
    raw = "问题？\n\n回答一\n\n不过你得多留个心眼：x\n\n另外有个小坑：y\n\n回答二"
    question, answers = split_thread(raw)
    assert question == "问题？"
    assert answers == ["回答一\n\n不过你得多留个心眼：x\n\n另外有个小坑：y", "回答二"]
    with pytest.raises(CorpusError):
        split_thread("only a question")


def test_answer_fields():
    for answer in load_forum():
        assert answer.lang == "zh"
        assert answer.url == f"seed:000_8dc699b15a19d084#{answer.id}"
        assert answer.title.startswith(f"{answer.id}: ")
        assert answer.stance in STANCES
        assert answer.topics
        assert answer.text_en.strip() and not CJK.search(answer.text_en), answer.id


def test_answer_without_content_has_no_claims():
    empty = get_entry("forum-17")
    assert empty.text == "我之前也遇到过类似问题，后来换了方案。"
    assert empty.stance == "none" and empty.claims == []
    # every other answer says something checkable
    assert all(a.claims for a in load_forum() if a.id != "forum-17")


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


def test_every_claim_is_verbatim_and_complete():
    doc_ids = {d.id for d in load_docs()}
    claims = all_claims()
    assert len(claims) >= 40
    assert len({c.id for c in claims}) == len(claims)
    for answer in load_forum():
        for claim in answer.claims:
            assert claim.id.startswith(answer.id + "-c")
            assert claim.quote in answer.text
            assert claim.verdict in VERDICTS
            assert claim.verdict_source and all(s == "calc" or s in doc_ids for s in claim.verdict_source)
            assert claim.correct and claim.explanation and CJK.search(claim.correct_zh), claim.id


def test_all_verdict_kinds_are_used():
    assert {c.verdict for c in all_claims()} == set(VERDICTS)


def _claim(answer_id: str, fragment: str):
    matches = [c for c in get_entry(answer_id).claims if fragment in c.quote]
    assert len(matches) == 1, (answer_id, fragment, matches)
    return matches[0]


@pytest.mark.parametrize(
    "answer_id, fragment, verdict",
    [
        ("forum-03", "7B用fp16大概需要14GB左右参数内存", "supported"),
        ("forum-03", "单卡80GB其实也有压力", "supported"),
        ("forum-06", "单卡显存能压到20G左右", "holds_only_when"),
        ("forum-03", "比如单卡40GB以上", "holds_only_when"),
        ("forum-08", "比如A100 80G", "holds_only_when"),
        ("forum-14", "batch size稍微大一点就爆了", "unverifiable"),
        ("forum-09", "从40G降到了12G左右", "unverifiable"),
        ("forum-14", "FSDP的通信开销也不是闹着玩的", "supported"),
        ("forum-12", "参数、梯度都分片存储", "supported"),
        ("forum-09", "训练速度比DDP慢了大概15%", "unverifiable"),
        ("forum-12", "通信量会翻倍", "misleading"),
        ("forum-14", "stage 2", "misleading"),
        ("forum-18", "DDP对卡间通信要求太高了", "contradicted"),
        ("forum-15", "梯度同步那块", "misleading"),
    ],
)
def test_key_verdicts(answer_id, fragment, verdict):
    assert _claim(answer_id, fragment).verdict == verdict


def test_doubling_claim_gives_the_right_ratio():
    claim = _claim("forum-12", "通信量会翻倍")
    assert claim.figure == 2.0 and claim.unit == "x"
    assert "1.5x" in claim.correct and "1.5倍" in claim.correct_zh
    assert "doc-communication-volume" in claim.verdict_source


def test_stage_2_claim_names_the_fsdp_equivalent():
    claim = _claim("forum-14", "stage 2")
    assert "SHARD_GRAD_OP" in claim.correct and "reshard_after_forward=False" in claim.correct
    assert "doc-zero-stages" in claim.verdict_source


def test_ddp_full_finetune_figures_match_16_bytes_per_param():
    """Every claim about DDP full fine-tuning quotes 16 B/param x params in GiB, computed here."""
    checked = 0
    for claim in all_claims():
        a = claim.applies_to
        if a.get("strategy") == "ddp" and a.get("finetune") == "full" and "params_b" in a:
            gib = a["params_b"] * 1e9 * 16 / 2**30  # ZeRO paper sec. 3.1: 2 + 2 + 12 bytes per param
            assert f"{gib:.1f} GiB" in claim.correct, (claim.id, gib)
            checked += 1
    assert checked >= 8


# --------------------------------------------------------------------------------------------
# Docs
# --------------------------------------------------------------------------------------------


def test_docs_count_front_matter_and_urls():
    docs = load_docs()
    assert len(docs) >= 15
    for doc in docs:
        path = KNOWLEDGE / "docs" / f"{doc.id}.md"
        assert path.read_text(encoding="utf-8").startswith("---\n")
        assert doc.title and doc.topics
        assert doc.urls and all(u.startswith("https://") for u in doc.urls)
        assert doc.url == doc.urls[0]
        assert "](https://" in doc.text, f"{doc.id} cites no source inline"
        if doc.lang == "en":
            words = len(doc.text.split())
            assert 120 <= words <= 1400, (doc.id, words)


def test_at_least_one_chinese_doc():
    zh = [d for d in load_docs() if d.lang == "zh"]
    assert zh and all(len(CJK.findall(d.text)) > 200 for d in zh)


def test_docs_cite_only_existing_docs():
    ids = {d.id for d in load_docs()}
    for doc in load_docs():
        for cited in re.findall(r"\bdoc-[a-z0-9-]*[a-z0-9]", doc.text):
            assert cited in ids, (doc.id, cited)


# The GPU table is split over two docs (each within the word limit): data-center parts, and GeForce /
# TITAN / Quadro / RTX workstation cards. Together, and in both languages, they list every catalog card.
GPU_DOCS = ("doc-gpu-specs", "doc-gpu-specs-workstation")


@pytest.mark.parametrize("suffix", ["", "-zh"])
def test_gpu_doc_matches_catalog(suffix):
    table = "\n".join(get_entry(doc_id + suffix).text for doc_id in GPU_DOCS)
    for gpu in list_gpus():
        rows = [line for line in table.splitlines() if line.startswith(f"| {gpu.name} |")]
        assert len(rows) == 1, (gpu.name, suffix, len(rows))  # in one of the two docs, once
        row = rows[0]
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == f"{gpu.memory_gb:g} GB"
        assert cells[2] == f"{gpu.bf16_tflops:g}"
        assert cells[5] == f"{gpu.intra_link_gb_s:g} GB/s"


def test_required_topics_are_covered():
    text = "\n".join(d.text for d in load_docs())
    for needle in ["bucket_cap_mb", "gradient_as_bucket_view", "no_sync", "reshard_after_forward",
                   "HYBRID_SHARD", "SHARD_GRAD_OP", "16 bytes per parameter", "2(n-1)/n", "NVLink",
                   "InfiniBand", "QLoRA", "2304.11277", "3,700", "torchtitan", "1.5x"]:
        assert needle in text, needle


# --------------------------------------------------------------------------------------------
# Lookups
# --------------------------------------------------------------------------------------------


def test_corpus_text_and_all_entries():
    assert corpus_text("forum-06") == get_entry("forum-06").text
    assert corpus_text("forum-00") == load_question().text
    assert corpus_text("doc-hsdp").startswith("# HSDP")
    entries = all_entries()
    assert len(entries) == 20 + len(load_docs())
    assert len({e.id for e in entries}) == len(entries)
    assert {e.kind for e in entries} == {"forum", "doc"}
    with pytest.raises(KeyError):
        corpus_text("forum-99")


# --------------------------------------------------------------------------------------------
# Broken corpora are refused, naming the file
# --------------------------------------------------------------------------------------------


@pytest.fixture
def corpus_copy(tmp_path):
    root = tmp_path / "knowledge"
    shutil.copytree(KNOWLEDGE / "forum", root / "forum")
    shutil.copytree(KNOWLEDGE / "docs", root / "docs")
    return root


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def test_copy_loads(corpus_copy):
    assert len(load_forum(corpus_copy)) == 20
    assert len(load_docs(corpus_copy)) == len(load_docs())


def _set_claim(key, value):
    def change(data):
        data["claims"][0][key] = value
    return change


BREAKAGES = [
    ("forum/forum-06.json", _set_claim("quote", "FSDP显存能压到2G"), "not a verbatim substring"),
    ("forum/forum-06.json", _set_claim("verdict", "true"), "verdict"),
    ("forum/forum-06.json", _set_claim("verdict_source", []), "verdict_source"),
    ("forum/forum-06.json", _set_claim("verdict_source", ["doc-nowhere"]), "doc-nowhere"),
    ("forum/forum-06.json", _set_claim("id", "forum-07-c1"), "forum-06-cN"),
    ("forum/forum-06.json", _set_claim("figure", "twenty"), "figure"),
    ("forum/forum-06.json", lambda d: d["claims"].append(dict(d["claims"][0])), "duplicate id"),
    ("forum/forum-06.json", lambda d: d.update(stance="maybe"), "stance"),
    ("forum/forum-06.json", lambda d: d.update(text=""), "'text'"),
    ("forum/forum-06.json", lambda d: d.update(id="forum-6"), "forum-NN"),
]


@pytest.mark.parametrize("relpath, change, message", BREAKAGES)
def test_broken_forum_file_is_refused(corpus_copy, relpath, change, message):
    path = corpus_copy / relpath
    _edit_json(path, change)
    with pytest.raises(CorpusError) as err:
        load_forum(corpus_copy)
    assert str(path) in str(err.value) and message in str(err.value)


def test_invalid_json_is_refused(corpus_copy):
    path = corpus_copy / "forum" / "forum-03.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(CorpusError, match="forum-03.json: cannot read JSON"):
        load_forum(corpus_copy)


def test_missing_answer_is_refused(corpus_copy):
    (corpus_copy / "forum" / "forum-11.json").unlink()
    with pytest.raises(CorpusError, match="forum-01..forum-19"):
        load_forum(corpus_copy)


def _replace_in(path: Path, old, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    if isinstance(old, re.Pattern):
        assert old.search(text)
        path.write_text(old.sub(new, text, count=1), encoding="utf-8")
        return
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(
    "old, new, message",
    [
        (re.compile(r"urls:\n(  - .*\n)+"), "urls: []\n", "at least one http(s) URL"),
        ("lang: zh", "lang: fr", "lang must be"),
        ("id: doc-ddp-fsdp-decision-zh", "id: doc-other", "match the file name"),
        ("---\nid:", "id:", "must start with a '---'"),
    ],
)
def test_broken_doc_is_refused(corpus_copy, old, new, message):
    path = corpus_copy / "docs" / "doc-ddp-fsdp-decision-zh.md"
    _replace_in(path, old, new)
    with pytest.raises(CorpusError) as err:
        load_docs(corpus_copy)
    assert str(path) in str(err.value) and message in str(err.value)


def test_unclosed_front_matter_is_refused(corpus_copy):
    path = corpus_copy / "docs" / "doc-hsdp.md"
    path.write_text("---\nid: doc-hsdp\ntitle: x\n# no closing line\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="not closed"):
        load_docs(corpus_copy)


def test_missing_folder_is_refused(tmp_path):
    with pytest.raises(CorpusError, match="corpus folder missing"):
        load_forum(tmp_path)
