"""A claim about another thread's setup opens an answer only where it speaks to the asker
(bot.knowledge.case_claims, applied by bot.knowledge.answering.select_passages; first-contact batch
j class 5: "70B LoRA on 8 A100s could not even load" opened an answer about a Windows NCCL error).
The claims are the corpus's own sentences; the questions are this file's, three per language for
each side. BM25 weights only: no embedding model or index is built."""

from __future__ import annotations

import pytest

from bot.knowledge import answering
from bot.knowledge.answering import Passage, _units, select_passages
from bot.knowledge.case_claims import asker_facts, case_setup, may_lead, same_size_class
from bot.knowledge.corpus import corpus_text


@pytest.fixture(autouse=True)
def _bm25_only(monkeypatch):
    monkeypatch.setattr(answering, "_searcher", answering._keyword)


def _sentence(entry_id: str, *words: str) -> str:
    """The corpus sentence of ``entry_id`` holding every one of ``words`` (verbatim, as a quote is)."""
    found = [u for u, _ in _units(corpus_text(entry_id)) if all(w in u for w in words)]
    assert found, (entry_id, words)
    return found[0]


def _p(entry_id: str, quote: str, relevance: float, kind: str = "doc") -> Passage:
    lang = "zh" if entry_id.endswith("-zh") or kind == "forum" else "en"
    return Passage(id=entry_id, kind=kind, title=entry_id, url="https://example.org", quote=quote,
                   score=0.1, lang=lang, relevance=relevance)


LOADING = {"en": "doc-model-loading-host-ram", "zh": "doc-model-loading-host-ram-zh"}
CLAIM = {"en": _p(LOADING["en"], _sentence(LOADING["en"], "LlamaFactory", "70B", "A100"), 0.6),
         "zh": _p(LOADING["zh"], _sentence(LOADING["zh"], "LlamaFactory", "70B", "A100"), 0.6)}
# a general sentence of another doc, which may open any answer it is relevant to
GENERAL = {"en": _p("doc-zero-stages", "Stages 1 and 2 move the same volume as plain data parallelism.", 0.3),
           "zh": _p("doc-zero-stages-zh", "ZeRO-1和ZeRO-2的通信量与普通数据并行相同。", 0.3)}


def test_the_corpus_case_sentences_are_claims_and_general_ones_are_not():
    for lang in ("en", "zh"):
        case = case_setup(CLAIM[lang].id, "doc", CLAIM[lang].quote)
        assert case is not None and 70.0 in case.sizes and 8 in case.gpu_counts and "lora" in case.strategies
    nics = _sentence("doc-multi-node-nccl", "NCCL issue 412")  # a fact sourced to a thread, no setup of its own
    assert case_setup("doc-multi-node-nccl", "doc", nics) is None
    assert case_setup("doc-zero-stages", "doc", GENERAL["en"].quote) is None


UNRELATED = [
    ("en", "torchrun on my Windows desktop stops with a RuntimeError saying NCCL is not available, how do I train on both GPUs?"),
    ("en", "The job prints nothing for ten minutes after launch and no step runs; the wandb menu is the last output."),
    ("en", "Rank 1 reports an inf loss and the other GPUs hang until the watchdog fires."),
    ("zh", "在 Windows 上用两张卡训练，一启动就报错说没有 NCCL，怎么办？"),
    ("zh", "启动训练后停在 wandb 那里十分钟不动，也没有报错"),
    ("zh", "某个 rank 的 loss 出现 inf 以后其他卡一直等到超时"),
]


@pytest.mark.parametrize("lang,question", UNRELATED)
def test_a_claim_about_another_setup_never_opens_the_answer(lang, question):
    asker = asker_facts(question)
    out = select_passages([CLAIM[lang], GENERAL[lang]], question=question, language=lang, asker=asker)
    assert out, "the general passage still answers"
    assert out[0].quote != CLAIM[lang].quote
    first = case_setup(out[0].id, out[0].kind, out[0].quote)
    assert first is None or may_lead(first, asker)


@pytest.mark.parametrize("lang,question", UNRELATED)
def test_alone_it_is_left_out_rather_than_put_first(lang, question):
    out = select_passages([CLAIM[lang]], question=question, language=lang, asker=asker_facts(question))
    assert all(p.quote != CLAIM[lang].quote for p in out[:1])


