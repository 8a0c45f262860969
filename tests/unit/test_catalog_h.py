"""Batch h's catalog classes (evals/first_contact.md, "Batch 2026-12-02h", failures class 1), each as a rule
tested in phrasings of both languages that are not the threads' own words:

- cards the catalog lacked: Pascal GeForce and TITANs, Volta/Turing TITANs, Quadro RTX, more RTX A-series
  (figures from their sources; no bf16 before Ampere; Pascal's 16-bit training peak is its fp32 rate);
- card names with a letter O for a zero, a suffix after it ("L4OS" -> L40S), written glued or spaced;
- bare card numbers ("1080") read as a card only with card context, never as a resolution or a length;
- OOM lines whose words run together, are misspelt or are in Chinese: the card's total, not the allocated;
- generative models the model catalog lacked (MusicGen, AudioGen, Lumina).
"""

from __future__ import annotations

import pytest

from bot.catalog import list_gpus, lookup_gpu, resolve_model
from bot.catalog.accelerators import FP32_TFLOPS, fp32_tflops
from bot.parse import parse_conversation
from bot.understand.logs import read_logs

# ---- the cards ---------------------------------------------------------------------------------

NEW_CARDS = {  # catalog name -> memory as marketed
    "GTX 1080 Ti 11GB": 11, "GTX 1080 8GB": 8, "GTX 1070 Ti 8GB": 8, "GTX 1070 8GB": 8, "GTX 1060 6GB": 6,
    "GTX 1060 3GB": 3, "GTX 1050 Ti 4GB": 4, "GTX 1050 2GB": 2, "TITAN X Pascal 12GB": 12, "TITAN Xp 12GB": 12,
    "TITAN V 12GB": 12, "TITAN RTX 24GB": 24, "Quadro RTX 8000 48GB": 48, "Quadro RTX 6000 24GB": 24,
    "Quadro RTX 5000 16GB": 16, "Quadro RTX 4000 8GB": 8, "RTX A5500 24GB": 24, "RTX A4500 20GB": 20,
    "RTX A2000 12GB": 12, "RTX A2000 6GB": 6, "Quadro P6000 24GB": 24, "Quadro P5000 16GB": 16,
    "Quadro GV100 32GB": 32,
}
PASCAL = [n for n in NEW_CARDS if n.startswith(("GTX", "TITAN X", "Quadro P"))]


@pytest.mark.parametrize("name", sorted(NEW_CARDS))
def test_each_new_card_has_memory_a_source_and_an_fp32_rate(name):
    card = lookup_gpu(name)
    assert card.memory_gb == NEW_CARDS[name]
    assert card.source_url.startswith("https://") and card.hbm_tb_s > 0 and card.intra_link_gb_s > 0
    assert FP32_TFLOPS[name] > 0


@pytest.mark.parametrize("name", sorted(NEW_CARDS))
def test_no_bf16_before_ampere(name):
    card = lookup_gpu(name)
    ampere = name.startswith("RTX A")
    assert card.supports_bf16 == ampere
    assert card.default_precision == ("bf16-mixed" if ampere else "fp16-mixed")
    if not ampere:  # no TF32 tensor cores either: TF32 on changes nothing
        assert fp32_tflops(card, tf32=True) == fp32_tflops(card)


@pytest.mark.parametrize("name", PASCAL)
def test_pascal_16_bit_peak_is_its_fp32_rate(name):
    # no tensor cores; fp16 GEMMs compute in fp32 (PyTorch's cublasGemmEx compute type), so the peak a
    # mixed-precision run can reach is the fp32 one, never the 1/64 native fp16 rate nor a tensor figure
    card = lookup_gpu(name)
    assert card.bf16_tflops == FP32_TFLOPS[name] == fp32_tflops(card)
    assert card.bf16_tflops < 13  # the fastest Pascal GeForce/TITAN/Quadro (Quadro P6000, 12.63)


