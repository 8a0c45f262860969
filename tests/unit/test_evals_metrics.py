"""Every eval metric can fail, and fails for the right reason; a good answer passes them all.

Answers are built by hand (the Answer contract from bot/answer.py), so these tests do not depend
on the bot; the corpus is the real one in knowledge/.
"""

from __future__ import annotations

import pytest

from bot.answer import Answer, Citation, Recommendation
from bot.knowledge.corpus import load_forum
from evals.harness import Case
from evals.metrics import (
    Sources,
    check_asks,
    check_citation_integrity,
    check_cite_kinds,
    check_forbid,
    check_language,
    check_number_traceability,
    check_numbers,
    check_strategy,
    citation_markers,
    detect_language,
    numbers_in_text,
    quote_in_text,
    run_metrics,
)

FORUM = load_forum()
FORUM_06 = next(a for a in FORUM if a.id == "forum-06")
# a verbatim slice of the original text, from "6.7B" to "20G" (the answer below cites both figures)
REAL_QUOTE = FORUM_06.text[FORUM_06.text.index("6.7B"):FORUM_06.text.index("20G") + 3]

CASE = Case.model_validate({
    "id": "en-7b-8xa100-40g",
    "turns": ["Llama-2-7B full fine-tune on 8x A100 40GB: DDP or FSDP?"],
    "expect": {
        "language": "en",
        "strategy": ["fsdp_full_shard", "fsdp_shard_grad_op"],
        "numbers": {"memory.ddp.fits": False, "memory.fsdp_full_shard.total_gib": [18, 32]},
        "cite_kinds": ["calc", "forum"],
        "asks": ["micro_batch"],
        "forbid": ["OPENAI_API_KEY"],
    },
})

GOOD_TEXT = """**Recommendation: FSDP full shard.** A DDP replica of Llama-2-7B needs 148.3 GiB per GPU,
more than the 40 GB an A100 40GB holds [1]. Full shard over 8 GPUs needs 25.5 GiB [1].

| strategy | GiB per GPU | fits |
|---|---|---|
| DDP | 148.3 | no |
| FSDP full shard | 25.5 | yes |

1. Shard with FSDP2 in bf16.
2. A forum answer reports "6.7B ... 20G" with checkpointing [2].

```python
torchrun --nproc_per_node 8 --nnodes 1 train.py  # 4096 ignored: code block
```
How large a micro-batch do you need?"""


def good_answer(**changes) -> Answer:
    data = dict(
        language="en",
        setup={"model": "Llama-2-7B", "params_b": 6.738, "gpu": "A100 40GB SXM", "gpu_memory_gb": 40.0,
               "gpu_count": 8, "seq_len": 2048, "micro_batch": 1},
        missing=[],
        recommendation=Recommendation(strategy="fsdp_full_shard", alternatives=["fsdp_shard_grad_op"]),
        numbers={"memory.ddp.fits": False, "memory.ddp.total_gib": 148.3326,
                 "memory.fsdp_full_shard.total_gib": 25.5269, "memory.fsdp_full_shard.fits": True},
        citations=[
            Citation(n=1, id="calc", kind="calc", title="shardwise memory calculator",
                     quote="Llama-2-7B, 8 x A100 40GB, bf16-mixed, AdamW, seq 2048, micro-batch 1"),
            Citation(n=2, id="forum-06", kind="forum", title=FORUM_06.title, url=FORUM_06.url, quote=REAL_QUOTE),
        ],
        questions=["micro_batch"],
        text=GOOD_TEXT,
    )
    data.update(changes)
    return Answer(**data)


def _forum_text(entry_id: str) -> str:
    for answer in FORUM:
        if answer.id == entry_id:
            return answer.text
    raise KeyError(entry_id)


# The real forum text, and a bench store that knows exactly one run.
NO_BENCH = Sources(corpus_text=_forum_text, bench_run_exists=lambda run_id: run_id == "run-known")


def test_a_good_answer_passes_every_metric():
    # calc_citations recomputes the calculator: this hand-built answer's figures are fixed text,
    # so that metric is tested on real answers below (test_an_invented_figure_in_a_calc_quote_fails)
    results = [m for m in run_metrics(CASE, good_answer()) if m.name != "calc_citations"]
    failed = [(m.name, m.detail) for m in results if m.passed is False]
    assert failed == []
    # the real-thread expectations (intent, status, setup, mentions) are not in this case: N/A
    assert all(m.passed is True for m in results if m.name not in ("intent", "status", "setup", "mentions")), \
        [(m.name, m.passed) for m in results]


