"""Issue 11's failure classes, one test group each: what real users wrote and what it means."""

from __future__ import annotations

import math

import pytest

from bot.parse import parse_conversation


def setup_of(text: str, history=None) -> dict:
    return {k: v for k, v in parse_conversation(text, history).setup.model_dump().items() if v is not None}


# --- a number's role comes from its words, not its unit -------------------------------------------

OOM_OLD = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.94 GiB (GPU 1; 79.35 GiB total "
           "capacity; 77.65 GiB already allocated; 316.12 MiB free; 77.66 GiB reserved in total by PyTorch)")


def test_oom_log_states_card_memory_and_what_was_used():
    parsed = parse_conversation("训练环境： 4 * A800 80G显卡\n错误日志：\n" + OOM_OLD)
    assert parsed.setup.gpu_memory_gb == 80 and parsed.setup.gpu_count == 4
    assert parsed.setup.cpu_ram_gb is None  # no GiB figure of the log became host RAM
    obs = parsed.observed
    assert obs.oom and obs.capacity_gib == 79.35 and obs.allocated_gib == 77.65 and obs.tried_to_allocate_gib == 12.94
    assert not parsed.problems  # no "contradiction" between 80G and 79.35 GiB
    assert parsed.intent == "troubleshoot" and "oom" in parsed.topics


@pytest.mark.parametrize("log, card", [
    ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 39.39 GiB of which 1.02 GiB is free.", 40),
    ("Tried to allocate 1000.00 MiB (GPU 2; 15.57 GiB total capacity; 12.77 GiB already allocated; 793.38 MiB free)", 16),
    ("|   0  On | 78000MiB / 81920MiB |  100%  Default |", 80),
])
def test_log_capacity_is_converted_to_the_marketed_card_size(log, card):
    parsed = parse_conversation("7B full finetune on 8 GPUs.\n" + log)
    assert parsed.setup.gpu_memory_gb == card
    assert parsed.provenance["gpu_memory_gb"].source == "log"


@pytest.mark.parametrize("text, per_card, count", [
    ("我们有4张卡，一共128G显存，想全参微调7B", 32, 4),
    ("3个GPU，每个24G，训练3B模型全参", 24, 3),
    ("40GB × 8 cards = 320GB total VRAM, GRPO training", 40, 8),
])
def test_totals_are_not_per_card(text, per_card, count):
    got = setup_of(text)
    assert got.get("gpu_memory_gb") == per_card and got.get("gpu_count") == count


@pytest.mark.parametrize("text", ["Total of 180GB VRAM, full finetune of 13B", "我七张A800 80g，有560g 怎么会爆显存呢",
                                  "70B全参微调说需要1200g显存"])
def test_a_total_or_requirement_never_becomes_the_card(text):
    assert setup_of(text).get("gpu_memory_gb") in (None, 80)


def test_observed_usage_and_estimates_are_observed():
    parsed = parse_conversation("8卡3090全参zero3，每张卡只占用了13G内存。这正常吗？")
    assert parsed.observed.used_per_gpu_gib == 13 and parsed.setup.cpu_ram_gb is None
    # 13G is what the run used, not the card: the card's size is the catalog's (an assumption, said so)
    assert parsed.setup.gpu_memory_gb == 24 and parsed.provenance["gpu_memory_gb"].source == "assumed"
    est = parse_conversation("Estimated memory needed: 216.99GB | 18.08GB | offload_optimizer=cpu\n4 x A100 40GB")
    assert est.observed.estimate_gib == 18.08 and est.setup.gpu_memory_gb == 40
    used = parse_conversation("FSDP on 4x H100 for a 7B model uses 67G per GPU, is that expected?")
    assert used.observed.used_per_gpu_gib == 67 and used.setup.gpu_memory_gb != 67


# --- hyphenated card names are never negative ------------------------------------------------------

