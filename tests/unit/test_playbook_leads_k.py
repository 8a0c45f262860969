"""Leads the playbook lacked at first-contact batch k (knowledge/playbook/part10-k-leads.yaml, class 4):
a rendezvous port another or a dead job holds, device_map as model parallelism (no speed-up), a
loss/log dict whose keys differ between ranks; and the data pipeline as the bottleneck of a
multi-GPU run no faster than one GPU, which is pb-dataloader-starves-gpu (part5.yaml) extended.
Three phrasings per language of this file's own (not the batch's words, nor those of
evals/diagnosis_own.jsonl)."""

from __future__ import annotations

import pytest
from _helpers import entry_cases, playbook_named

CASES = {
    "pb-rendezvous-port-in-use": [
        "torchrun on 2 GPUs dies at once: RuntimeError: The server socket has failed to listen on any local network address, EADDRINUSE",
        "Launching DDP with init_method tcp://localhost:23456 gives errno 98, the port seems taken by my previous crashed run",
        "The second training job on the same server fails with Address already in use on port 29500; the first one still runs.",
        "两张卡用 torchrun 启动就报 address already in use，怎么办？",
        "同一台服务器上跑第二个训练任务，报错说端口被占用，MASTER_PORT 要怎么设？",
        "上次训练崩了以后再启动就提示 29500 端口已被占用，报 EADDRINUSE",
    ],
    "pb-device-map-model-parallel": [
        "I load a 7B model with device_map=\"auto\" on 4 GPUs, but training is not any faster than on one GPU. Why?",
        "With device_map auto on two A100s only one card is busy at a time; the GPUs take turns. Is this expected?",
        "I split my model across 4 GPUs with a manual device_map and it is slower than a single GPU",
        "用 device_map=\"auto\" 把模型放到四张卡上训练，速度和单卡差不多，为什么没有加速？",
        "两张 3090 用 device_map 加载模型，发现同一时间只有一张卡在跑，两张卡轮流工作",
        "四张卡上做模型并行（device_map），训练比单卡还慢",
    ],
    "pb-rank-dependent-loss-keys": [
        "On 4 GPUs with DDP my extra loss term is only added when the batch has masks, and now the loss dict keys differ between ranks and the job hangs at logging.",
        "Lightning log_dict with sync_dist hangs on 2 GPUs; some ranks log an aux loss only if a condition holds.",
        "With 8 GPUs the reduce_loss_dict call gets stuck because the keys are different on different ranks.",
        "四卡 DDP 训练，loss 字典在不同 rank 上的 key 不一样，日志归约的时候就卡住了",
        "两张卡用 Lightning，self.log 加了 sync_dist 以后卡死，有的 rank 才有辅助 loss",
        "八卡训练时某些 rank 才有 mask loss 这个 key，结果 reduce_dict 卡住不动",
    ],
    "pb-dataloader-starves-gpu": [
        "My 4-GPU run is no faster than one GPU: the CPU data augmentation cannot keep up and all cores sit at 100 %, GPU utilisation is low",
        "Training on 8 GPUs takes as long as on a single GPU; the dataloader can't feed all the GPUs, GPU usage 30 %",
        "Two GPUs give no speed-up over one: the augmentation pipeline is CPU-heavy and cannot keep up with both cards",
        "四卡训练和单卡一样快，数据增强在 CPU 上跟不上，GPU 利用率很低",
        "八张卡训练速度没比单卡快，CPU 跑满了，数据加载喂不饱这么多卡",
        "两张卡和单卡差不多快，看了一下是预处理太慢，CPU 供不上",
    ],
}


@pytest.mark.parametrize("entry_id,text", entry_cases(CASES))
def test_the_class_leads(entry_id, text):
    named = playbook_named(text)
    assert named[:1] == [entry_id], named


@pytest.mark.parametrize("entry_id,text", [
    # a rendezvous that never completes, with no bind error, is still the hang entry
    ("pb-init-hang-rendezvous", "torchrun init_process_group hangs forever, MASTER_PORT 29500, no error"),
    ("pb-init-hang-rendezvous", "多卡训练卡在 init_process_group，master_port 设的 29500，一直没反应"),
    # device_map with an OOM on GPU 0 under a per-GPU launcher is the model piled on GPU 0
    ("pb-model-on-gpu0", "Two 4090s with device_map=\"auto\": OOM on GPU 0 when training starts"),
    ("pb-model-on-gpu0", "torchrun 两卡训练用了 device_map=\"auto\"，0号卡爆显存，其他卡几乎没有占用"),
    # an empty batch on one rank (no loss for some parameters) keeps its own lead
    ("pb-ddp-rank-without-loss", "DDP errors when an image has no annotations on one rank: the batch has no targets"),
    # many workers on few cores is oversubscription, not a starving pipeline
    ("pb-dataloader-workers-oversubscribe", "8 GPUs with num_workers=16 on a 32-core machine: the CPU is at 100 % and 8 GPUs are no faster than one"),
])
def test_neighbouring_causes_keep_their_lead(entry_id, text):
    named = playbook_named(text)
    assert named[:1] == [entry_id], named
