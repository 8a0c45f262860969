"""Every generated how-to snippet is valid: each strategy x precision x checkpointing x HSDP
Python snippet parses, the DeepSpeed config is JSON, and the tiny-model variants run on CPU under
torchrun with gloo (slow)."""

from __future__ import annotations

import ast
import itertools
import json
import os
import subprocess
import sys
import textwrap

import pytest

from bot.howto import (
    SnippetSpec,
    accelerate_config,
    deepspeed_config,
    python_snippet,
    snippets,
    torchrun_command,
)
from bot.strategies import TRAINING_STRATEGIES

PRECISIONS = ("bf16-mixed", "fp16-mixed", "bf16", "fp32")
COMBOS = list(itertools.product(TRAINING_STRATEGIES, PRECISIONS, (False, True), (1, 2), (False, True)))


@pytest.mark.parametrize("strategy, precision, ckpt, nodes, bucket", COMBOS)
def test_every_snippet_parses(strategy, precision, ckpt, nodes, bucket):
    spec = SnippetSpec(strategy=strategy, nodes=nodes, gpus_per_node=8, precision=precision, checkpointing=ckpt,
                       bucket_view=bucket and strategy == "ddp")
    code = python_snippet(spec)
    ast.parse(code)
    json.loads(deepspeed_config(spec))
    assert "torchrun" in torchrun_command(spec) and "distributed_type" in accelerate_config(spec)
    if strategy == "fsdp_shard_grad_op":
        assert "reshard_after_forward=False)" in code  # the comment no longer swallows the parenthesis
    if strategy == "fsdp_hybrid_shard":
        assert f"({nodes}, 8)" in code
    items = snippets(spec, deepspeed=True)
    assert [h.language for h in items] == ["python", "bash", "json", "yaml"]


def test_the_answer_snippets_parse():
    from bot import ask

    for question in ("Llama-2-7B full fine-tune on 8x A100 80GB PCIe", "Llama-2-13B on 2 nodes x 8 A100 80GB, ethernet 25Gbps",
                     "GPT-2 on 4x A100 80GB", "ZeRO-3 for Qwen2.5-7B on 8x A100 40GB with deepspeed?"):
        a = ask(question)
        for h in a.sections.howto:
            if h.language == "python":
                ast.parse(h.code)
            elif h.language == "json":
                json.loads(h.code)


_TINY = textwrap.dedent('''
    import torch


    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(2))

        def forward(self, x):
            for layer in self.layers:
                x = torch.relu(layer(x))
            return x


    def build_model():
        return Tiny()
''')
_STEP = textwrap.dedent('''
    x = torch.randn(4, 16)
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    dist.barrier()
    if dist.get_rank() == 0:
        print("STEP-OK")
    dist.destroy_process_group()
''')


@pytest.mark.slow
@pytest.mark.parametrize("strategy, ckpt", [("ddp", False), ("fsdp_shard_grad_op", False), ("fsdp_full_shard", True),
                                            ("fsdp_hybrid_shard", True)])  # every branch, ~30 s each
def test_tiny_model_snippet_runs_under_torchrun_gloo(tmp_path, strategy, ckpt):
    nodes, per_node = (2, 1) if strategy == "fsdp_hybrid_shard" else (1, 2)
    spec = SnippetSpec(strategy=strategy, nodes=nodes, gpus_per_node=per_node, precision="fp32", checkpointing=ckpt,
                       bucket_view=strategy == "ddp", device="cpu")
    script = tmp_path / "train.py"
    script.write_text(_TINY + "\n" + python_snippet(spec) + "\n" + _STEP, encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nodes * per_node),
           str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0 and "STEP-OK" in proc.stdout, proc.stderr[-3000:]


@pytest.mark.parametrize("device_type, backend", [("npu", "hccl"), ("hpu", "hccl"), ("cuda", "nccl")])
@pytest.mark.parametrize("strategy", TRAINING_STRATEGIES)
def test_snippets_use_the_cards_device_and_backend(strategy, device_type, backend):
    code = python_snippet(SnippetSpec(strategy=strategy, device_type=device_type, backend=backend, nodes=2))
    ast.parse(code)
    assert f'dist.init_process_group("{backend}")' in code
    if device_type == "npu":
        assert "import torch_npu" in code and "torch.cuda" not in code and "fused=True" not in code
    if device_type == "hpu":
        assert "habana_frameworks.torch.distributed.hccl" in code and "torch.cuda" not in code
    if strategy == "fsdp_hybrid_shard":
        assert f'init_device_mesh("{device_type}"' in code


def test_answer_how_to_follows_the_card_and_names_expert_parallelism_for_moe():
    from bot import ask

    npu = ask("Qwen2.5-7B LoRA, 8张昇腾910B")
    code = "\n".join(h.code for h in npu.sections.howto)
    assert 'init_process_group("hccl")' in code and "torch_npu" in code
    nvidia = ask("Qwen2.5-7B LoRA on 8x A100 80GB")
    assert 'init_process_group("nccl")' in "\n".join(h.code for h in nvidia.sections.howto)
    moe = ask("Qwen3-30B-A3B LoRA on 8x H100 80GB")
    assert any("expert parallelism" in n.lower() for n in moe.sections.notices)
    assert not any("expert" in n.lower() for n in nvidia.sections.notices)