@pytest.mark.parametrize("text, gpu, memory", [
    ("8x A100-40G, 7B", "A100 40GB SXM", 40),
    ("8卡A100-40GB", "A100 40GB SXM", 40),
    ("4 * A800-SXM4-80GB", "A800 80GB SXM", 80),
    ("H100-80G x 16", "H100 80GB SXM", 80),
    ("RTX4090-24G x 2", "RTX 4090 24GB", 24),
])
def test_hyphenated_card_names(text, gpu, memory):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu == gpu and parsed.setup.gpu_memory_gb == memory
    assert not any(p.field == "gpu_memory_gb" for p in parsed.problems)


# --- counts ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, count, nodes, per_node", [
    ("单张A100 80G能全参微调7B吗", 1, None, None),
    ("只有一张卡，24G，LoRA微调7B", 1, None, None),
    ("Single GPU (RTX 3090), QLoRA on Llama-2-13B", 1, None, None),
    ("3个GPU，每个24G", 3, None, None),
    ("16*80G 训练 34B", 16, None, None),
    ("2台2*80G的机器", 4, 2, 2),
    ("两个节点，每台机器8卡 A100 80G", 16, 2, 8),
    ("4x A6000 48GB, full finetune", 4, None, None),
    ("2台8卡A800 80G", 16, 2, 8),
    ("2 nodes with 4x 80GB A100", 8, 2, 4),
    ("torchrun --nproc_per_node 8 --nnodes 2 train.py", 16, 2, 8),
    ("deepspeed --include localhost:4,5,6,7 train.py", 4, 1, 4),  # localhost: one node (first-contact batch j)
])
def test_counts(text, count, nodes, per_node):
    s = parse_conversation(text).setup
    assert (s.gpu_count, s.nodes, s.gpus_per_node) == (count, nodes, per_node)


@pytest.mark.parametrize("text", ["A100 80G 训练 7B 全参，用 DDP 还是 FSDP？", "Should I use FSDP for a 13B model on H100s?"])
def test_the_gpu_count_is_never_defaulted(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count is None and "gpu_count" in parsed.missing


def test_a_comparison_with_one_gpu_is_not_the_count():
    assert setup_of("why is DDP slower than that of a single GPU?").get("gpu_count") is None
    assert setup_of("Why do we need FSDP when the model already fits on a single GPU?").get("gpu_count") is None


# --- sequence length ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, seq", [
    ("cutoff_len: 1024\nfinetuning_type: full", 1024),
    ("--cutoff_len 1536 --finetuning_type full", 1536),
    ("maxlen为32768，7B全参", 32768),
    ("--max_seq_length 4096", 4096),
    ("8K context, 13B", 8192),
    ("32k长文本训练7B", 32768),
    ("seq 8192, micro batch 1", 8192),
    ("seq len 8192 and bf16", 8192),
    ("--model_max_length 2048", 2048),
    ("--batch_size 1 --accum_iter 2 --num_workers 2 \\\n--max_words 512 \\", 512),  # LLaMA2-Accessory#26
    ("32B 32K 最少需要几台机器？", 32768),
])
def test_sequence_length(text, seq):
    assert setup_of(text).get("seq_len") == seq


# --- negations and method -------------------------------------------------------------------------

@pytest.mark.parametrize("text, field, value", [
    ("8x RTX 4090 without nvlink", "intra_node_link", "pcie"),
    ("4 A6000s, no NVLink", "intra_node_link", "pcie"),
    ("4个没有NVLink的V100", "intra_node_link", "pcie"),
    ("full fp32 (no amp), 1.3B from scratch", "precision", "fp32"),
    ("Not LoRA or QLoRA - full parameter fine-tuning of a 7B", "finetune", "full"),
    ("不用LoRA，全参训练13B", "finetune", "full"),
    ("fp16: true\n8张V100 32G", "precision", "fp16-mixed"),
    ("--pure_bf16 False --use_fp16 True", "precision", "fp16-mixed"),
    ("gradient_checkpointing: false", "activation_checkpointing", False),
    ("no gradient checkpointing, 13B", "activation_checkpointing", False),
    ("finetuning_type: full\nlora_target: c_attn", "finetune", "full"),
])
def test_negations_and_method(text, field, value):
    assert setup_of(text).get(field) == value


