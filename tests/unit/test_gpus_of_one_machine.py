"""A machine named with its GPUs ("a 4-GPU machine", "our 8-GPU node", "一台四卡机器") is one node
of that many GPUs, never that many nodes; "2 GPU nodes" (plural, unhyphenated) are two nodes, and
"two 8-GPU nodes" two nodes of eight."""

from __future__ import annotations

import pytest

from bot.understand.reader import read_turn


@pytest.mark.parametrize(("question", "per_node", "nodes"), [
    ("on a 4-GPU machine, DDP or FSDP for a 7B model?", 4, 1),
    ("Our 8-GPU node (A100 80GB) runs out of memory on 13B full fine-tuning", 8, 1),
    ("We rent one 8 GPU server with H100s for a 13B full fine-tune", 8, 1),
    ("my 2-GPU workstation with RTX 3090s OOMs on 7B", 2, 1),
    ("two 8-GPU nodes of A100 80GB for 70B LoRA: HSDP?", 8, 2),
    ("we have 3 8-GPU servers (H100), FSDP or HSDP?", 8, 3),
    ("I train on 2 GPU nodes with 8 A100 each", 8, 2),
    ("一台四卡机器，A100 80G，7B全参用DDP还是FSDP？", 4, 1),
    ("两台8卡A800训练70B，HSDP还是FSDP？", 8, 2),
    ("单台8卡H100服务器上微调13B会爆显存吗？", 8, 1),
])
def test_a_machine_named_with_its_gpus_is_one_node(question, per_node, nodes):
    fields = read_turn(question).fields
    assert (fields.get("gpus_per_node"), fields.get("nodes")) == (per_node, nodes), fields
