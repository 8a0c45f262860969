"""The read-back line: what was read, from which text, and what was assumed."""

from bot.parse import parse_conversation
from bot.understand.summary import read_back, read_items


def test_read_back_quotes_the_users_text_and_says_what_was_assumed():
    text = "训练环境： 4 * A800 80G显卡\n--cutoff_len 1536 --finetuning_type full"
    parsed = parse_conversation(text)
    line = read_back(parsed, "en")
    assert "4 GPUs from `4 * A800 80G`" in line and "seq 1536 from `--cutoff_len 1536` (config)" in line
    for item in read_items(parsed):
        assert item.source == "assumed" or item.span in text


def test_assumed_values_are_named_as_assumed():
    parsed = parse_conversation("8张4090跑Qwen2.5-7B")
    assert "假设：单卡 24 GB" in read_back(parsed, "zh")
    assert "assumed: 24 GB per card" in read_back(parsed, "en")


def test_history_is_marked():
    parsed = parse_conversation("换成H100呢", ["7B模型全参微调，8张A100 40G"])
    assert "(earlier message)" in read_back(parsed, "en")