def test_lora_target_without_lora_is_not_a_lora_setting():
    assert "lora_targets" not in setup_of("--finetuning_type full --lora_target c_attn")


# --- accelerators not (or not yet) in the catalog -------------------------------------------------

def test_ascend_is_a_card_never_a_model_size():
    for text in ("Ascend 910B x8, 7B full finetune", "昇腾910B 8卡，训练Qwen2.5-14B全参"):
        parsed = parse_conversation(text)
        assert parsed.setup.params_b in (None, 7.0) and (parsed.setup.params_b or 0) < 100
        assert (parsed.setup.gpu or parsed.unknown_gpu or "").lower().startswith("ascend")


def test_an_unknown_card_asks_for_its_memory():
    parsed = parse_conversation("8x Zephyrion Z9 accelerators, 7B full finetune, DDP or FSDP?")
    assert parsed.setup.gpu is None and parsed.unknown_gpu and "gpu_memory_gb" in parsed.missing
    assert parsed.setup.gpu_count == 8


@pytest.mark.parametrize("text, gpu", [("4x A40 48GB", "A40"), ("Two RTX 3080 cards", "RTX 3080"),
                                       ("8卡H20训练72B", "H20"), ("4 T4 GPUs", "T4"),
                                       ("MI300X x8", "MI300X"), ("L4 x 8", "L4")])
def test_cards_come_from_the_catalog(text, gpu):
    assert (parse_conversation(text).setup.gpu or "").startswith(gpu)


# --- run options ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("AdamW with fused=True, torch.compile", {"optimizer": "adamw", "optimizer_impl": "fused", "torch_compile": True}),
    ("optim: adamw_torch_fused\ngradient_accumulation_steps: 8", {"optimizer_impl": "fused", "grad_accum_steps": 8}),
    ("python train.py --compile --batch_size 12", {"torch_compile": True, "micro_batch": 12}),
    ("torch_compile: true\ngradient_checkpointing: true", {"torch_compile": True, "activation_checkpointing": True}),
    ("lora_target: all\nfinetuning_type: lora", {"lora_targets": "all_linear", "finetune": "lora"}),
    ("LoRA on q_proj,v_proj only, rank 16", {"lora_targets": "attention", "lora_rank": 16}),
    ("load_in_4bit: true\nadapter: lora", {"base_dtype": "nf4", "finetune": "qlora"}),
    ("optim: paged_adamw_8bit", {"optimizer": "adam8bit"}),
    ('{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4, "bf16": {"enabled": true}}',
     {"micro_batch": 2, "grad_accum_steps": 4, "precision": "bf16-mixed"}),
    ("per_device_train_batch_size=4, gradient_checkpointing=True, bf16=True",
     {"micro_batch": 4, "activation_checkpointing": True, "precision": "bf16-mixed"}),
    ("--zero_stage 0 --lora_dim 128 --only_optimize_lora", {"lora_rank": 128}),  # DeepSpeed-Chat
])
def test_run_options(text, expected):
    got = setup_of(text)
    assert {k: got.get(k) for k in expected} == expected


def test_config_values_carry_config_provenance():
    parsed = parse_conversation("cutoff_len: 4096\nper_device_train_batch_size: 2\n8张4090跑Qwen2.5-7B")
    assert parsed.provenance["seq_len"].source == "config" and parsed.provenance["seq_len"].span == "cutoff_len: 4096"
    assert parsed.provenance["gpu_count"].source == "stated" and parsed.provenance["gpu_count"].span == "8张"
    assert parsed.provenance["gpu_memory_gb"].source == "assumed"  # the 4090's size from the catalog


def test_deepspeed_and_fsdp_configs_are_observed():
    ds = parse_conversation('"zero_optimization": {"stage": 3, "overlap_comm": true}')
    assert ds.observed.zero_stage == 3
    lf = parse_conversation("deepspeed: examples/deepspeed/ds_z3_offload_config.json")
    assert lf.observed.zero_stage == 3 and lf.observed.zero_offload
    acc = parse_conversation("distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: SHARD_GRAD_OP\nnum_processes: 4")
    assert acc.observed.fsdp_strategy == "fsdp_shard_grad_op" and acc.setup.gpu_count == 4


