"""A playbook lead carries no example figures of some other model.

An entry's cause, check and fix sentences go into answers about the asker's model: a figure worked out
for a source's example ("a 40B model is about 78 GiB", "eight ranks of a 70B model need a terabyte")
reads as the asker's figure and is wrong for every other size (first-contact batch i: a 4B LoRA
question and a 34B loading question got the 40B and 70B examples). The rates (16 B/param, 2 B x
parameters) and the formulas stay; the asker's own figures come from the calculator beside the lead.
"""

from __future__ import annotations

import re

import pytest

from bot.knowledge.playbook import LANGS, load_playbook

# a model size written against its number ("70B", "340M", "1.5B"); byte rates are "16 B/param"
MODEL_SIZE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[BM](?![\w/])")
# an absolute amount of memory (GiB, TB, a terabyte); card sizes in GB ("an 80 GB card") may stay
MEMORY_AMOUNT = re.compile(r"\d[\d,.]*\s?(?:GiB|TB)\b(?!/s)|terabyte|太字节", re.I)


def _sentences():
    for entry in load_playbook():
        for name in ("cause", "check", "fix"):
            for lang in LANGS:
                yield pytest.param(entry.text(name, lang), id=f"{entry.id}-{name}-{lang}")


@pytest.mark.parametrize("sentence", _sentences())
def test_no_example_figures_in_a_lead(sentence):
    assert not MODEL_SIZE.search(sentence), sentence
    assert not MEMORY_AMOUNT.search(sentence), sentence


@pytest.mark.parametrize("bad", ["a 40B model is about 78 GiB", "8 个 rank 加载 70B 就要一 TB 以上",
                                 "a 340M model", "about a terabyte of RAM", "1.5B 模型"])
def test_the_checks_see_an_example_figure(bad):
    assert MODEL_SIZE.search(bad) or MEMORY_AMOUNT.search(bad)


@pytest.mark.parametrize("fine", ["16 B/param", "2 B x parameters", "12 字节/参数", "an 80 GB card",
                                  "NVLink carries hundreds of GB/s", "4 B per logit"])
def test_rates_and_card_sizes_pass(fine):
    assert not MODEL_SIZE.search(fine) and not MEMORY_AMOUNT.search(fine)
