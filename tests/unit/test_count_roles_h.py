"""The role of every GPU count in a question (first-contact batch h, "Roles of counts"; phrasings of
our own, both languages, none of them a thread's words):

1. a count restated later supersedes the earlier one, and a count moved from -> to is the later one,
   with the earlier said in a note;
2. one card as the baseline of a comparison is not the asker's count (the multi-GPU count is, if
   written; else the count is asked, never defaulted), nor is one card per process;
3. a device index is never a count (never 0, never "invalid"); a list of indices is a weak count,
   said to come from the device list;
4. a reference run (a README, a paper, the authors, what a project "can be trained on") is set aside
   beside the asker's own cards;
5. two cards said without a digit ("both of my GPUs", "dual A6000s", "我的两张卡") are two, and a count
   with the card's size before the card word ("four 80GB GPUs", "两个24G显卡") is that count.
"""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation
from bot.understand.notes import note_text


def codes(parsed) -> list[str]:
    return [n.code for n in parsed.notes]


def note(parsed, code: str):
    return next(n for n in parsed.notes if n.code == code)


# --- 1. a count restated later ---------------------------------------------------------------------

@pytest.mark.parametrize("text, earlier, later", [
    ("Back then we had 2 GPUs for the Mistral-7B LoRA job; now it runs on 6 and the loss is NaN", 2, 6),
    ("Initially I was using 4 cards. Then I switched to 8 cards and Llama-2-13B still OOMs", 4, 8),
    ("Qwen2.5-7B full fine-tune: 3 GPUs were too few, so I got it running on 6 GPUs, still out of memory", 3, 6),
    ("以前用3张卡训练 Llama-2-7B，现在改成6张卡，loss 还是不降", 3, 6),
    ("最初是两张A100，后来换成四张A100，Qwen2.5-14B 全参还是爆显存", 2, 4),
    ("本来用4卡跑，现在扩到8卡了，速度反而变慢", 4, 8),
])
def test_a_count_restated_later_is_the_runs(text, earlier, later):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == later, parsed.setup
    n = note(parsed, "count_superseded")
    assert (n.values["earlier"], n.values["later"]) == (earlier, later)
    assert parsed.provenance["gpu_count"].span in text  # the later count's own words


@pytest.mark.parametrize("text, earlier, later", [
    ("We scaled the Llama-2-7B run from 4 to 8 GPUs and throughput barely moved", 4, 8),
    ("Going from 2 GPUs to 6 made each step slower, Mistral-7B LoRA", 2, 6),
    ("moved from 8 A100s to 16 A100s for a 13B full fine-tune, now NCCL times out", 8, 16),
    ("从4卡扩展到8卡之后，Qwen2.5-7B 每步反而更慢", 4, 8),
    ("由2张卡增加到6张卡，显存占用没变", 2, 6),
    ("我们从3张3090换到6张3090，训练还是很慢", 3, 6),
])
def test_a_count_moved_from_to_is_the_later_one_with_the_earlier_noted(text, earlier, later):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == later, parsed.setup
    n = note(parsed, "count_superseded")
    assert (n.values["earlier"], n.values["later"]) == (earlier, later)
    for lang in ("en", "zh"):
        assert str(earlier) in note_text(n, lang) and str(later) in note_text(n, lang)


@pytest.mark.parametrize("text, count", [
    ("I have 4 GPUs and 4 more on order, Llama-2-7B LoRA", 4),           # no change of count
    ("我有4张卡，单卡24G，Qwen2.5-7B LoRA 现在 OOM", 4),                    # a per-card size is not a restated count
    ("Now I use 8 GPUs for Llama-2-13B and it OOMs", 8),                  # one count only
    ("I raised the batch size from 1 to 8 on 2 GPUs and it OOMs", 2),    # a from -> to of another figure
    ("batch size 从1改到8之后，两张卡都爆显存了", 2),
])
def test_no_restatement_leaves_the_count(text, count):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count, parsed.setup
    assert "count_superseded" not in codes(parsed)


