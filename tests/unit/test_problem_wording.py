"""Every problem is worded by the message catalogs (``bot.core.setup.Problem``: a code of
``PROBLEM_SLOTS`` and its figures; ``problem.<code>`` in bot/answer/messages/{en,zh}.yaml): its
English ``message`` (errors, logs, the CLI) is the catalog's English sentence, and an answer says it
in the answer's language (``bot.render.problem_text``) -- a Chinese answer never carries the English
sentence. Covered: every code has both sentences with exactly its slots; every ``Problem.of`` in
bot/ names a code with its slots; the setup's checks (bad numbers, contradictions, run options,
unknown names, what resolve_setup cannot do without) in both languages; a figure the question
gives twice that no reading settles (bot.understand.contradictions.roles_and_contradictions)."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest

from bot.answer.catalog import LANGUAGES, catalog, slots
from bot.catalog import UnknownNameError, lookup_gpu, lookup_model
from bot.core.setup import PROBLEM_SLOTS, Problem, SetupError, TrainingSetup, check_setup, resolve_setup
from bot.render import problem_text
from bot.understand import Contradiction
from bot.understand.contradictions import roles_and_contradictions
from bot.understand.prose_reading import ProseReading
from bot.understand.reader import Reading

_LATIN_WORDS = re.compile(r"[A-Za-z]{4,}")


def _latin_words(text: str, allowed: set[str]) -> set[str]:
    """Words of four or more Latin letters in ``text`` that are not names it must print."""
    return {w for w in _LATIN_WORDS.findall(text) if w not in allowed}


@pytest.mark.parametrize("card", ["V100 32GB SXM2", "T4 16GB", "RTX 2080 Ti 11GB"])
@pytest.mark.parametrize("precision", ["bf16-mixed", "bf16"])
def test_a_card_without_bf16_is_one_worded_problem_in_both_languages(card, precision):
    gpu = lookup_gpu(card)
    problems = [p for p in check_setup(TrainingSetup(model="llama2-7b", gpu=card, gpu_count=8, precision=precision))
                if p.field == "precision"]
    assert len(problems) == 1
    p = problems[0]
    assert p.code == "no_bf16"
    # the English sentence the CLI and the logs print, unchanged by the move to the catalog
    assert p.message == f"{gpu.name} has no bf16 support; use fp16-mixed or fp32"
    en, zh = problem_text(p, "en"), problem_text(p, "zh")
    assert en.endswith(f"{gpu.name} has no bf16 support; use fp16-mixed or fp32")
    assert gpu.name in zh and "bf16" in zh and "support" not in zh
    assert not _latin_words(zh, set(_LATIN_WORDS.findall(gpu.name)))


def test_a_card_with_bf16_has_no_precision_problem():
    assert not [p for p in check_setup(TrainingSetup(model="llama2-7b", gpu="A100 80GB SXM", gpu_count=8,
                                                     precision="bf16-mixed")) if p.field == "precision"]


def _unsettled(field: str, values: tuple, spans: tuple) -> Reading:
    """A reading whose prose found ``field`` twice and settled on neither (no field read)."""
    out = Reading(text=" ".join(map(str, spans)))
    prose = ProseReading()
    prose.contradictions = [(field, values, spans)]

    class _Cfg:
        observed: dict = {}

    roles_and_contradictions(out, prose, [], _Cfg(), [], out.text)
    return out


@pytest.mark.parametrize("field, values, spans, en_shown, zh_shown", [
    ("params_b", (7.0, 70.0), ("7B", "70B"), "7 and 70", "7 和 70"),
    ("finetune", ("lora", "full"), ("LoRA", "全参"), "lora and full", "lora 和 full"),
    ("seq_len", (2048, 4096), ("2048", "4096"), "2048 and 4096", "2048 和 4096"),
])
def test_a_figure_given_twice_and_unsettled_is_asked_in_the_answers_language(field, values, spans, en_shown, zh_shown):
    out = _unsettled(field, values, spans)
    assert [c.field for c in out.contradictions] == [field]
    (p,) = out.problems
    assert isinstance(p, Problem) and p.code == "said_both" and p.field == field
    assert p.message == f"the question says both {en_shown}; which one is it?"
    en, zh = problem_text(p, "en"), problem_text(p, "zh")
    assert en.endswith(f"the question says both {en_shown}; which one is it?")
    assert zh_shown in zh and "question" not in zh and "which" not in zh


def test_a_settled_contradiction_is_a_note_not_a_problem():
    out = Reading(text="7B 70B", fields={"params_b": 7.0})
    prose = ProseReading()
    prose.contradictions = [("params_b", (7.0, 70.0), ("7B", "70B"))]

    class _Cfg:
        observed: dict = {}

    roles_and_contradictions(out, prose, [], _Cfg(), [], out.text)
    assert not out.problems
    assert [n.code for n in out.notes] == ["contradiction_computed"]
    assert out.contradictions == [Contradiction("params_b", (7.0, 70.0), ("7B", "70B"))]



# --------------------------------------------------------------------------------------------
# Every code: both sentences, exactly its slots, nothing left unfilled
# --------------------------------------------------------------------------------------------

BOT = Path(__file__).resolve().parents[2] / "bot"
# one sample figure or name per slot: a new slot needs a sample here, so its sentences are rendered
SAMPLES = {
    "value": -8.0, "low": 1.0, "high": 4096.0, "name": "llama-9000", "suggestions": ("Llama-2-70B", "LLaMA-33B"),
    "family": "Qwen2.5", "sizes": ("7B", "14B"), "model": "Llama-2-7B", "stated": 70.0, "catalog": 6.74,
    "gpu": "V100 32GB SXM2", "count": 16, "nodes": 2, "per_node": 4, "product": 8, "policy": "full",
    "every": 2, "impl": "fused", "version": "two", "option": "lora_targets", "base": "bf16", "group": 3,
    "gpus": 8, "detail": "Input should be a valid integer", "shown": ("7", "70"), "digits": 50,
    "text": "token-ring", "source": "cfg.json",
}
_SLOT = re.compile(r"\{\{|\}\}|\{%|%\}")


def _slots(lang: str, code: str) -> set[str]:
    return slots(lang, f"problem.{code}") - {"words"}


@pytest.mark.parametrize("code", sorted(PROBLEM_SLOTS))
def test_every_problem_code_has_both_sentences_with_exactly_its_slots(code):
    for lang in LANGUAGES:
        assert f"problem.{code}" in catalog(lang), f"{lang}.yaml lacks problem.{code}"
        assert _slots(lang, code) == set(PROBLEM_SLOTS[code]), (lang, code)
        p = Problem.of("seq_len", code, **{k: SAMPLES[k] for k in PROBLEM_SLOTS[code]})
        text = p.worded(lang)
        assert text.strip() and not _SLOT.search(text) and "None" not in text, (lang, code, text)
        for slot in PROBLEM_SLOTS[code]:  # every figure it carries is said (a list by its items)
            sample = SAMPLES[slot]
            shown = sample if isinstance(sample, tuple) else (sample,)
            if slot in ("value", "low", "high"):
                continue  # said in words ("minus 8")
            if slot in ("family", "sizes") and not p.value("family"):
                continue
            assert all(str(x).removesuffix(".0") in text for x in shown), (lang, code, slot, text)


def test_the_catalogs_have_no_problem_without_a_code():
    for lang in LANGUAGES:
        worded = {k.removeprefix("problem.") for k in catalog(lang) if k.startswith("problem.")}
        assert worded == set(PROBLEM_SLOTS), sorted(worded ^ set(PROBLEM_SLOTS))


def test_a_code_its_slots_do_not_match_is_refused_where_the_problem_is_built():
    with pytest.raises(ValueError, match="no problem code"):
        Problem.of("seq_len", "no_such_code")
    with pytest.raises(ValueError, match="carries"):
        Problem.of("precision", "no_bf16")  # the card is missing
    with pytest.raises(ValueError, match="carries"):
        Problem.of("precision", "no_bf16", gpu="T4", card="T4")


def _problem_calls() -> list[tuple[Path, ast.Call]]:
    calls = []
    for path in BOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Attribute) and f.attr == "of" and getattr(f.value, "id", "") == "Problem" or \
                        isinstance(f, ast.Name) and f.id == "Problem":
                    calls.append((path, node))
    return calls


def test_every_problem_in_bot_is_built_from_a_code_with_its_slots():
    calls = _problem_calls()
    assert len(calls) > 40  # the scan finds them (it would pass vacuously otherwise)
    for path, call in calls:
        where = f"{path.relative_to(BOT)}:{call.lineno}"
        assert isinstance(call.func, ast.Attribute), f"{where}: Problem(...) with a sentence; use Problem.of"
        code = call.args[1]
        assert isinstance(code, ast.Constant) and code.value in PROBLEM_SLOTS, where
        assert {k.arg for k in call.keywords} == set(PROBLEM_SLOTS[code.value]), where


def test_setup_py_keeps_no_sentence():
    """bot/core/setup.py says its problems through codes: no string of four or more words is passed
    to a Problem or a SetupError there."""
    tree = ast.parse((BOT / "core" / "setup.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("of", "SetupError"):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    assert len(sub.value.split()) < 4, f"setup.py:{node.lineno}: {sub.value!r}"
                if isinstance(sub, ast.JoinedStr):
                    raise AssertionError(f"setup.py:{node.lineno}: an f-string sentence")


# --------------------------------------------------------------------------------------------
# The setup's checks, in both languages
# --------------------------------------------------------------------------------------------

_BAD_SETUPS = [  # (setup, field, code, the English sentence the CLI prints)
    (dict(seq_len=-8), "seq_len", "not_positive", "must be positive, got minus 8"),
    (dict(params_b=math.inf), "params_b", "not_finite", "must be a finite number, got infinity"),
    (dict(gpu_count=10**9), "gpu_count", "out_of_range", "1,000,000,000 is outside the plausible range 1..100,000"),
    (dict(model="llama2-7b", params_b=70), "params_b", "params_contradict", "70B contradicts Llama-2-7B (6.74B)"),
    (dict(gpu="A100 80GB SXM", gpu_memory_gb=40), "gpu_memory_gb", "memory_contradict",
     "40 GB contradicts A100 80GB SXM (80 GB)"),
    (dict(nodes=2, gpus_per_node=4, gpu_count=16), "gpu_count", "count_contradict",
     "16 GPUs contradicts 2 nodes x 4 GPUs per node = 8"),
    (dict(nodes=3, inter_node_link="none"), "inter_node_link", "no_inter_link",
     "3 nodes need a link between them; say infiniband or ethernet (with its speed in Gb/s)"),
    (dict(checkpoint_every=2, checkpointing_policy="full"), "checkpoint_every", "every_not_every_k",
     "checkpoint_every=2 only applies to the 'every_k' policy, not 'full'"),
    (dict(finetune="qlora", base_dtype="bf16"), "base_dtype", "qlora_base",
     "QLoRA stores the frozen base in 4 bit (nf4), not bf16"),
    (dict(reshard_after_forward=3, gpu_count=8), "reshard_after_forward", "reshard_not_divisor",
     "3 must divide the 8 GPUs and be smaller than their number"),
    (dict(float8=True, gpu="A100 80GB SXM"), "float8", "float8_gpu",
     "A100 80GB SXM has no float8 tensor cores (needs Ada, Hopper or later: H100, H200, L40S, RTX 4090, B200, MI300X)"),
]
# names and option values a Chinese line must print as they are (field names by their words:
# checkpoint_every, base_dtype, reshard_after_forward, float8)
_NAMES = {"Llama", "full", "checkpoint", "every", "QLoRA", "InfiniBand", "base", "dtype", "reshard", "after",
          "forward", "float"}


@pytest.mark.parametrize("setup, field, code, english", _BAD_SETUPS, ids=[c for _, _, c, _ in _BAD_SETUPS])
def test_a_setup_problem_is_said_in_the_answers_language(setup, field, code, english):
    (p,) = [p for p in check_setup(TrainingSetup(**setup)) if p.field == field]
    assert p.code == code
    assert p.message == english  # the CLI's and the logs' sentence, unchanged by the move to the catalog
    en, zh = problem_text(p, "en"), problem_text(p, "zh")
    assert not re.search(r"[\u4e00-\u9fff]", en)
    assert re.search(r"[\u4e00-\u9fff]", zh) and not _latin_words(zh, _NAMES), zh
    # a figure the user did not write (a catalog size, a product) is not in the answer's line
    for line in (en, zh):
        assert "6.74" not in line and "= 8" not in line and "H100" not in line


@pytest.mark.parametrize("setup, code, english", [
    (dict(gpu="A100 80GB SXM", gpu_count=8), "size_unknown", "model size unknown: name a model or a parameter count"),
    (dict(model="llama2-7b", gpu="A100 80GB SXM"), "count_unknown", "number of GPUs unknown"),
    (dict(model="llama2-7b", gpu="A100 80GB SXM", gpu_count=12, gpus_per_node=8), "uneven_per_node",
     "12 GPUs do not split evenly over nodes of 8 GPUs"),
    (dict(model="llama2-7b", gpu="A100 80GB SXM", gpu_count=9, nodes=2), "uneven_nodes",
     "9 GPUs do not split evenly over 2 nodes"),
])
def test_what_a_computation_cannot_do_without_is_worded(setup, code, english):
    with pytest.raises(SetupError) as err:
        resolve_setup(TrainingSetup(**setup))
    (p,) = err.value.problems
    assert p.code == code and p.message == english
    assert re.search(r"[\u4e00-\u9fff]", problem_text(p, "zh"))


@pytest.mark.parametrize("kind, name", [("model", "llama-9000"), ("model", "qwen2.5"), ("GPU", "Z9000"),
                                        ("GPU", "H1OO")])
def test_an_unknown_name_says_what_the_catalog_said(kind, name):
    lookup = lookup_model if kind == "model" else lookup_gpu
    with pytest.raises(UnknownNameError) as err:
        lookup(name)
    field = "model" if kind == "model" else "gpu"
    (p,) = [p for p in check_setup(TrainingSetup(**{field: name})) if p.field == field]
    assert p.message == str(err.value)  # the suggestions and the family's sizes, as the catalog words them
    zh = problem_text(p, "zh")
    assert name in zh and all(s in zh for s in err.value.suggestions) and "Did you mean" not in zh


@pytest.mark.parametrize("value, en_words, zh_words", [(-8, "minus 8", "负 8"), (math.inf, "infinity", "无穷大"),
                                                       (-0.5, "minus 0.5", "负 0.5")])
def test_a_number_no_computation_can_use_is_said_in_words(value, en_words, zh_words):
    (p,) = [p for p in check_setup(TrainingSetup(cpu_ram_gb=value)) if p.field == "cpu_ram_gb"]
    assert problem_text(p, "en").endswith(f"must be positive; the question gives {en_words}.")
    zh = problem_text(p, "zh")
    assert zh.endswith(f"必须是正数（问题里是{zh_words}）。"), zh