def test_turing_tensor_peaks_follow_the_titan_rtx_ratio():
    titan = lookup_gpu("TITAN RTX")
    ratio = titan.bf16_tflops / FP32_TFLOPS[titan.name]  # 130 / 16.3, NVIDIA's page
    for name in ("Quadro RTX 8000 48GB", "Quadro RTX 6000 24GB", "Quadro RTX 5000 16GB", "Quadro RTX 4000 8GB"):
        card = lookup_gpu(name)
        assert card.approximate  # derived, so marked
        assert card.bf16_tflops == pytest.approx(ratio * FP32_TFLOPS[name], rel=0.01)


def test_catalog_names_are_unique():
    names = [g.name for g in list_gpus()]
    assert len(names) == len(set(names))


# ---- names as typed: glued, spaced, a letter O for a zero ------------------------------------------

@pytest.mark.parametrize("text,card,count", [
    ("Training on 2x GTX1080TI is slow, why?", "GTX 1080 Ti 11GB", 2),
    ("My rig: 3 x 1080 Ti, DDP hangs at init", "GTX 1080 Ti 11GB", 3),
    ("Is a single TITAN Xp enough to fine-tune a 1B model?", "TITAN Xp 12GB", 1),
    ("We got 4 Quadro RTX 8000 cards from the render farm", "Quadro RTX 8000 48GB", 4),
    ("用两张1080ti训练很慢", "GTX 1080 Ti 11GB", 2),
    ("我只有一张gtx1050ti，4G显存", "GTX 1050 Ti 4GB", 1),
    ("服务器是4张RTX A4500，能微调13B吗", "RTX A4500 20GB", 4),
    ("实验室有两张TITAN RTX，用DDP还是FSDP", "TITAN RTX 24GB", 2),
])
def test_card_names_glued_or_spaced(text, card, count):
    setup = parse_conversation(text).setup
    assert setup.gpu == card
    assert setup.gpu_count == count
    assert setup.gpu_memory_gb == NEW_CARDS[card]


@pytest.mark.parametrize("text,card,count", [
    ("We fine-tune on 4 L4OS and memory runs out at step 10.", "L40S 48GB", 4),
    ("Our cluster has 8 H1OO, is FSDP worth it?", "H100 80GB SXM", 8),
    ("I rent two A1OO 40G for LoRA.", "A100 40GB SXM", 2),
    ("我们有4张L4OS，训练7B会不会爆显存？", "L40S 48GB", 4),
    ("实验室有8张H1OO，用DDP还是FSDP？", "H100 80GB SXM", 8),
    ("两块A1OO 80G跑全参微调够吗", "A100 80GB SXM", 2),
])
def test_letter_o_for_a_zero_with_or_without_a_suffix(text, card, count):
    setup = parse_conversation(text).setup
    assert setup.gpu == card  # never the L4 / A10 the first characters spell
    assert setup.gpu_count == count


@pytest.mark.parametrize("text", ["4 x L4 so far, L4 OK for now?", "我们用L4推理，L4 够用"])
def test_a_card_followed_by_other_letters_stays_the_card(text):
    assert parse_conversation(text).setup.gpu == "L4 24GB"


# ---- bare card numbers: a card only with card context -------------------------------------------------

@pytest.mark.parametrize("text,card,count", [
    ("I have two 1070 cards, can I train a 1B model?", "GTX 1070 8GB", 2),
    ("Training on 4x 1080 GPUs with DDP", "GTX 1080 8GB", 4),
    ("my GPU is a 1060 3G, OOM at batch 8", "GTX 1060 3GB", None),
    ("我用的是两张1080显卡", "GTX 1080 8GB", 2),
    ("显卡是1070，8G显存，训练时报OOM", "GTX 1070 8GB", None),
    ("3块1080跑DDP很慢", "GTX 1080 8GB", 3),
])
def test_bare_number_with_card_context_is_the_card(text, card, count):
    setup = parse_conversation(text).setup
    assert setup.gpu == card
    if count is not None:
        assert setup.gpu_count == count


@pytest.mark.parametrize("text,card", [
    ("I train at 1080p resolution on 2 A100s", "A100"),
    ("images are 1920x1080, 4 GPUs, DDP", None),
    ("seq len 1080 on 8 H100", "H100"),
    ("分辨率1080，用4张3090训练", "RTX 3090"),
    ("输入尺寸1920x1080，两张4090", "RTX 4090"),
    ("序列长度1080，8张A100", "A100"),
])
def test_bare_number_as_resolution_or_length_is_not_a_card(text, card):
    gpu = parse_conversation(text).setup.gpu
    assert not (gpu or "").startswith("GTX")
    if card is None:
        assert gpu is None
    else:
        assert gpu is not None and gpu.startswith(card)


