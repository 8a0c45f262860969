"""Wording is data on the surfaces too (issue 28): the page (bot/surfaces/web, bot/surfaces/webui.py),
Slack (bot/surfaces/slack_*.py), the strategies' names (bot/strategies.py) and the how-to's titles
(bot/howto.py) say what they say from the message catalogs (``page.*``, ``slack.*``, ``strategy.*``,
``howto.*``), in both languages.

- The scan: no string literal in those modules is a user-facing sentence (a Chinese character, or
  four words or more), outside docstrings, log calls, the operator's console (print, click's help
  and usage errors), browser scripts (``js=``), HTML markup, the code the how-to writes, and the
  strings listed below with why each stays.
- The moved groups are Chinese in zh.yaml (a value the same in both catalogs is a name: DDP, LoRA).
- A page answer, Slack's reply and the strategies' names follow the answer's language.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bot.answer import Answer
from bot.answer.catalog import catalog, wording, words_in
from bot.howto import SnippetSpec, snippets
from bot.strategies import ALL_STRATEGIES, TRAINING_STRATEGIES, finetune_label, label, short_label
from bot.surfaces import slack_app
from bot.surfaces.slack_blocks import answer_message
from bot.surfaces.web import answer_view, panel
from bot.surfaces.web.text import prepare_message

BOT = Path(__file__).resolve().parents[2] / "bot"
SURFACES = BOT / "surfaces"
_CJK = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]")
MOVED = ("page.", "slack.", "strategy.", "howto.")


def scanned() -> list[Path]:
    return sorted([*(SURFACES / "web").glob("*.py"), SURFACES / "webui.py", *SURFACES.glob("slack_*.py"),
                   BOT / "strategies.py", BOT / "howto.py"])


# Functions whose strings are the code they write (the snippet, its comments, the command line).
CODE_FUNCTIONS = {("howto.py", "python_snippet"), ("howto.py", "torchrun_command"),
                  ("howto.py", "accelerate_config"), ("howto.py", "deepspeed_config")}
# Module-level names whose strings are not wording, and why.
NOT_WORDING_NAMES = {
    ("style.py", "CSS"): "the page's style sheet",
    ("style.py", "PAGE_JS"): "the page's script",
    ("webui.py", "EXAMPLES"): "sample questions to click, as users ask them (input, in both languages at once)",
    ("pool.py", "WARM_UP_QUESTION"): "the question a worker answers at start (input, never shown)",
    ("howto.py", "_DEVICE_IMPORTS"): "the import lines the snippet writes for a non-CUDA device (code)",
}
# Modules at a protocol boundary: their English strings are diagnostics for the other end and the
# log (a malformed Slack envelope, an HTTP request that broke the limits), never read by a user on
# the page or in Slack; a Chinese string there would still be wording in the wrong place.
PROTOCOL_MODULES = {
    "slack_socket.py": "Socket Mode envelopes' checks (logged, acknowledged)",
    "slack_transport.py": "Slack's HTTP transport: request checks, SQL of the seen-event store",
    "guard.py": "request bounds: the bodies of 400/408/413 refusals to clients that broke them",
}
# Strings that stay, each with why.
ALLOWED = {
    ("slack_app.py", "413 Payload Too Large"): "an HTTP status line",
    ("simulation.py", "FakeTensorMode + FSDP2/DDP + MemTracker, strategy={}, setup: {}"):
        "the bench citation's record of how it measured (tool names, key=value)",
    ("pool.py", "the pool is closed"): "a RuntimeError for the page's code (a job after shutdown)",
    ("chart.py", "Noto Sans CJK SC"): "a font's name",
    ("chart.py", "Noto Sans CJK JP"): "a font's name",
    ("chart.py", "Source Han Sans SC"): "a font's name",
    ("chart.py", "Noto Sans CJK SC, DejaVu Sans, sans-serif"): "a font stack",
}
_LOGGERS = re.compile(r"^(log|logger|logging|\w+_log)$")


def _skipped_nodes(tree: ast.Module, module: str) -> set[int]:
    """ids of the nodes whose strings are not wording (see the module docstring)."""
    skip: set[int] = set()

    def drop(node: ast.AST) -> None:
        skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            drop(body[0])  # a docstring
        if isinstance(node, ast.FunctionDef) and (module, node.name) in CODE_FUNCTIONS:
            drop(node)
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and (module, t.id) in NOT_WORDING_NAMES for t in targets):
                drop(node)
        if isinstance(node, ast.Call):
            func = node.func
            owner = func.value if isinstance(func, ast.Attribute) else None
            if isinstance(owner, ast.Name) and _LOGGERS.match(owner.id):
                drop(node)  # a log line, for developers
            elif isinstance(func, ast.Name) and func.id == "print":
                drop(node)  # the operator's console
            elif isinstance(owner, ast.Name) and owner.id == "click" and func.attr == "UsageError":
                drop(node)  # the operator's command line
            elif isinstance(owner, ast.Name) and owner.id == "re":
                drop(node)  # a regular expression
            for kw in node.keywords:
                if kw.arg in ("help", "js"):  # click's --help text; a browser script
                    drop(kw)
    return skip


def _markup_removed(text: str) -> str:
    """The text outside HTML tags (a fragment's open or closing tag counts as a tag)."""
    text = re.sub(r"<[^<>]*>", " ", text)
    text = re.sub(r"<[^<>]*$", " ", text)
    return re.sub(r"^[^<>]*>", " ", text) if '="' in text else text


def user_facing_literals(path: Path) -> list[tuple[int, str]]:
    """(line, string) for each literal of ``path`` that reads as wording: a Chinese character, or
    four words or more (f-strings' constant parts included)."""
    module = path.name
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _skipped_nodes(tree, module)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):  # an f-string reads as one text, its placeholders {}
            skip.update(id(v) for v in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if (module, text) in ALLOWED:
            continue
        prose = _markup_removed(text.replace("{}", " "))
        words = [w for w in prose.split() if sum(c.isalpha() for c in w) >= 2]  # not "(", "[{}]", "x"
        if _CJK.search(prose) or (module not in PROTOCOL_MODULES and len(words) >= 4):
            found.append((node.lineno, text))
    return found


@pytest.mark.parametrize("path", scanned(), ids=lambda p: str(p.relative_to(BOT)))
def test_no_user_facing_sentence_is_left_inline(path):
    found = user_facing_literals(path)
    assert not found, f"{path.name}: move these to the catalogs (or say why they stay): {found}"


def test_the_scan_covers_the_surfaces():
    names = {p.name for p in scanned()}
    assert {"answer_view.py", "panel.py", "chart.py", "simulation.py", "webui.py", "slack_app.py", "slack_blocks.py",
            "strategies.py", "howto.py"} <= names
    # every exception names a module that exists, and a string or name still there (none goes stale)
    for module, name in NOT_WORDING_NAMES:
        assert module in names and any(f"{name} =" in p.read_text(encoding="utf-8") for p in scanned() if p.name == module)
    for module, text in ALLOWED:
        head = text.split("{}")[0]
        assert module in names and any(head in p.read_text(encoding="utf-8") for p in scanned() if p.name == module)


@pytest.mark.parametrize("source, caught", [
    ('x = "设置里有无效的值"', True),
    ('x = f"Your message was {n} characters long"', True),
    ('def f():\n    return "Sorry, answering failed on the server."', True),
    ('x = "<p>Simulated before: the stored result is shown</p>"', True),
    ('x = "page.panel.not_number"', False),
    ('log.warning("could not read thread %s in %s; answering without it", a, b)', False),
    ('x = \'<div class="sw-answer sw-error sw-a-\'', False),
    ('def f():\n    """A docstring of four words or more."""', False),
])
def test_the_scan_tells_wording_from_the_rest(tmp_path, source, caught):
    path = tmp_path / "answer_view.py"
    path.write_text(source, encoding="utf-8")
    assert bool(user_facing_literals(path)) == caught


# ---------------------------------------------------------------------------------------------
# The moved groups are Chinese in zh.yaml
# ---------------------------------------------------------------------------------------------

# Values the same in both catalogs: names (APIs, strategies, units), not English left untranslated.
NAMES = {"DDP", "HSDP", "GPU", "LoRA", "QLoRA", "AdamW", "MFU", "float8", "micro-batch", "torch.compile",
         "DDP gradient_as_bucket_view"}


def test_every_moved_message_is_chinese_in_zh():
    en, zh = catalog("en"), catalog("zh")
    copies = sorted(k for k in en if k.startswith(MOVED) and en[k] == zh[k] and zh[k] not in NAMES)
    assert not copies, f"zh.yaml repeats the English of {copies}"
    latin = sorted(k for k in en if k.startswith(MOVED) and en[k] != zh[k] and not _CJK.search(zh[k]))
    assert not latin, latin


# ---------------------------------------------------------------------------------------------
# What the surfaces say follows the answer's language
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", ALL_STRATEGIES)
def test_every_strategy_is_named_in_both_languages(strategy):
    for lang in ("en", "zh"):
        assert label(strategy, lang) == catalog(lang)[f"strategy.label.{strategy}"]
        assert short_label(strategy, lang)
    if strategy != "ddp":
        assert _CJK.search(label(strategy, "zh")) or label(strategy, "zh") == label(strategy, "en") in NAMES
        assert not _CJK.search(label(strategy, "en"))
    assert label("no_such_strategy", "zh") == "no_such_strategy"
    assert finetune_label(None, "zh") == "全参微调" and finetune_label("full", "en") == "full fine-tune"


def _answer(language: str) -> Answer:
    names = {s: label(s, language) for s in TRAINING_STRATEGIES}
    return Answer.model_validate({
        "language": language, "recommendation": {"strategy": "fsdp_full_shard", "confidence": "high"},
        "setup": {"model": "Llama-2-7B", "gpu_count": 8, "precision": "bf16-mixed", "finetune": "full"},
        "numbers": {"memory.ddp.total_gib": 90.0, "memory.fsdp_full_shard.total_gib": 30.0},
        "sections": {
            "headline": "FSDP", "questions": ["?"], "reasons": ["r1", "r2", "r3"], "what_ifs": ["w"],
            "setup_read": [{"field": "model", "value": "Llama-2-7B", "source": "stated"},
                           {"field": "precision", "value": "bf16-mixed", "source": "assumed"},
                           {"field": "optimizer_impl", "value": "foreach", "source": "assumed"}],
            "table": [{"strategy": "ddp", "label": names["ddp"], "total_gib": 90.0, "fits": False},
                      {"strategy": "fsdp_full_shard", "label": names["fsdp_full_shard"], "total_gib": 30.0,
                       "fits": True, "chosen": True}],
            "forum": [{"forum_id": "f1", "quote": "q", "verdict": "misleading"}],
        },
    })


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_page_answer_says_its_labels_in_its_language(language):
    html = answer_view.answer_html(_answer(language))
    said = [wording(language, f"page.answer.{k}") for k in ("assumed", "questions", "full", "forum", "setup")]
    said += [words_in(language, "page.answer.table.")[c] for c in ("strategy", "fits")]
    said += [wording(language, "page.answer.assumed_options", n=1), words_in(language, "page.verdict.")["misleading"],
             words_in(language, "page.field.")["precision"], label("fsdp_full_shard", language)]
    assert all(s in html for s in said), [s for s in said if s not in html]
    other = "zh" if language == "en" else "en"
    assert wording(other, "page.answer.assumed") not in html


@pytest.mark.parametrize("language, values, expected", [
    ("en", {"gpu_count": "eight"}, "GPUs in total: 'eight' is not a number"),
    ("zh", {"gpu_count": "八"}, "GPU 总数：'八' 不是数字"),
    ("zh", {"nodes": "1.5"}, "节点数：'1.5' 不是整数"),
])
def test_the_panel_names_an_unreadable_number_in_the_chat_language(language, values, expected):
    row = [values.get(f, "") for f in panel.PANEL_FIELDS]
    assert panel.read_panel(row, language)[1] == [expected]


def test_the_panel_note_is_said_in_the_answer_language():
    for language in ("en", "zh"):
        answer = _answer(language)
        note = panel.panel_note(answer, answer_view.field_sources(answer))
        assert note.startswith(wording(language, "page.panel.assumed", names="").split(" ")[0])
        assert bool(_CJK.search(note)) == (language == "zh")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_slack_says_its_labels_and_its_lines_in_the_answer_language(language):
    blocks = str(answer_message(_answer(language))["blocks"])
    assert catalog(language)["slack.questions"] in blocks and catalog(language)["slack.assumed"] in blocks
    question = "7B 用 DDP 吗？" if language == "zh" else "7B with DDP?"
    for line, key in ((slack_app._error_text(question), "slack.error"),
                      (slack_app._undelivered_text(question), "slack.undelivered"),
                      (slack_app._usage_text(language), "slack.usage")):
        assert line == catalog(language)[key]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_howto_titles_follow_the_language(language):
    titles = [h.title for h in snippets(SnippetSpec("fsdp_full_shard"), deepspeed=True, language=language)]
    assert titles[1:] == [catalog(language)[f"howto.{k}"] for k in ("launch", "deepspeed", "accelerate")]


def test_an_empty_or_cut_message_is_said_from_the_catalog():
    assert prepare_message("  ")[1] == f"{catalog('en')['page.empty']} / {catalog('zh')['page.empty']}"
    assert prepare_message("长" * 5000)[1] == "你的消息有 5,000 个字符，只读取了前 4,000 个。"
    assert prepare_message("a" * 6000)[1] == "Your message was 6,000 characters long; only the first 4,000 were read."