# --- language of the person's own sentences -------------------------------------------------------

def test_language_is_that_of_the_persons_sentences():
    zh = ("请帮我看看这个配置该用DDP还是FSDP：\nmodel_name_or_path: meta-llama/Llama-2-13b-hf\nfinetuning_type: full\n"
          "per_device_train_batch_size: 1\ngradient_accumulation_steps: 16\nbf16: true\nmachine: 8 H100")
    assert parse_conversation(zh).language == "zh"
    assert parse_conversation("训练报错了：\n" + OOM_OLD + "\n怎么解决？").language == "zh"
    assert parse_conversation("How much 显存 does a 7B full finetune need on 8 GPUs?").language == "en"


# --- multi-model RL -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, role", [
    ("PPO with actor 7B, critic 7B, reference and reward models on 8x A100 80GB", "critic"),
    ("GRPO训练Qwen2.5-7B，8卡H100，显存怎么算", "reference"),
    ("--ref_num_gpus_per_node 1 --reward_num_gpus_per_node 2 --critic_num_gpus_per_node 2 --actor_num_gpus_per_node 4",
     "reward"),
])
def test_multi_model_jobs(text, role):
    parsed = parse_conversation(text)
    assert role in parsed.observed.models and "multi_model_rl" in parsed.topics


# --- intents --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, intent", [
    ("DDP or FSDP for Llama-2-7B on 8x A100 80GB?", "recommend"),
    ("What's the difference between FSDP1 and FSDP2?", "concept"),
    ("SHARD_GRAD_OP 和 FULL_SHARD 的显存和通信差别是什么", "concept"),
    ("ZeRO stages vs FSDP - how do they map?", "concept"),
    ("What does HSDP do?", "concept"),
    ("OOM with DDP on 4x 3090 for a 7B full finetune, what should I change?", "troubleshoot"),
    ("FSDP is 15% slower than DDP on my 8x A100 for a 1.3B model. Why?", "troubleshoot"),
    ("Two nodes are slower than one node for my 7B FSDP run", "troubleshoot"),
    ("How many A100 80GB GPUs do I need to full fine-tune Llama-2-70B?", "capacity"),
    ("全参微调Qwen2.5-72B需要几张H100？", "capacity"),
    ("How do I serve Llama-3-70B with vLLM on 4x A100?", "out_of_scope"),
    ("TGI 部署 Qwen2.5-72B 推理要几张卡？", "out_of_scope"),
    ("FSDP on TPU v4 with JAX/XLA for a 7B model?", "out_of_scope"),
    ("TensorFlow MirroredStrategy or MultiWorkerMirroredStrategy for BERT?", "out_of_scope"),
    ("why GeminiPlugin zero3+offloading cannot training a 7B model on 4 2080ti", "out_of_scope"),  # ColossalAI#6272

    ("How do I train my dog to stop barking at the GPU fan?", "out_of_scope"),
    ("Which memory foam mattress has the best memory for a side sleeper?", "out_of_scope"),
])
def test_intents(text, intent):
    assert parse_conversation(text).intent == intent


def test_another_framework_named_beside_the_users_own_deepspeed_run_is_a_comparison():
    # DeepSpeedExamples#411: "Colossalai是可以的" beside a pasted deepspeed command
    text = ("4张80G的A100不能支持lora的7b bloom在batch为4的条件下训练，Colossalai是可以的\n"
            "deepspeed --num_gpus 4 main.py --per_device_train_batch_size 4 --zero_stage 0")
    parsed = parse_conversation(text)
    assert parsed.on_topic and parsed.intent != "out_of_scope"
    assert parse_conversation("FSDP on TPU v4 with JAX, launched with torchrun --nproc_per_node 8 train.py").intent \
        == "out_of_scope"  # other hardware is never a mere comparison


def test_the_secret_to_fast_fsdp_is_not_an_injection():
    parsed = parse_conversation("What's the secret to fast FSDP training on 8 GPUs?")
    assert not parsed.injection and parsed.on_topic


