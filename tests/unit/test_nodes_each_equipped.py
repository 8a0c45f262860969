"""Nodes written first and the per-node GPUs after "each equipped/fitted with" (a regression the eval
gate caught after the batch-f merges: "three nodes, each equipped with 8x H100" read as 8 GPUs)."""

import pytest

from bot.parse import parse_conversation

CASES = [
    ("We train on three nodes, each equipped with 8x H100 GPUs.", 24, 3),
    ("two servers, each fitted with 4x A100 80GB", 8, 2),
    ("4 machines, each one equipped with 8x A800", 32, 4),
    ("三台机器，每台8张H100", 24, 3),
    ("两个节点，每个节点4张A100", 8, 2),
    ("4台服务器，每台8卡A800", 32, 4),
]


@pytest.mark.parametrize("question,gpus,nodes", CASES)
def test_nodes_then_gpus_each(question, gpus, nodes):
    s = parse_conversation(question).setup
    assert (s.gpu_count, s.nodes) == (gpus, nodes)
