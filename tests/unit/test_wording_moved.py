"""Wording is data (issue 28): the sentences that were literals in code branches are catalog keys,
and the catalogs are kept clean.

- The catalogs' hygiene: every key code names exists in both languages; every key in the catalogs
  is named by code (literally or through a family code builds the name of, each listed with why);
  zh and en read the same slots per key (the exceptions listed with why).
- The moved wording, each said in both languages from the catalog: a problem's line
  (``problem_line.*``, bot.render.problem_text), the multi-model notice (``multi_model.*``), a
  forum claim's condition (``forum.claim_*``, bot.knowledge.conditions), the reader's notes
  (``read_note.*``, bot.understand.notes); no Chinese sentence is left in those functions.
- A precision switch written in prose ("bf16: DDP", "fp16: FSDP or DDP?") is not consumed as a
  config switch that is neither on nor off: the precision and the strategies it names are read.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bot.answer.catalog import LANGUAGES, catalog, slots
from bot.core.setup import PROBLEM_SLOTS, TrainingSetup, check_setup
from bot.knowledge import conditions
from bot.parse import parse_conversation
from bot.render import multi_model_text, problem_text
from bot.understand import Contradiction, ReadNote
from bot.understand.config import read_config
from bot.understand.notes import contradiction_question, note_text

BOT = Path(__file__).resolve().parents[2] / "bot"
_CJK = re.compile(r"[\u4e00-\u9fff]")

# --------------------------------------------------------------------------------------------
# Catalog hygiene
# --------------------------------------------------------------------------------------------

# Families whose keys code builds from a value (f"problem.{code}", f"render.question.{field}"): a key
# in one is used when the family's head is in code. Why each is looked up by a computed name:
FAMILIES = {
    "problem.": "a Problem's code (bot.core.setup.PROBLEM_SLOTS; test_problem_wording checks each)",
    "problem_line.": "the line kind of a problem (bot.render.problem_text)",
    "multi_model.role.": "the roles a multi-model job has",
    "forum.claim_": "the kinds of a claim's condition (bot.knowledge.conditions)",
    "read_note.": "a reader's note by its code, a contradiction and its question by field",
    "slack.": "the Slack labels, read as one section (bot/surfaces/slack_blocks.py)",
    "direct.asked_parallel_": "the verdict on an asked TP/CP/PP axis",
    "direct.cause.": "a troubleshooting cause's kind",
    "render.question.": "the question asking for a setup field",
    "render.field.": "a setup field's name",
    "render.setup_field.": "a setup field's name in the setup line",
    "render.run_option.": "a run option's value",
    "render.value.": "a setup value's label",
    "render.value_one.": "a setup value's label when it is 1",
    "render.read.source.": "where a read value came from",
    "render.notice.": "a notice by its name",
    "page.simulation.": "the page's simulation table (bot/surfaces/web/simulation.py)",
    "page.precision.": "the page's precision table (bot/surfaces/web/precision.py)",
    "page.field.": "a setup field's name in the page's setup line and chips (bot/surfaces/web/answer_view.py)",
    "page.panel.field.": "a panel field's label (bot/surfaces/web/panel.py field_label)",
    "page.panel.origin.": "where the panel read values from (a pasted log, a config)",
    "page.verdict.": "a forum claim's verdict on the page",
    "page.kind.": "a citation's kind on the page",
    "page.collapsed.": "the headings of the page's markdown fallback that fold, read in both languages",
    "page.answer.table.": "the page's table header, read as one group",
    "page.chart.part.": "the chart's breakdown parts (its legend), in COMPONENTS order",
    "page.chart.short.": "a bar's name for answers without a table",
    "strategy.label.": "a strategy's name (bot.strategies.label)",
    "strategy.short.": "a strategy's short name (bot.strategies.short_label)",
    "strategy.optimizer.": "an optimizer's name (bot.strategies.optimizer_label)",
    "strategy.finetune.": "a fine-tuning mode's name (bot.strategies.finetune_label)",
    "words.": "the composer's words by kind (verdicts, variants, axes, confidence ...)",
    "what_if.knob.": "a what-if's knob",
}
# Keys a language reads a slot of that the other does not need, and why
SLOT_EXCEPTIONS = {
    "oom.dominated": "English number agreement (single: needs / need)",
    "source.stored": "the Chinese label does not name the stored result's kind",
}


def _code_strings() -> tuple[set[str], set[str]]:
    """Every string literal in bot/ and the constant heads of its f-strings."""
    literals, heads = set(), set()
    for path in BOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literals.add(node.value)
            elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                heads.add(str(node.values[0].value))
    return literals, heads


def _used(key: str, literals: set[str], families: list[str], named: frozenset[str] = frozenset()) -> bool:
    # the renderer's labels are named without their "render." (bot.render._w, _label, _has); the
    # surfaces' helpers name theirs without their group (HELPERS)
    return (key in literals or key in named or key.removeprefix("render.") in literals
            or any(key.startswith(f) for f in families))


def test_every_family_is_still_looked_up():
    literals, heads = _code_strings()
    for family in FAMILIES:
        short = family.removeprefix("render.")
        assert any(h.startswith((family, short)) or family.startswith(h) and h.endswith((".", "_")) for h in heads) \
            or family in literals, f"no code builds a {family}* key: drop it from FAMILIES"


def test_no_key_in_the_catalogs_is_unused():
    literals, _ = _code_strings()
    named = frozenset(_named_keys())
    unused = sorted(k for k in catalog("en") if not _used(k, literals, list(FAMILIES), named))
    assert not unused, f"keys no code names: {unused}"


# The surfaces' helpers that name a catalog key without its group: (file, function) -> (the key's
# argument, the group it is in).
HELPERS = {
    ("answer_view.py", "_say"): (1, "page.answer."),
    ("chart.py", "_say"): (1, "page.chart."),
    ("panel.py", "panel_words"): (0, "page.panel."),
    ("webui.py", "panel_words"): (0, "page.panel."),
    ("webui.py", "ui"): (0, "page.ui."),
    ("webui.py", "both_languages"): (0, ""),
    ("text.py", "both_languages"): (0, ""),
    ("downloads.py", "_why"): (0, "page.download."),
    ("simulation.py", "words"): (0, "page.simulation.note."),
    ("simulate_button.py", "words"): (0, "page.simulation.note."),
    ("simulation.py", "say"): (0, "page.simulation."),
    ("precision.py", "say"): (0, "page.precision."),
}


def _named_keys() -> set[str]:
    """The literal keys bot/ passes to the catalogs: say.msg/word/raw(key), render(lang, key, ...),
    wording(lang, key, ...), the renderer's labels _w/_label(lang, key) (``render.<key>``) and the
    surfaces' helpers (HELPERS)."""
    keys: set[str] = set()
    for path in BOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in ("msg", "word", "raw") and node.args:
                args, prefix = [node.args[0]], ""
            elif name in ("render", "wording") and len(node.args) > 1:
                args, prefix = [node.args[1]], ""
            elif name in ("_w", "_label") and len(node.args) > 1 and path.name == "render.py":
                args, prefix = [node.args[1]], "render."
            elif (path.name, name) in HELPERS and len(node.args) > HELPERS[path.name, name][0]:
                at, prefix = HELPERS[path.name, name]
                args = [node.args[at]]
            else:
                continue
            for a in args:
                options = [a.body, a.orelse] if isinstance(a, ast.IfExp) else [a]
                keys |= {prefix + x.value for x in options if isinstance(x, ast.Constant) and isinstance(x.value, str)}
    return keys