@pytest.mark.parametrize("text, pair", [
    ("DDP or FSDP for a 1.5B model on 4x RTX 4090?", {"ddp", "fsdp_full_shard"}),
    ("ZeRO-2 还是 ZeRO-3？7B 全参，8 张 A100 40G", {"fsdp_shard_grad_op", "fsdp_full_shard"}),
    ("SHARD_GRAD_OP vs FULL_SHARD: when is each better?", {"fsdp_shard_grad_op", "fsdp_full_shard"}),
    ("16 H100-80G across 2 nodes: FSDP full shard or hybrid shard?", {"fsdp_full_shard", "fsdp_hybrid_shard"}),
])
def test_compare(text, pair):
    assert set(parse_conversation(text).compare) == pair


def test_whichever_of_two_is_not_a_comparison():
    assert parse_conversation("lora微调14b，8 x V100(16G)，不管是zero2还是zero3 都存在OOM").compare == ()


# --- robustness (issue 17 items 2-3) --------------------------------------------------------------

@pytest.mark.parametrize("text", ["7B on " + "9" * 400 + " A100", "9" * 2000 + "B model", "1e999 GPUs", "7B on 1" + "0" * 40 + " A100"])
def test_long_digit_runs_are_a_problem_not_a_number(text):
    parsed = parse_conversation(text)
    for value in parsed.setup.model_dump().values():
        if isinstance(value, float):
            assert math.isfinite(value)
    if "9" * 20 in text or "0" * 20 in text:
        assert parsed.problems and "long_number_ignored" in parsed.notices
        assert parsed.on_topic  # the answer says the number is unusable instead of "out of scope"


def test_history_and_question_are_capped_with_a_notice():
    history = ["8x A100 80GB 7B " * 700] * 500
    parsed = parse_conversation("DDP or FSDP?", history)
    assert "history_truncated" in parsed.notices
    long = parse_conversation("7B模型 8卡A100 40G " + "很长的问题" * 5000)
    assert "condensed" in long.notices and long.setup.gpu_count == 8  # issue 24: condensed, not cut


# --- found on the gold thread cases ---------------------------------------------------------------

def test_a_card_variant_the_catalog_lacks_is_unknown_not_a_contradiction():
    parsed = parse_conversation("910b qwen72b lora微调OOM\n训练环境： 2 * 910b 32G显卡")
    assert parsed.setup.gpu_memory_gb == 32 and parsed.unknown_gpu and not parsed.problems
    # the user's figure wins over the catalog's nearest card (H100 NVL, 94 GB): a variant it lacks
    nvl = parse_conversation("一张H100显卡，96G显存，全参数微调32B")
    assert nvl.setup.gpu_memory_gb == 96 and nvl.unknown_gpu and not nvl.problems
    named = parse_conversation("H100 NVL 96GB x 4, 34B LoRA")
    assert named.setup.gpu_memory_gb == 96 and (named.unknown_gpu or "").startswith("H100 NVL") and not named.problems


def test_a_stray_figure_beside_a_named_card_is_not_its_size():
    parsed = parse_conversation("LLama3-8B FSDP + QLORA OOM with 4 A40's. CPU: Xeon E5-2630 v2 but limited to 16GB")
    assert parsed.setup.gpu == "A40 48GB" and not parsed.problems


def test_an_explicit_per_card_figure_is_kept_and_checked():
    parsed = parse_conversation("8张卡，每张显存5000G，训练7B模型，用哪个？")
    assert parsed.setup.gpu_memory_gb == 5000 and any(p.field == "gpu_memory_gb" for p in parsed.problems)


