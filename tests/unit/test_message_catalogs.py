"""The message catalogs (bot/answer/messages): same keys in both languages, every template
parses, every message the composer names exists, placeholders bind the figure they name, and a
missing figure fails instead of printing "?". Reason codes are typed: an unknown code or an
unexpected payload key is refused where the Reason is built."""

from __future__ import annotations

import ast
from pathlib import Path

import jinja2
import pytest

from bot.answer.catalog import LANGUAGES, MissingFigure, catalog, check_catalogs
from bot.compose.reasons import _WORDING
from bot.compose.say import Say, sentence
from bot.decide import PAYLOAD, Code, Reason
from bot.evidence import BASE, CKPT, Config

COMPOSE = Path(__file__).resolve().parents[2] / "bot" / "compose"


def _config(strategy: str = "ddp", variant: str = BASE, fits: bool = True) -> Config:
    return Config(strategy=strategy, variant=variant, total_gib=30.0, usable_gib=70.0, fits=fits,
                  max_micro_batch=4, vs_ddp=1.0, step_seconds=1.0, tokens_per_s_per_gpu=1000.0,
                  throughput_mb=4, comm_share=0.1)


def _numbers(c: Config) -> dict[str, float]:
    return {c.key("memory", "total_gib"): 30.0, c.key("memory", "usable_gib"): 70.0,
            c.key("memory", "max_micro_batch"): 4}


def test_catalogs_have_the_same_keys_and_parse():
    assert check_catalogs() == []
    assert set(catalog("en")) == set(catalog("zh"))


def _message_keys_in_code() -> set[str]:
    """Every literal key passed to say.msg/word/raw or render(lang, key, ...) in bot/compose."""
    keys: set[str] = set()
    for path in COMPOSE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            args = node.args[1:2] if name == "render" else node.args[:1] if name in ("msg", "word", "raw") else []
            for a in args:
                if isinstance(a, ast.Constant) and isinstance(a.value, str):
                    keys.add(a.value)
                elif isinstance(a, ast.IfExp):
                    keys |= {x.value for x in (a.body, a.orelse) if isinstance(x, ast.Constant)}
    return keys


def test_every_message_the_composer_names_exists():
    keys = _message_keys_in_code()
    assert len(keys) > 60  # the scan finds the composer's messages (it would pass vacuously otherwise)
    for lang in LANGUAGES:
        missing = sorted(keys - set(catalog(lang)))
        assert not missing, f"{lang}.yaml lacks {missing}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_placeholder_binds_the_figure_it_names(lang):
    c = _config("fsdp_full_shard", CKPT)
    say = Say(lang, _numbers(c), {"micro_batch": 2}, calc=1)
    text = say.msg("reason.ddp_fits", cfg=c)
    assert "30" in text and "70" in text and "[1]" in text
    assert say.figure_keys[text] == ["ckpt.memory.fsdp_full_shard.total_gib", "ckpt.memory.fsdp_full_shard.usable_gib",
                                     "ckpt.memory.fsdp_full_shard.max_micro_batch"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_missing_figure_fails_instead_of_printing_a_question_mark(lang, monkeypatch):
    c = _config()
    numbers = _numbers(c)
    del numbers[c.key("memory", "usable_gib")]
    say = Say(lang, numbers, {}, calc=None)
    with pytest.raises(MissingFigure, match="memory.ddp.usable_gib"):
        say.msg("reason.ddp_fits", cfg=c)
    with pytest.raises(MissingFigure, match="setup.micro_batch"):  # a setup field too
        say.msg("reason.accumulate", cfg=c)
    with pytest.raises(jinja2.UndefinedError):  # a configuration the caller did not pass
        say.msg("reason.comm_least")
    # outside the test suite's strict mode the sentence is dropped, never printed with "?"
    monkeypatch.setenv("SHARDWISE_STRICT_MESSAGES", "0")
    assert sentence(lambda: say.msg("reason.ddp_fits", cfg=c), "ddp_fits") == ""


def test_reason_codes_are_typed():
    assert Reason("ddp_fits", {"config": None}).code is Code.DDP_FITS
    with pytest.raises(ValueError):
        Reason("no_such_code")
    with pytest.raises(ValueError, match="unexpected values"):
        Reason("ddp_fits", {"config": None, "cfg_typo": 1})
    assert set(PAYLOAD) == set(Code)


def test_every_code_has_its_wording():
    assert set(Code) <= set(_WORDING), sorted(set(Code) - set(_WORDING))
