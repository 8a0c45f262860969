"""The README's "Supported models and cards" section stays in step with the catalog."""

from __future__ import annotations

import re
from pathlib import Path

from bot.catalog import list_gpus, list_models

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Supported models and cards", 1)[1].split("\n## ", 1)[0]


def test_the_model_count_is_the_catalogs():
    stated = int(re.search(r"Models \((\d+),", SECTION).group(1))
    assert stated == len([m for m in list_models() if m.name != "tiny"])  # "tiny" is the test model


def test_the_card_count_is_the_catalogs():
    stated = int(re.search(r"Accelerators \((\d+),", SECTION).group(1))
    assert stated == len(list_gpus())


def test_every_model_family_is_named():
    # the family is the name up to its size ("Baichuan2-13B" -> "Baichuan2"); each appears in the list
    families = {re.split(r"[- ](?=\d|[0-9.]+[BM]\b|base|large|Medium|Large|XL|mini|medium|UNet|VL|MoE|dev)",
                         m.name)[0] for m in list_models() if m.name != "tiny"}
    flat = " ".join(SECTION.split())
    missing = sorted(f for f in families if f.split("-")[0].split(" ")[0] not in flat)
    assert not missing, missing