@pytest.mark.parametrize("text, field, value", [
    ("The node with 8*A100 has a total of 1024GB of CPU memory.", "cpu_ram_gb", 1024),
    ("多个节点，每个节点8张40G A100，能不能把参数只分到同一节点内", "nodes", None),
    ("FORCE_TORCHRUN=1 NNODES=2 RANK=0 lora 微调", "lora_rank", None),
    ("deepspeed --num_gpus 8 --num_nodes 2 --hostfile=host.txt train.py", "gpu_count", 16),
    ("deepspeed --num_gpus 4 src/train_bash.py", "gpu_count", 4),
    ("初始化Actor后，每个节点的内存占用综合大概45G * 4", "gpu_count", None),
])
def test_roles_found_on_real_threads(text, field, value):
    assert setup_of(text).get(field) == value


@pytest.mark.parametrize("text, field, value", [
    ("请问在32k的长度下微调7B模型，大概需要多少显存呢？", "seq_len", 32768),  # xtuner#707
    ("bsz=2和Seqlen=4k，设置的很小", "micro_batch", 2),  # LlamaFactory#3919
    ("bsz=2和Seqlen=4k，设置的很小", "seq_len", 4096),
])
def test_more_real_phrasings_of_length_and_batch(text, field, value):
    assert getattr(parse_conversation(text).setup, field) == value


@pytest.mark.parametrize("text, multi", [
    ("用LlamaFactory全参微调Qwen2.5-7B，4 * A800 80G", False),  # "Factory" holds "actor"
    ("PPO训练，actor模型7B，critic模型7B，8张A100", True),
    ("OpenRLHF PPO with a 7B actor and a 1.8B reward model", True),
])
def test_multi_model_topic_needs_the_word_not_a_substring(text, multi):
    assert ("multi_model_rl" in parse_conversation([text]).topics) is multi


@pytest.mark.parametrize("text, used", [
    ("My 1B model OOMs with DDP on 4x 4090. Would gradient_as_bucket_view=True and fused AdamW fix it?", {}),
    ("Does torch.compile reduce memory for 7B on 8 A100?", {}),
    ("7B 8张A100 开fused AdamW能不能省显存？", {}),
    ("Llama-3.2-1B，4张4090用DDP爆显存，开gradient_as_bucket_view和fused AdamW能不能解决？", {}),
    # reported, not asked: the run uses them
    ("I use fused AdamW on 8 A100, would FSDP help?", {"optimizer_impl": "fused"}),
    ("我用了fused AdamW，能不能用DDP？", {"optimizer_impl": "fused"}),
    ("7B 8张A100，用了torch.compile，显存不够", {"torch_compile": True}),
])
def test_an_option_asked_about_is_not_the_runs_setup(text, used):
    setup = parse_conversation(text).setup
    for name in ("optimizer_impl", "ddp_bucket_view", "torch_compile"):
        assert getattr(setup, name) == used.get(name), name


@pytest.mark.parametrize("text, model", [
    ("全参数微调Qwen-2.5-instruct 32B", "Qwen2.5-32B"),  # LlamaFactory#6755
    ("qwen2.5-instruct-32b, 8 x A100", "Qwen2.5-32B"),
    ("llama 3.1 chat 70B on 16 H100", "Llama-3.1-70B"),
])
def test_a_release_word_between_family_and_size_names_the_model(text, model):
    parsed = parse_conversation(text)
    assert parsed.setup.model == model and parsed.provenance["model"].span in text


@pytest.mark.parametrize("text, on, source", [
    ("用LlamaFactory全参微调Qwen2.5-7B，4 * A800 80G", True, "assumed"),  # LlamaFactory's default
    ("llamafactory-cli train x.yaml\ndisable_gradient_checkpointing: true\nQwen2.5-7B 8 A100", False, "config"),
    ("--disable_gradient_checkpointing True --finetuning_type full Qwen2.5-7B on 8 A100", False, "config"),
    ("Qwen2.5-7B full fine-tune on 8 A100", None, None),  # no framework named: nothing assumed here
])
def test_llamafactorys_checkpointing_default(text, on, source):
    parsed = parse_conversation(text)
    assert parsed.setup.activation_checkpointing is on
    prov = parsed.provenance.get("activation_checkpointing")
    assert (prov.source if prov else None) == source
    assert ("framework_checkpointing" in parsed.notices) is (source == "assumed")