# ---- OOM lines written together, misspelt or in Chinese -------------------------------------------

@pytest.mark.parametrize("text,capacity,card_gb,allocated", [
    ("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 6.00 GiB totalcapacity; 5.10 GiB already "
     "allocated; 0 bytes free)", 6.0, 6.0, 5.1),
    ("RuntimeError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 1; 10.76 GiB total capacty; 9.02 GiB "
     "already allocated)", 10.76, 11.0, 9.02),
    ("Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB totalcapacity; 14.1 GiB alreadyallocated; 30 MiB free)",
     15.78, 16.0, 14.1),
    ("训练报错：CUDA显存不足。尝试分配 64.00 MiB (GPU 0; 7.93 GiB 总容量; 6.80 GiB 已分配; 12.00 MiB 空闲)", 7.93, 8.0, 6.8),
    ("报错 Tried to allocate 88.00 MiB (GPU 0; 3.94 GiB totalcapacity; 3.10 GiB already allocated)，怎么办", 3.94,
     4.0, 3.1),
    ("爆显存了：尝试分配 1.00 GiB（GPU 0；23.65 GiB 总容量；21.40 GiB 已分配）", 23.65, 24.0, 21.4),
])
def test_oom_line_reads_the_total_not_the_allocated(text, capacity, card_gb, allocated):
    logs = read_logs(text)
    assert logs.observed.oom
    assert logs.observed.capacity_gib == capacity
    assert logs.observed.allocated_gib == allocated
    assert logs.gpu_memory_gb == card_gb
    assert parse_conversation(text).setup.gpu_memory_gb == card_gb  # never the allocated figure


# ---- models the catalog lacked ------------------------------------------------------------------------

@pytest.mark.parametrize("name,entry,params_b", [
    ("facebook/musicgen-small", "MusicGen-small", 0.3), ("musicgen medium", "MusicGen-medium", 1.5),
    ("MusicGen-large", "MusicGen-large", 3.3), ("musicgen-melody", "MusicGen-melody", 1.5),
    ("audiogen medium", "AudioGen-medium", 1.5), ("Lumina-Next 2B", "Lumina-Next-SFT-2B", 2.0),
    ("Lumina-T2I", "Lumina-T2I-5B", 5.0), ("Lumina-Image-2.0", "Lumina-Image-2.0", 2.0),
])
def test_generative_models_resolve_with_their_published_count(name, entry, params_b):
    model = resolve_model(name).model
    assert model is not None and model.name == entry
    assert model.approximate and model.published_params_b == params_b
    assert model.source_url.startswith("https://huggingface.co/")


@pytest.mark.parametrize("text,params_b", [
    ("Fine-tuning facebook/musicgen-medium on one A100 runs out of memory", 1.5),
    ("How much memory does musicgen-large need to fine-tune on 4 GPUs?", 3.3),
    ("Can I train Lumina-Next-SFT on two 4090s?", 2.0),
    ("微调musicgen-small时单卡爆显存", 0.3),
    ("用8张A800训练audiogen-medium需要多久", 1.5),
    ("Lumina-T2I 能在4张V100上训练吗", 5.0),
])
def test_generative_models_named_in_questions(text, params_b):
    from bot.understand.spans import find_models, model_params_b

    found = find_models(text)
    assert found and model_params_b(found[0].name) == params_b


@pytest.mark.parametrize("text,card", [
    ("4x 32GV100 nodes for pretraining", "V100 32GB SXM2"), ("两台机器各8*32GV100", "V100 32GB SXM2"),
    ("a Quadro GV100 in the workstation", "Quadro GV100 32GB"), ("工作站里一张Quadro GV100", "Quadro GV100 32GB"),
])
def test_gv100_alone_is_the_v100_chip_the_quadro_needs_its_name(text, card):
    assert parse_conversation(text).setup.gpu == card