def test_wrong_strategy_fails_with_expected_and_got():
    result = check_strategy(CASE, good_answer(recommendation=Recommendation(strategy="ddp")))
    assert result.passed is False
    assert "'ddp'" in result.detail and "fsdp_full_shard" in result.detail


def test_out_of_range_number_fails():
    numbers = dict(good_answer().numbers, **{"memory.fsdp_full_shard.total_gib": 100.4})
    result = check_numbers(CASE, good_answer(numbers=numbers))
    assert result.passed is False
    assert "memory.fsdp_full_shard.total_gib: expected [18, 32], got 100.4" in result.detail


def test_missing_number_and_wrong_boolean_fail():
    result = check_numbers(CASE, good_answer(numbers={"memory.ddp.fits": True}))
    assert result.passed is False
    assert "memory.ddp.fits: expected false, got True" in result.detail
    assert "memory.fsdp_full_shard.total_gib: expected [18, 32], absent" in result.detail


def test_a_range_is_inclusive_and_a_boolean_is_not_a_number():
    case = Case.model_validate({"id": "x", "turns": ["q"], "expect": {"numbers": {
        "memory.ddp.total_gib": [100, 130], "memory.ddp.max_micro_batch": [0, 1]}}})
    assert check_numbers(case, good_answer(numbers={"memory.ddp.total_gib": 130,
                                                    "memory.ddp.max_micro_batch": 0})).passed is True
    assert check_numbers(case, good_answer(numbers={"memory.ddp.total_gib": 130.01,
                                                    "memory.ddp.max_micro_batch": 0})).passed is False
    # True == 1 in Python; a boolean must not satisfy a numeric range
    assert check_numbers(case, good_answer(numbers={"memory.ddp.total_gib": 120,
                                                    "memory.ddp.max_micro_batch": True})).passed is False


def test_untraceable_number_fails_and_names_it():
    text = GOOD_TEXT.replace("needs 25.5 GiB [1]", "needs 25.5 GiB and runs 37% faster [1]")
    result = check_number_traceability(CASE, good_answer(text=text))
    assert result.passed is False
    assert "'37'" in result.detail and "faster" in result.detail


def test_rounding_tolerance_follows_the_printed_precision():
    # 25.5269 may be printed as 25.5 or 26 or 25.53, not as 25.6 or 25.4
    for printed, ok in (("25.5", True), ("26", True), ("25.53", True), ("25.6", False), ("25.4", False),
                        ("148", True), ("148.3", True), ("148.4", False)):
        answer = good_answer(text=f"Per GPU: {printed} GiB.")
        assert check_number_traceability(CASE, answer).passed is ok, printed


def test_half_way_rounding_is_accepted_both_ways():
    answer = good_answer(numbers={"memory.fsdp_full_shard.total_gib": 12.55}, text="12.6 GiB, or 12.5 GiB")
    assert check_number_traceability(CASE, answer).passed is True


def test_dangling_citation_marker_fails():
    text = GOOD_TEXT + "\nThe PyTorch FSDP paper agrees [3]."
    result = check_citation_integrity(CASE, good_answer(text=text), NO_BENCH)
    assert result.passed is False
    assert "[3]" in result.detail


def test_forged_quote_fails():
    forged = Citation(n=2, id="forum-06", kind="forum", title=FORUM_06.title, url=FORUM_06.url,
                      quote="FSDP is always 3x faster than DDP")
    answer = good_answer(citations=[good_answer().citations[0], forged])
    result = check_citation_integrity(CASE, answer, NO_BENCH)
    assert result.passed is False
    assert "not verbatim in forum-06" in result.detail


def test_forged_quote_fails_with_the_real_corpus():
    forged = Citation(n=2, id="forum-06", kind="forum", title="t", quote=REAL_QUOTE + "，DDP快三倍")
    result = check_citation_integrity(CASE, good_answer(citations=[good_answer().citations[0], forged]))
    assert result.passed is False and "not verbatim" in result.detail


def test_unknown_corpus_id_and_unknown_bench_run_fail():
    citations = [Citation(n=1, id="calc", kind="calc", title="calc"),
                 Citation(n=2, id="forum-99", kind="forum", title="t", quote="x"),
                 Citation(n=3, id="run-forged", kind="bench", title="bench")]
    result = check_citation_integrity(CASE, good_answer(citations=citations, text="[1] [2] [3]"), NO_BENCH)
    assert result.passed is False
    assert "forum-99" in result.detail and "run-forged" in result.detail
    ok = [citations[0], Citation(n=3, id="run-known", kind="bench", title="bench")]
    assert check_citation_integrity(CASE, good_answer(citations=ok, text="[1] [3]"), NO_BENCH).passed is True