def test_the_failing_and_working_runs_keep_their_own_roles():
    parsed = parse_conversation("两张卡训练正常，后来换成8张卡就OOM了，Llama-2-13B")
    assert parsed.setup.gpu_count == 8
    assert parsed.observed.worked_gpu_count == 2
    assert "failed_run_count" in codes(parsed)


# --- 2. one card as a comparison's baseline ---------------------------------------------------------

@pytest.mark.parametrize("text", [
    "用DDP以后训练反而比单卡慢，Qwen2.5-7B LoRA，什么原因",
    "多机多卡的吞吐和一张卡差不多，Llama-2-7B",
    "数据并行后显存占用是单卡的两倍吗？",
    "Training with DDP is no faster than with a single GPU, Mistral-7B LoRA",
    "My multi-GPU run is slower compared to one GPU, Llama-2-13B",
    "Is the host memory of data parallel several times that of a single-GPU run?",
])
def test_a_single_card_baseline_is_not_the_count(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count != 1, parsed.setup
    assert parsed.setup.gpu_count is None
    assert "gpu_count" in parsed.missing  # asked, never defaulted
    assert "count_baseline" in codes(parsed)


@pytest.mark.parametrize("text, count", [
    ("6张卡训练的速度只有单卡的2倍，Llama-2-7B LoRA", 6),
    ("3卡比单卡还慢，Qwen2.5-7B", 3),
    ("On 6 GPUs the Llama-2-7B LoRA is only 2x faster than on a single GPU", 6),
    ("With 3 A100s the epoch takes as long as with one GPU, Mistral-7B", 3),
])
def test_beside_a_baseline_the_multi_gpu_count_is_the_runs(text, count):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count, parsed.setup


@pytest.mark.parametrize("text", [
    "用 torchrun 启动时每个进程独占一张卡，那模型会被复制几份？",
    "DDP 里每个rank用一张卡，数据集会不会每个进程各读一份？",
    "With one GPU per process, does each rank hold its own copy of the dataset?",
    "Each process gets its own GPU under DDP: is the model replicated per rank?",
])
def test_one_card_per_process_is_not_a_count(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count is None, parsed.setup
    assert "count_per_process" in codes(parsed)


# --- 3. device indices ----------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "the 0 GPU always holds 6GB more than the rest under DDP, Llama-2-7B",
    "GPU 0 runs out of memory first while training Mistral-7B with DDP",
    "only cuda:0 fills up, the other cards stay at 10GB, Llama-2-13B LoRA",
    "0号卡的显存比别的卡高很多，Qwen2.5-7B DDP",
    "训练时卡0占满了，其余卡只用了一半，Llama-2-7B",
    "第0张卡总是先 OOM，Qwen2.5-14B LoRA",
])
def test_a_device_index_is_never_a_count(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count is None, parsed.setup
    assert not parsed.problems  # never "must be positive, got 0", never "invalid"


@pytest.mark.parametrize("text, count", [
    ("the 6 GPU run of Llama-2-7B LoRA hangs at step 10", 6),             # a count as an adjective
    ("GPU 1 uses 5GB more than the others on my 4 GPUs, Llama-2-7B", 4),
    ("1号卡显存占用最高，我一共6张卡，Qwen2.5-7B", 6),
])
def test_an_index_beside_a_count_leaves_the_count(text, count):
    assert parse_conversation(text).setup.gpu_count == count


@pytest.mark.parametrize("text", [
    "the 0 GPU takes more memory than the others, my GPU is an A6000",
    "0号卡占用更高，我的卡是A6000",
])
def test_an_index_means_several_cards_so_one_named_card_is_not_one(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count is None
    assert "gpu_count" in parsed.missing
    assert parsed.setup.gpu is not None


@pytest.mark.parametrize("text, count", [
    ("I train Llama-2-7B LoRA on GPUs 2 and 3 and it hangs at step 0", 2),
    ("running on devices 0, 1, 2 the Mistral-7B job OOMs", 3),
    ("cuda:0 and cuda:1 both fill up with Llama-2-13B LoRA", 2),
    ("用2,3号卡训练 Qwen2.5-7B 会卡住", 2),
    ("在0、1、2、3号卡上跑 Llama-2-7B 全参 OOM", 4),
    ("卡0和卡1显存都满了，Qwen2.5-7B LoRA", 2),
])
def test_a_list_of_indices_is_a_weak_count_from_the_device_list(text, count):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count, parsed.setup
    assert parsed.provenance["gpu_count"].confidence < 1.0
    assert note(parsed, "count_from_device_list").values["count"] == count


def test_a_stated_count_outranks_a_device_list():
    parsed = parse_conversation("I have 8 GPUs but use GPUs 0 and 1 for Llama-2-7B LoRA")
    assert parsed.setup.gpu_count == 8


# --- 4. a reference run beside the asker's own -----------------------------------------------------

@pytest.mark.parametrize("text, count", [
    ("I saw that this detector can be trained on 8*V100. I have three V100s and get OOM", 3),
    ("The model card mentions 4 A100s; my two 3090s run out of memory on Llama-2-7B LoRA", 2),
    ("According to the paper, 16 H100s were used. I only have 4 A100s for Llama-2-13B", 4),
    ("I read in the docs that 2 A100s were used for stage one. Would my 3 A6000s do for Llama-2-7B?", 3),
    ("官方说可以用8张V100训练，我这边三张V100就OOM了", 3),
    ("README里写着单卡A100就够，我有两张4090，Qwen2.5-7B LoRA 爆显存", 2),
    ("据说6张卡就能训 Llama-2-13B，我只有三张卡", 3),
])
def test_a_reference_run_is_set_aside_beside_the_askers_own(text, count):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count, parsed.setup
    assert "others_setup" in codes(parsed)


@pytest.mark.parametrize("text", [
    "Can this model be trained on 3 A100s? Llama-2-13B LoRA",
    "I wonder if it can be trained on my 3 A100s, Llama-2-13B LoRA",
    "这个模型能不能在3张A100上训练？Llama-2-13B LoRA",
])
def test_asking_whether_it_runs_on_a_count_keeps_the_count(text):
    assert parse_conversation(text).setup.gpu_count == 3


# --- 5. two cards without a digit ----------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "both of my GPUs hit OOM with Mistral-7B LoRA",
    "dual RTX 3090s, Llama-2-13B QLoRA, DDP or FSDP?",
    "a pair of A6000s, 13B LoRA, which strategy",
    "双4090 跑 Qwen2.5-7B LoRA 爆显存",
    "我的两张卡都 OOM 了，Llama-2-7B 全参",
    "两块3090，Qwen2.5-14B LoRA 用 DDP 还是 FSDP",
])
def test_two_cards_without_a_digit_are_two(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == 2, parsed.setup


# --- 5b. the card's size between the count and the card word --------------------------------------

@pytest.mark.parametrize("text, count, gb", [
    ("Would three 48GB GPUs be enough for Llama-2-13B full fine-tuning?", 3, 48),
    ("I have 6 16 GB cards and Mistral-7B LoRA OOMs", 6, 16),
    ("two 80GB devices, Llama-2-70B QLoRA, DDP?", 2, 80),
    ("用三个48G显卡全参微调 Llama-2-13B 够吗", 3, 48),
    ("我有6个16G的显卡，Qwen2.5-7B LoRA 爆显存", 6, 16),
    ("两个80G的卡能跑 Llama-2-70B QLoRA 吗", 2, 80),
])
def test_a_count_with_the_cards_size_before_the_card_word(text, count, gb):
    s = parse_conversation(text).setup
    assert (s.gpu_count, s.gpu_memory_gb) == (count, gb), s


# --- 5c. machines and their cards: DGX nodes, one machine in the singular, a brand before "GPUs" ---

@pytest.mark.parametrize("text, nodes, per_node", [
    ("We train Llama-2-13B on 3 A100 DGX nodes (8 GPUs each) over InfiniBand", 3, 8),
    ("2 H100 HGX servers with 8 GPUs each, 70B full fine-tune", 2, 8),
    ("our 4 A800 DGX machines, each with 8 GPUs, hang at step 300", 4, 8),
    ("4台H100 DGX节点（每台8卡），训练 Llama-2-13B 中途卡住", 4, 8),
    ("两台 DGX A100 服务器，每台8卡，70B 全参", 2, 8),
    ("3个DGX节点，每个节点8张H100，训练会hang", 3, 8),
])
def test_dgx_nodes_with_their_gpus(text, nodes, per_node):
    s = parse_conversation(text).setup
    assert (s.nodes, s.gpus_per_node, s.gpu_count) == (nodes, per_node, nodes * per_node), s


@pytest.mark.parametrize("text, count", [
    ("fine-tuning Mistral-7B on a 4 A6000 machine and it OOMs", 4),
    ("my 8 H100 server hangs during Llama-2-70B LoRA", 8),
    ("on one 6 A100 box the Qwen2.5-14B full run is killed", 6),
    ("在一台8卡A800的机器上微调 Qwen2.5-7B 被 kill", 8),
    ("一台装了4张4090的服务器，Llama-2-7B LoRA 爆显存", 4),
    ("单机8卡H100，Llama-2-70B LoRA 卡住", 8),
])
def test_one_machine_in_the_singular_holds_the_count(text, count):
    s = parse_conversation(text).setup
    assert s.gpu_count == count and (s.nodes or 1) == 1, s


@pytest.mark.parametrize("text, count", [
    ("OOM on 4 NVIDIA GPUs with 24GB each, Llama-2-7B", 4),
    ("6 AMD GPUs (MI250), Llama-2-13B full", 6),
    ("we have 2 Nvidia cards of 48GB, Llama-2-13B LoRA", 2),
    ("4块NVIDIA显卡，每块24G，Llama-2-7B LoRA 爆显存", 4),
    ("6张英伟达显卡跑 Qwen2.5-14B 全参", 6),
    ("两块AMD显卡，Qwen2.5-7B LoRA", 2),
])
def test_a_brand_between_the_count_and_the_card_word(text, count):
    assert parse_conversation(text).setup.gpu_count == count


# --- 5d. a count offered as the fallback of the first ----------------------------------------------

@pytest.mark.parametrize("text, count, fallback", [
    ("Can a single A100 handle Llama-2-13B LoRA? If not, would 2 A100s be enough?", 1, 2),
    ("Is one 4090 enough for Mistral-7B LoRA, otherwise should I rent 4 GPUs?", 1, 4),
    ("I will try Llama-2-7B full fine-tuning on 2 GPUs; if that doesn't work, 4 GPUs", 2, 4),
    ("单卡3090能跑 Qwen2.5-7B LoRA 吗？不行的话用两张", 1, 2),
    ("一张A100够不够？不够的话四张A100呢，Llama-2-13B 全参", 1, 4),
    ("先用两张卡试 Qwen2.5-14B LoRA，如果不行再上4卡", 2, 4),
])
def test_a_fallback_count_is_weighed_not_the_setup(text, count, fallback):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count, parsed.setup
    assert note(parsed, "count_fallback").values["count"] == fallback


def test_a_fallback_with_no_count_before_it_is_the_count():
    assert parse_conversation("Llama-2-7B LoRA 能跑吗？不行的话用两张4090").setup.gpu_count == 2


# --- 5e. the other cards beside the one named; two kinds of card; a multiplier before "machine" -----

@pytest.mark.parametrize("text, count", [
    ("GPU 0 holds 20GB while the other 5 GPUs sit at 12GB, Llama-2-7B DDP", 6),
    ("the main card takes 14GB and the remaining three take 9GB each", 4),
    ("the master GPU is full, the other seven cards are half empty", 8),
    ("主卡占了20G，另外5张卡各12G，Qwen2.5-7B DDP", 6),
    ("卡0显存满了，其余三张卡只用了一半", 4),
    ("显存都堆在0卡上，剩下的7张卡几乎没用", 8),
])
def test_the_other_cards_and_the_one_named(text, count):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count, parsed.setup
    assert not parsed.problems
    assert note(parsed, "count_rest_plus_one").values["count"] == count


@pytest.mark.parametrize("text", [
    "all the memory lands on 0 GPUs?? Llama-2-7B DDP",
    "显存全在0卡上，Qwen2.5-7B DDP",
    "只有0卡在跑，Llama-2-7B",
])
def test_zero_cards_is_an_index_never_a_count(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count != 0
    assert not parsed.problems


@pytest.mark.parametrize("text, count", [
    ("I train on two 48G A6000s and one 80G A100, Llama-2-13B LoRA", 3),
    ("three 3090s and one 4090, Llama-2-7B LoRA, DDP or FSDP?", 4),
    ("2 A100 plus 2 H100 in one box, Mistral-7B full", 4),
    ("两张A6000和一张A100，Llama-2-13B LoRA", 3),
    ("三张3090加一张4090，Qwen2.5-7B LoRA", 4),
    ("2块24G的卡和1块48G的卡，Qwen2.5-14B LoRA", 3),
])
def test_two_kinds_of_card_are_summed(text, count):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count, parsed.setup
    assert note(parsed, "count_summed").values["count"] == count


@pytest.mark.parametrize("text", [
    "tested on 2 A100s and 4 A100s, Llama-2-7B",      # one kind of card twice: two runs, not a sum
    "2张A100和4张A100都试过，Qwen2.5-7B",
])
def test_one_kind_of_card_counted_twice_is_not_summed(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count in (2, 4, None)
    assert "count_summed" not in codes(parsed)


@pytest.mark.parametrize("text", [
    "I have a 24GB*4 machine and Llama-2-7B LoRA OOMs",
    "on a 48G x 4 server, Qwen2.5-14B LoRA",
    "一台 24G*4 的机器，Qwen2.5-7B LoRA 爆显存",
])
def test_a_multiplier_before_machine_counts_cards_not_nodes(text):
    s = parse_conversation(text).setup
    assert s.gpu_count == 4 and (s.nodes or 1) == 1, s


# --- 5f. the same run tried on several machines in turn is not a multi-node run --------------------

@pytest.mark.parametrize("text, count", [
    ("I get the same OOM on two different machines with 2 RTX 3090 each, Llama-2-7B LoRA", 2),
    ("I tried it on 3 computers and all of them crash, one 4090 each", 1),
    ("ran it on 2 separate servers, same hang, Llama-2-7B on 4 A100s", 4),
    ("两张3090微调 Qwen2.5-7B 爆显存，在两台电脑上执行都一样", 2),
    ("换了三台机器都一样，单卡4090 Qwen2.5-7B LoRA 爆显存", 1),
    ("用两台不同的服务器也同样OOM，4张A100，Llama-2-13B", 4),
])
def test_machines_tried_in_turn_are_not_nodes(text, count):
    parsed = parse_conversation(text)
    s = parsed.setup
    assert s.gpu_count == count and (s.nodes or 1) == 1, s
    assert "machines_tried" in codes(parsed)


@pytest.mark.parametrize("text, nodes", [
    ("2 nodes with 4 A100s each, Llama-2-13B, DDP", 2),
    ("两台机器，每台8卡，训练很慢", 2),
])
def test_machines_that_train_together_stay_nodes(text, nodes):
    assert parse_conversation(text).setup.nodes == nodes


# --- 5g. some of the machine's cards are the run's count ------------------------------------------

@pytest.mark.parametrize("text, used, total", [
    ("I use 6 of the 8 GPUs on the node for Llama-2-7B LoRA", 6, 8),
    ("only 3 of our 4 A100s are free, Llama-2-13B LoRA", 3, 4),
    ("training on 2 out of 8 GPUs, Mistral-7B full", 2, 8),
    ("服务器有8张卡，我只用了其中6张，Qwen2.5-7B LoRA", 6, 8),
    ("8卡的机器上只能用3张，Llama-2-13B 全参", 3, 8),
    ("一共4张A100，分给我2张，Qwen2.5-14B LoRA", 2, 4),
])
def test_some_of_the_machines_cards_are_the_count(text, used, total):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == used, parsed.setup
    n = note(parsed, "count_subset")
    assert (n.values["used"], n.values["total"]) == (used, total)


@pytest.mark.parametrize("text, used", [
    ("I only have 12 A40 GPUs. CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 accelerate launch train.py OOMs with Mistral-7B", 6),
    ("We own 8 A100s; CUDA_VISIBLE_DEVICES=4,5,6 python train.py, Llama-2-7B LoRA hangs", 3),
    ("我们有8张3090，CUDA_VISIBLE_DEVICES=0,1 python train.py 跑 Qwen2.5-7B LoRA 爆显存", 2),
    ("实验室有6张A800，CUDA_VISIBLE_DEVICES=2,3,4 训练 Llama-2-13B 卡住", 3),
])
def test_the_visible_devices_of_the_launch_are_the_run_on_a_bigger_machine(text, used):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == used, parsed.setup
    assert "count_subset" in codes(parsed)


def test_visible_devices_equal_to_the_stated_count_change_nothing():
    parsed = parse_conversation("4 * A800 80G显卡，CUDA_VISIBLE_DEVICES=4,5,6,7 python train.py, Qwen2.5-7B")
    assert parsed.setup.gpu_count == 4
    assert "count_subset" not in codes(parsed)


# --- 5h. an OOM line whose words ran together still gives the card's capacity ---------------------

@pytest.mark.parametrize("text, gb", [
    ("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB totalcapacity; 6.10 GiB already allocated; "
     "0 bytes free) on my card, how do I lower the batch?", 8),
    ("RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 10.76 GiB total capacty; 9.80 GiB "
     "alreadyallocated) with batch 16, what should I change?", 11),
    ("Tried to allocate 2.00 MiB (GPU 0; 5.80 GiB totalcapacity; 5.01 GiB already allocated) when fine-tuning, any fix?", 6),
    ("训练报错：CUDA out of memory. Tried to allocate 88.00 MiB (GPU 0; 7.79 GiB totalcapacity; 6.68 GiB already "
     "allocated)，怎么调小batch？", 8),
    ("显存爆了 Tried to allocate 50.00 MiB (GPU 0; 10.76 GiB total capacty; 10.01 GiB already allocated)，有什么办法", 11),
    ("Tried to allocate 12.00 MiB (GPU 0; 5.80 GiB totalcapacity; 5.40 GiB alreadyallocated) 微调时报这个错，怎么办", 6),
])
def test_an_oom_line_with_its_words_run_together_gives_the_capacity(text, gb):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_memory_gb == gb, parsed.setup
    assert parsed.observed.allocated_gib is not None and parsed.observed.allocated_gib < gb


@pytest.mark.parametrize("text,count", [
    ("听说两张4090就能QLoRA微调70B？开梯度检查点的话用FSDP还是DDP？", 2),
    ("据说8张A100就能全参微调70B吗？用FSDP还是DDP？", 8),
    ("I heard two 4090s can QLoRA a 70B model? FSDP or DDP with checkpointing?", 2),
    ("号称4张3090能跑13B全参微调，是真的吗？", 4),
])
def test_a_setup_heard_of_that_the_question_asks_about_is_its_setup(text, count):
    """Hearsay asked as the question ("听说…就能…？") is the setup asked about, not a reference run beside
    the asker's own; with a card of the asker's own named, the reference stays set aside."""
    assert parse_conversation(text).setup.gpu_count == count


def test_a_reference_beside_the_askers_own_cards_stays_aside():
    parsed = parse_conversation("README里写着4张2080Ti就能训练，我只有两张，够吗？")
    assert parsed.setup.gpu_count == 2 and "others_setup" in [n.code for n in parsed.notes]