@pytest.mark.parametrize("text, off", [
    # a whole pasted command without a checkpointing flag ran without it (DeepSpeedExamples#411)
    ("deepspeed --num_gpus 4 main.py --data_path x --model_name_or_path y --per_device_train_batch_size 4 "
     "--max_seq_len 2048 --learning_rate 1e-3 --zero_stage 0 --lora_dim 128 --deepspeed 7B on 4 A100 80G", True),
    ("torchrun --nproc_per_node 8 train.py --fsdp full_shard 7B on 8 A100", False),  # too short to say
    ("deepspeed --num_gpus 4 main.py --data_path x --model_name_or_path y --per_device_train_batch_size 4 "
     "--max_seq_len 2048 --learning_rate 1e-3 --zero_stage 0 --gradient_checkpointing --deepspeed 7B on 4 A100", False),
])
def test_a_pasted_command_without_a_checkpointing_flag_ran_without_it(text, off):
    parsed = parse_conversation(text)
    assert ("command_checkpointing_off" in parsed.notices) is off
    if off:
        assert parsed.setup.activation_checkpointing is False
        assert parsed.provenance["activation_checkpointing"].source == "assumed"


@pytest.mark.parametrize("text, size", [
    ("A40 * 4的配置是否支持 7b/8b/9b 这个量级的模型全参进行微调呢", 9.0),  # LlamaFactory#4199
    ("7B or 13B model on 8x A100 40GB", 13.0),
])
def test_several_bare_sizes_asked_together_keep_the_largest(text, size):
    parsed = parse_conversation(text)
    assert parsed.setup.params_b == size and "larger_of_two_sizes" in parsed.notices


def test_a_batch_that_only_runs_smaller_is_an_oom():
    assert parse_conversation("4张A100 80G lora 7B, batch为4的条件下不行，batch只能设置到1").observed.oom
    assert parse_conversation("7B LoRA on 4x A100 80GB: I can only use a batch size of 1").observed.oom
    assert not parse_conversation("7B LoRA on 4x A100 80GB with batch size 4").observed.oom


def test_a_llamafactory_example_config_is_its_setup():
    # LlamaFactory#5014: the example named on the command line trains Llama-3-8B-Instruct with LoRA
    text = "FORCE_TORCHRUN=1 NNODES=2 llamafactory-cli train examples/train_lora/llama3_lora_sft_ds3.yaml"
    parsed = parse_conversation(text)
    assert (parsed.setup.model, parsed.setup.finetune, parsed.setup.seq_len) == ("Llama-3.1-8B", "lora", 2048)
    assert parsed.provenance["model"].source == "config"
    # what the user states wins over the example's defaults
    stated = parse_conversation(text + "\nmodel_name_or_path: Qwen/Qwen2.5-7B-Instruct\ncutoff_len: 4096")
    assert (stated.setup.model, stated.setup.seq_len) == ("Qwen2.5-7B", 4096)


@pytest.mark.parametrize("text, model", [
    ("reproduce the finetuning results of llama2 7B/13B model, 4 A100s(40GB)", "Llama-2-13B"),  # proxy-tuning#2
    ("Qwen2.5-7B或14B，8张A100", "Qwen2.5-14B"),
    ("Llama-2-13B/7B on 8 A100", "Llama-2-13B"),
])
def test_two_sizes_of_one_family_compute_the_larger_and_say_so(text, model):
    parsed = parse_conversation(text)
    assert parsed.setup.model == model and not parsed.problems
    assert "larger_of_two_sizes" in parsed.notices


def test_a_size_no_sibling_has_is_still_a_contradiction():
    assert parse_conversation("Llama-2-7B/500B on 8 A100").problems


@pytest.mark.parametrize("text", [
    "FSDP very slow on multi-node training",  # pytorch#102434's title
    "when training using multi-node multi-gpu(2x8A100 or 4x8A100), the training speed is very slow.",
    "I found two nodes train is slower than one node.",  # stanford_alpaca#200
])
def test_multi_node_slowness_is_read_in_either_order(text):
    from bot.understand.intent import topics_of

    assert "multi_node_slow" in topics_of(text)