def test_bench_citation_with_the_real_store_names_a_missing_run():
    citations = [Citation(n=1, id="run-does-not-exist-123", kind="bench", title="bench")]
    result = check_citation_integrity(CASE, good_answer(citations=citations, text="see [1]"))
    assert result.passed is False and "run-does-not-exist-123" in result.detail


def test_duplicate_citation_numbers_fail():
    c = good_answer().citations
    twice = [c[0], c[1].model_copy(update={"n": 1})]
    assert check_citation_integrity(CASE, good_answer(citations=twice, text="[1]"), NO_BENCH).passed is False


def test_quote_with_ellipsis_matches_pieces_in_order():
    text = "甲乙丙丁戊己庚辛"
    assert quote_in_text("甲乙…戊己", text)
    assert quote_in_text("乙丙 ... 庚辛", text)
    assert not quote_in_text("戊己…甲乙", text)  # out of order
    assert not quote_in_text("...", text)


def test_wrong_language_fails_both_ways():
    assert check_language(CASE, good_answer(language="zh")).passed is False
    chinese = good_answer(text="推荐使用 FSDP 全分片，DDP 单卡需要的显存超过了卡的容量，所以放不下。")
    result = check_language(CASE, chinese)
    assert result.passed is False and "reads as 'zh'" in result.detail


def test_language_is_detected_from_the_question_when_not_expected():
    case = Case.model_validate({"id": "x", "turns": ["7B模型全参微调，8张A100 40G，DDP还是FSDP？"]})
    assert check_language(case, good_answer()).passed is False  # English answer to a Chinese question


def test_detect_language():
    assert detect_language("7B模型，8张A100，DDP还是FSDP？") == "zh"
    assert detect_language("is 显存 the same thing as VRAM?") == "en"
    assert detect_language("DDP or FSDP for 7B?") == "en"


def test_missing_citation_kind_fails():
    answer = good_answer(citations=[good_answer().citations[0]], text="A replica needs 148.3 GiB [1].")
    result = check_cite_kinds(CASE, answer)
    assert result.passed is False and "forum" in result.detail


def test_unasked_field_fails():
    result = check_asks(CASE, good_answer(questions=["gpu_count"]))
    assert result.passed is False and "micro_batch" in result.detail


def test_forbidden_text_fails():
    answer = good_answer(text=GOOD_TEXT + "\nOPENAI_API_KEY=abc")
    result = check_forbid(CASE, answer)
    assert result.passed is False and "OPENAI_API_KEY" in result.detail


def test_metrics_without_expectations_are_not_applicable():
    case = Case.model_validate({"id": "bare", "turns": ["Llama-2-7B on 8x A100 40GB?"]})
    results = {m.name: m.passed for m in run_metrics(case, good_answer(), NO_BENCH) if m.name != "calc_citations"}
    assert results == {"language": True, "strategy": None, "numbers": None, "cite_kinds": None, "asks": None,
                       "forbid": None, "intent": None, "status": None, "setup": None, "mentions": None,
                       "citation_integrity": True, "number_traceability": True}


# --- the number tokenizer, both ways -------------------------------------------------------------

def _printed(text: str) -> list[str]:
    return [m.printed for m in numbers_in_text(text)]


@pytest.mark.parametrize("text", [
    "Use FSDP2 with bf16 or fp16 on A100, H100, H200 and A10 cards.",
    "Llama-2-7B, Llama-3.1-8B and Qwen2.5-7B; ZeRO-3 is like FULL_SHARD, ZeRO-2 like SHARD_GRAD_OP.",
    "See forum-06 and forum-12, run-20240101 and doc-zero-stages.",
    "as measured [1], confirmed [2][3] and [4, 5] and [6，7]",
    "Docs: https://pytorch.org/docs/2.4/fsdp.html and [the paper](https://arxiv.org/abs/1910.02054v3).",
    "## 2.1 Why\n### 3. How to run",
    "1. first\n2) second\n3、第三\n- 4. nested",
    "```bash\ntorchrun --nproc_per_node 8 --nnodes 2 train.py --lr 3e-4\n```",
    "~~~\nbatch = 64\n~~~",
])
def test_names_markers_urls_numbering_and_code_are_not_figures(text):
    assert _printed(text) == []


