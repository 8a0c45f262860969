"""A result store found damaged and moved aside is said in the answer (issue 30): the stored-run
citations it held are gone, and the answer says why, in the answer's language."""

from __future__ import annotations

import pytest

from bot.assistant import answer_for_setup
from bot.bench import store as store_module
from bot.core.setup import TrainingSetup


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_damaged_store_is_said_in_the_answer(lang, tmp_path, monkeypatch):
    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    (tmp_path / "bench.sqlite").write_bytes(b"this is not a sqlite database" * 100)
    monkeypatch.setattr(store_module, "_notices", [])
    answer = answer_for_setup(TrainingSetup(model="Llama-2-7B", gpu="A100 80GB SXM", gpu_count=8), lang,
                              with_knowledge=False)
    notices = store_module.damage_notices(lang)
    assert notices, "the damaged store was not detected"
    assert all(n in answer.sections.notices for n in notices)
    assert notices[0] in answer.full_text