def test_every_key_code_names_is_in_both_catalogs():
    keys = _named_keys()
    assert len(keys) > 250  # the scan finds the keys (it would pass vacuously otherwise)
    for lang in LANGUAGES:
        missing = sorted(keys - set(catalog(lang)))
        assert not missing, f"{lang}.yaml lacks {missing}"


def test_every_family_has_its_keys_in_both_catalogs():
    for family in FAMILIES:
        en = {k for k in catalog("en") if k.startswith(family)}
        assert en, family
        assert en == {k for k in catalog("zh") if k.startswith(family)}, family


def test_zh_and_en_read_the_same_slots():
    differ = {k for k in catalog("en") if slots("en", k) != slots("zh", k)}
    assert differ == set(SLOT_EXCEPTIONS), sorted(differ ^ set(SLOT_EXCEPTIONS))


# --------------------------------------------------------------------------------------------
# The moved wording, in both languages
# --------------------------------------------------------------------------------------------

def _function_strings(path: Path, names: tuple[str, ...]) -> list[str]:
    """The string literals in the functions ``names`` of ``path``, their docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in names]
    docs = {id(f.body[0].value) for f in functions if isinstance(f.body[0], ast.Expr)}
    return [n.value for f in functions for n in ast.walk(f)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


@pytest.mark.parametrize("path, names", [
    (BOT / "render.py", ("problem_text", "_given_words", "multi_model_text")),
    (BOT / "knowledge" / "conditions.py", ("_one", "describe", "depends_text")),
    (BOT / "understand" / "notes.py", ("note_text", "contradiction_question")),
])
def test_the_moved_functions_keep_no_sentence(path, names):
    strings = _function_strings(path, names)
    assert strings  # the functions are found
    assert not [s for s in strings if _CJK.search(s) or len(s.split()) >= 4], path.name


@pytest.mark.parametrize("roles, critic, frozen", [
    (("actor", "critic", "reference", "reward"), True, 2),
    (("actor", "reference"), False, 1),  # DPO: a policy and a frozen reference, no critic
    (("actor", "critic"), True, 0),
])
def test_the_multi_model_notice_names_only_the_roles_the_job_has(roles, critic, frozen):
    en, zh = multi_model_text(roles, "en"), multi_model_text(roles, "zh")
    assert ("the critic is trained too" in en) == critic and ("critic 也要训练" in zh) == critic
    assert ("models hold" in en) == (frozen == 2) and ("model holds" in en) == (frozen == 1)
    assert ("模型是冻结的" in zh) == bool(frozen)
    assert zh.startswith("这是多模型的 RL 任务") and en.startswith("This is a multi-model RL job")
    assert "reward" in en and "reward" in zh if "reward" in roles else "reward" not in en


@pytest.mark.parametrize("setup, field, en, zh", [
    (dict(seq_len=0), "seq_len", "The sequence length must be positive; the question gives 0.", "必须是正数（问题里是0）。"),
    (dict(micro_batch=10**7), "micro_batch", "is outside any plausible range; please check it.", "超出了合理范围，请确认一下。"),
    (dict(nodes=5, gpu_count=3), "nodes", "5 nodes cannot hold only 3 GPUs", "5 台机器不可能只有 3 张卡"),
])
def test_a_problem_line_is_said_from_the_catalog(setup, field, en, zh):
    (p,) = [p for p in check_setup(TrainingSetup(**setup)) if p.field == field]
    assert problem_text(p, "en").endswith(en)
    assert problem_text(p, "zh").endswith(zh)


@pytest.mark.parametrize("condition, en, zh", [
    ({"finetune": ["full", "lora"]}, "full fine-tuning or LoRA", "全参微调或LoRA"),
    ({"multi_node": True, "min_gpu_memory_gb": 40}, "several nodes, and GPUs with at least 40 GB",
     "多机（跨节点），且单卡显存不少于 40 GB"),
    ({"any_of": [{"inter_node_link": "ethernet"}, {"max_gpu_count": 8}]},
     "either (nodes joined by Ethernet) or (at most 8 GPUs)", "节点间用 以太网，或不超过 8 张卡"),
])
def test_a_claims_condition_is_said_from_the_catalog(condition, en, zh):
    assert conditions.describe(condition, "en") == en
    assert conditions.describe(condition, "zh") == zh
    assert conditions.depends_text(condition, "en") == f"depends on: {en}"
    assert conditions.depends_text(condition, "zh") == f"取决于：{zh}"


@pytest.mark.parametrize("note, en, zh", [
    (ReadNote("size_from_name", {"params_b": 13.0, "name": "Foo-13B"}), "`Foo-13B`", "参数量 13B"),
    (ReadNote("count_implied", {"span": "two nodes of 8", "count": 16}), "16", "卡数按 `two nodes of 8` 读作 16。"),
    (ReadNote("contradiction_computed", {"field": "gpu_count", "a": "8 GPUs", "b": "4 GPUs", "value": 8}),
     "computed for 8; how many GPUs does the run use?", "下面按 8 计算；用几张卡？"),
])
def test_a_reading_note_is_said_from_the_catalog(note, en, zh):
    assert en in note_text(note, "en") and not _CJK.search(note_text(note, "en"))
    assert zh in note_text(note, "zh")


def test_a_note_without_wording_or_its_values_is_its_code():
    assert note_text(ReadNote("no_such_note", {}), "zh") == "no_such_note"
    assert note_text(ReadNote("size_from_name", {"name": "x"}), "en") == "size_from_name"  # no size to print


@pytest.mark.parametrize("field, zh_which", [("params_b", "模型是哪一个？"), ("seq_len", "是哪一个？")])
def test_a_contradiction_is_asked_from_the_catalog(field, zh_which):
    c = Contradiction(field, (7.0, 70.0), ("7B", "70B"))
    assert contradiction_question(c, "zh").endswith(zh_which)
    assert contradiction_question(c, "en").startswith("The question says both `7B` and `70B`")


# --------------------------------------------------------------------------------------------
# A precision switch written in prose is not a config switch
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("question, precision, compare", [
    ("Mistral-7B fine-tune on 8x H100 80GB, bf16: DDP or FSDP, which one?", "bf16-mixed", {"ddp", "fsdp_full_shard"}),
    ("Qwen2.5-14B on 4 A100 80GB. fp16: FSDP vs DDP for this?", "fp16-mixed", {"ddp", "fsdp_full_shard"}),
    ("Our run: 13B model, 16 H100s, precision: bf16, strategy: DDP or FSDP?", "bf16-mixed", {"ddp", "fsdp_full_shard"}),
    ("Mistral-7B 在 8 张 H100 80GB 上微调，bf16: DDP 还是 FSDP？", "bf16-mixed", {"ddp", "fsdp_full_shard"}),
    ("Qwen2.5-14B，4 张 A100 80G，fp16: FSDP 和 DDP 选哪个？", "fp16-mixed", {"ddp", "fsdp_full_shard"}),
    ("13B 模型，16 张 H100，precision: bf16, strategy: DDP 还是 FSDP？", "bf16-mixed", {"ddp", "fsdp_full_shard"}),
])
def test_a_precision_named_beside_a_strategy_is_read_with_it(question, precision, compare):
    parsed = parse_conversation(question)
    assert parsed.setup.precision == precision
    assert set(parsed.compare) == compare


@pytest.mark.parametrize("line", ["bf16: DDP", "fp16: FSDP", "pure_bf16: hsdp"])
def test_a_switch_followed_by_a_word_is_not_consumed(line):
    reading = read_config(f"7B on 8 GPUs, {line}. Which is better?")
    assert "precision" not in reading.fields and not reading.consumed


@pytest.mark.parametrize("config, precision", [
    ("bf16: true\nper_device_train_batch_size: 4", "bf16-mixed"), ("fp16: auto\ngradient_accumulation_steps: 2", "fp16-mixed"),
    ('"bf16": {"enabled": true}', "bf16-mixed"), ("bf16: false\nfp16: true", "fp16-mixed"), ("--bf16 --seq_len 4096", "bf16-mixed"),
])
def test_a_switch_set_to_a_boolean_is_still_read(config, precision):
    assert read_config(config).fields.get("precision") == precision


def test_problem_codes_are_worded_in_the_problem_family():
    assert {k.removeprefix("problem.") for k in catalog("zh") if k.startswith("problem.")} == set(PROBLEM_SLOTS)