@pytest.mark.parametrize("text, expected", [
    ("7B model on 8 GPUs", ["7", "8"]),
    ("needs 40GB, i.e. 12.6 GiB per GPU", ["40", "12.6"]),
    ("about 1.5x DDP's traffic, 15% slower", ["1.5", "15"]),
    ("单卡40G，8张A100，7B模型", ["40", "8", "7"]),
    ("batch_size为1，744G CPU memory", ["1", "744"]),  # a full-width comma is never a thousands comma
    ("fp16 needs 14-16GB", ["14", "16"]),
    ("2x8 GPUs or 2×8", ["2", "8", "2", "8"]),
    ("10,000 GPUs", ["10000"]),
    ("８张卡", ["8"]),  # full-width digits
    ("8xA100", ["8"]),
    ("unclosed fence: 12 GiB\n```\ncode 99", ["12"]),
    ("-8 GPUs", ["8"]),
])
def test_figures_are_found(text, expected):
    assert _printed(text) == expected


def test_citation_markers_ignore_code_and_links():
    text = "a [1] b [2, 3]\n```\nx[4]\n```\n[text](http://x) [5](http://y)"
    assert citation_markers(text) == [1, 2, 3]


# --- figures bound to keys, calc citations recomputed, spelled-out figures (issue 15) -------------

@pytest.fixture(scope="module")
def real_answer():
    from bot import ask

    question = "Llama-2-7B full fine-tune on 8x A100 40GB. DDP or FSDP?"
    return Case(id="real", turns=[question], expect={}), ask(question)


def _metric(case, answer, name):
    return next(m for m in run_metrics(case, answer) if m.name == name)


def test_a_real_answer_binds_every_figure_and_passes(real_answer):
    case, answer = real_answer
    assert answer.figures and all(f.key for f in answer.figures)
    assert sum(f.key != "unbound" for f in answer.figures) >= 0.9 * len(answer.figures)
    assert _metric(case, answer, "number_traceability").passed is True
    assert _metric(case, answer, "calc_citations").passed is True


def test_swapping_ddp_and_fsdp_totals_fails(real_answer):
    case, answer = real_answer
    from bot.render import fmt

    ddp = fmt(answer.numbers["memory.ddp.total_gib"])
    fs = fmt(answer.numbers["memory.fsdp_full_shard.total_gib"])
    assert ddp in answer.text and fs in answer.text
    swapped = answer.text.replace(ddp, "\0").replace(fs, ddp).replace("\0", fs)
    # the old value-only check would pass: both figures are among the answer's numbers
    result = _metric(case, answer.model_copy(update={"text": swapped}), "number_traceability")
    assert result.passed is False and "memory.ddp.total_gib" in result.detail


def test_a_figure_bound_to_the_wrong_key_fails(real_answer):
    from bot.answer import FigureRef

    case, answer = real_answer
    i = next(i for i, f in enumerate(answer.figures) if f.key == "memory.ddp.total_gib")
    figures = list(answer.figures)
    figures[i] = FigureRef(printed=figures[i].printed, key="memory.fsdp_full_shard.total_gib")
    result = _metric(case, answer.model_copy(update={"figures": figures}), "number_traceability")
    assert result.passed is False and "memory.fsdp_full_shard.total_gib" in result.detail


def test_an_invented_figure_in_a_calc_quote_fails(real_answer):
    case, answer = real_answer
    citations = [c.model_copy(update={"quote": c.quote + ", DDP 61.3 GiB"}) if c.kind == "calc" else c
                 for c in answer.citations]
    forged = answer.model_copy(update={"citations": citations, "text": answer.text + "\n\nDDP needs 61.3 GiB [1]."})
    assert _metric(case, forged, "calc_citations").passed is False
    # and a calculator number changed in ``numbers`` is caught by the recomputation
    numbers = dict(answer.numbers, **{"memory.ddp.total_gib": 61.3})
    assert _metric(case, answer.model_copy(update={"numbers": numbers}), "calc_citations").passed is False


def test_spelled_out_figures_count(real_answer):
    case, answer = real_answer
    text = answer.text + "\n\nIt needs forty-two GiB on each card."
    result = _metric(case, answer.model_copy(update={"text": text, "figures": []}), "number_traceability")
    assert result.passed is False and "spelled-out" in result.detail