FORUM_POST = _p("forum-12", "有些云厂商的分布式环境对FSDP的优化程度不同，比如NCCL版本、网络拓扑都会影响实际表现，最好先在小规模上跑个benchmark对比一下。",
                0.8, kind="forum")


@pytest.mark.parametrize("question", [
    "在 Windows 上用两张卡训练，一启动就报错说没有 NCCL，怎么办？",
    "启动训练后停在 wandb 那里十分钟不动，也没有报错",
    "用 ZeRO-3 训练，启动日志里打印的 stage 却是 2",
])
def test_it_may_still_follow_a_passage_that_opens(question):
    """A forum post (always a claim about its thread's setup) waits for the general passage and
    follows it (forum posts are Chinese: in an English answer one never comes first anyway)."""
    out = select_passages([FORUM_POST, GENERAL["zh"]], question=question, language="zh", asker=asker_facts(question))
    assert [p.id for p in out] == [GENERAL["zh"].id, FORUM_POST.id]


@pytest.mark.parametrize("lang,question", UNRELATED)
def test_its_doc_may_open_with_a_sentence_that_reports_no_case(lang, question):
    out = select_passages([CLAIM[lang]], question=question, language=lang, asker=asker_facts(question), threshold=0.0)
    assert [p.id for p in out] == [CLAIM[lang].id]
    assert out[0].quote != CLAIM[lang].quote and case_setup(out[0].id, "doc", out[0].quote) is None
    assert out[0].quote in corpus_text(CLAIM[lang].id)


MATCHING = [  # the same size class, a mode both name, the same kind of failure
    ("en", "Llama-2-70B with LoRA on 8 GPUs: every process loads the whole model and the machine runs out of RAM"),
    ("en", "A LoRA run on four cards dies while the checkpoint shards load, before training starts"),
    ("en", "Loading a 65B model under torchrun gets the processes killed by the kernel OOM killer"),
    ("zh", "8张卡做70B的LoRA，模型加载阶段内存就不够了"),
    ("zh", "四张卡跑LoRA，加载权重的时候进程就被杀了"),
    ("zh", "用torchrun加载65B模型时进程被系统kill了"),
]


@pytest.mark.parametrize("lang,question", MATCHING)
def test_a_claim_about_the_askers_setup_may_open_it(lang, question):
    sizes = {"70B": 70.0, "65B": 65.0}
    size = next((v for k, v in sizes.items() if k in question), None)
    asker = asker_facts(question, params_b=size)
    assert may_lead(case_setup(CLAIM[lang].id, "doc", CLAIM[lang].quote), asker)
    out = select_passages([CLAIM[lang], GENERAL[lang]], question=question, language=lang, asker=asker)
    assert out[0].quote == CLAIM[lang].quote


def test_a_topic_the_reader_found_lets_a_claim_lead():
    quote = _sentence("doc-global-batch-multi-gpu-zh", "Qwen issue 669")
    claim = _p("doc-global-batch-multi-gpu-zh", quote, 0.6)
    question = "两张卡的时候学习率和批大小要怎么改？"
    assert not may_lead(case_setup(claim.id, "doc", quote), asker_facts(question))
    assert may_lead(case_setup(claim.id, "doc", quote), asker_facts(question, topics=("grad_accumulation",)))


def test_without_an_asker_nothing_changes():
    out = select_passages([CLAIM["en"], GENERAL["en"]], question="", language="en")
    assert [p.id for p in out] == [CLAIM["en"].id, GENERAL["en"].id]


def test_a_forum_post_speaks_for_the_threads_setup():
    post = FORUM_POST
    case = case_setup(post.id, post.kind, post.quote)
    assert case is not None and {"ddp", "fsdp"} <= case.strategies and 7.0 in case.sizes
    assert not may_lead(case, asker_facts("Windows 下多卡训练报错说没有 NCCL"))
    assert may_lead(case, asker_facts("7B 模型用 DDP 还是 FSDP？", params_b=7.0))


@pytest.mark.parametrize("a,b,same", [(7, 8, True), (70, 72, True), (7, 13, False), (40, 70, False)])
def test_size_classes(a, b, same):
    assert same_size_class(a, b) is same
