"""Leads the playbook lacked at first-contact batch l (knowledge/playbook/part11-l-leads.yaml): the
elastic launcher's ChildFailedError / "failed (exitcode: 1) local_rank" summary, a wrapper whose real
error is the worker traceback above it; a worker killed with -9 keeps the host-RAM lead. Three
phrasings per language of this file's own (not the batch's words)."""

from __future__ import annotations

import pytest
from _helpers import entry_cases, playbook_named

CASES = {
    "pb-elastic-child-failed-wrapper": [
        "My 4-GPU torchrun job ends with torch.distributed.elastic.multiprocessing.errors.ChildFailedError, what does it mean?",
        "Training on 2 GPUs stops and the log says train.py FAILED, local_rank: 1 (pid: 4242) exitcode: 1",
        "torch.distributed.elastic reports a failure on 8 GPUs right after the first step, root cause rank 3",
        "四卡用 torchrun 训练，最后报 ChildFailedError，这是什么错误？",
        "两张卡训练时日志里写着 local_rank: 0 failed (exitcode: 1)，怎么排查？",
        "八卡启动以后 elastic 报错，说某个子进程失败了",
    ],
}


@pytest.mark.parametrize("entry_id,text", entry_cases(CASES))
def test_the_class_leads(entry_id, text):
    named = playbook_named(text)
    assert named[:1] == [entry_id], named


@pytest.mark.parametrize("text", [
    "torchrun on 4 GPUs: ChildFailedError, local_rank 2 exitcode: -9, signal 9 SIGKILL while loading the checkpoint",
    "四卡 torchrun 加载模型时 ChildFailedError，exitcode: -9，进程被 killed",
])
def test_a_sigkill_keeps_the_host_ram_lead(text):
    named = playbook_named(text)
    assert named[:1] != ["pb-elastic-child-failed-wrapper"], named
