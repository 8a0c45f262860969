"""Accelerator catalog: the cards people train on, with the figures the calculator needs.

Each entry: memory as marketed, bf16 support, dense (no sparsity) bf16 and fp16 tensor peaks,
memory bandwidth, the default link between cards in one server, the vendor and the
``torch.distributed`` backend the card needs (``nccl`` for NVIDIA, and for AMD, where ROCm builds
of PyTorch run RCCL behind the ``nccl`` name; ``hccl`` for Huawei Ascend via ``torch_npu`` and
for Intel Gaudi via ``habana_frameworks``), and the spec sheet the figures come from.

GeForce cards: the peaks are the "FP16 tensor with FP32 accumulate" column of NVIDIA's
architecture whitepapers (what mixed-precision training runs), not the doubled FP16-accumulate
figure. RTX 40-series cards have no NVLink and peer-to-peer is off in the driver, so they talk
over PCIe through host memory.

A card the catalog lacks is accepted by its memory size through ``custom_gpu``: throughput and
link figures are then placeholders, and the spec says so (``approximate``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from bot.catalog.names import UnknownNameError, suggest

Vendor = Literal["nvidia", "amd", "intel", "huawei", "unknown"]


@dataclass(frozen=True)
class GPUSpec:
    """One accelerator model. Link bandwidth is per card, per direction, in GB/s (10^9 bytes).

    ``intra_link`` is the class of the in-server link: ``"nvlink"`` for a GPU-to-GPU fabric
    (NVLink, AMD Infinity Fabric, Huawei HCCS, Gaudi's on-chip RoCE), ``"pcie"`` for the host bus;
    ``intra_link_name`` says which one it is."""

    name: str
    memory_gb: float  # nominal card size as marketed (80 for an "80GB" card)
    bf16_tflops: float  # dense (no sparsity) bf16 tensor peak; fp16 where bf16 is absent
    hbm_tb_s: float  # memory bandwidth, TB/s
    intra_link: Literal["nvlink", "pcie"]
    intra_link_name: str
    intra_link_gb_s: float
    supports_bf16: bool = True
    source_url: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)
    # --- added with issue 13 --------------------------------------------------------------
    fp16_tflops: float | None = None  # dense fp16 tensor peak; None: same as bf16_tflops
    vendor: Vendor = "nvidia"
    backend: Literal["nccl", "hccl", "gloo"] = "nccl"  # torch.distributed backend name
    device_type: Literal["cuda", "npu", "hpu"] = "cuda"  # torch device ("cuda" under ROCm too)
    approximate: bool = False  # figures other than memory are placeholders or unofficial
    notes: str = ""
    # The host bus of an NVLink card, per direction: what its GPUs share when run without NVLink
    # ("4 x V100 without NVLink"). None: PCIe Gen4 x16, as on the cards of the last five years.
    host_pcie_gb_s: float | None = None

    @property
    def memory_gib(self) -> float:
        """Usable bytes as GiB. Cards sold as "80GB" hold 80 GiB of HBM (nvidia-smi: 81920 MiB)."""
        return self.memory_gb

    @property
    def fp16_peak_tflops(self) -> float:
        return self.fp16_tflops if self.fp16_tflops is not None else self.bf16_tflops

    @property
    def default_precision(self) -> str:
        """bf16 autocast where the card has bf16; otherwise fp16 autocast with a loss scaler
        (torch.amp.GradScaler, https://pytorch.org/docs/stable/amp.html#gradient-scaling)."""
        return "bf16-mixed" if self.supports_bf16 else "fp16-mixed"


_NV_DC = "https://www.nvidia.com/en-us/data-center/"
_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
_V100 = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
_P100 = "https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf"
_P40 = "https://images.nvidia.com/content/pdf/tesla/184427-Tesla-P40-Datasheet-NV-Final-Letter-Web.pdf"
# fp16 arithmetic throughput per SM per clock by compute capability (6.1: 2 vs 128 fp32 results)
_CUDA_THROUGHPUT = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions"
_RTX_3090_TI = "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3090-3090ti/"
_AMPERE_GA102 = "https://images.nvidia.com/aem-dam/en-zz/Solutions/geforce/ampere/pdf/NVIDIA-ampere-GA102-GPU-Architecture-Whitepaper-V1.pdf"
_ADA = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
_BLACKWELL_RTX = "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf"
# TechPowerUp's GPU database: memory, bandwidth and the fp32 rate of cards NVIDIA gives no datasheet for
_TPU = "https://www.techpowerup.com/gpu-specs/"
# PyTorch's fp16 GEMM: cublasGemmEx with CUDA_R_16F inputs and an fp32 compute type (CUDA_R_32F)
_TORCH_FP16_GEMM = "https://github.com/pytorch/pytorch/issues/123157"
_PASCAL_NOTE = ("no tensor cores, no bf16: fp16 mixed precision saves memory but its matmuls run at the fp32 "
                "rate (the figure); native fp16 math is 1/64 of it")
_PCIE3, _PCIE4, _PCIE5 = ("PCIe Gen3 x16", 16.0), ("PCIe Gen4 x16", 32.0), ("PCIe Gen5 x16", 64.0)
_NO_P2P = "PCIe Gen4 x16 (no NVLink; P2P off on GeForce 40-series)"


def _pcie(gen: tuple[str, float], label: str | None = None) -> dict:
    return dict(intra_link="pcie", intra_link_name=label or gen[0], intra_link_gb_s=gen[1])


def _fabric(label: str, gb_s: float) -> dict:
    return dict(intra_link="nvlink", intra_link_name=label, intra_link_gb_s=gb_s)


_NVLINK3 = _fabric("NVLink 3 (600 GB/s total)", 300)
_NVLINK4 = _fabric("NVLink 4 (900 GB/s total)", 450)

_GPUS: list[GPUSpec] = [
    # --- NVIDIA data center: Ampere --------------------------------------------------------------
    GPUSpec("A100 40GB SXM", 40, 312, 1.555, **_NVLINK3, source_url=_A100,
            aliases=("a100-40gb", "a100 40g", "a100-40g", "a100 40", "a100-sxm4-40gb", "a100 40gb sxm4")),
    GPUSpec("A100 40GB PCIe", 40, 312, 1.555, **_pcie(_PCIE4), source_url=_A100,
            aliases=("a100-40gb-pcie", "a100 40g pcie", "a100-pcie-40gb")),
    GPUSpec("A100 80GB SXM", 80, 312, 2.039, **_NVLINK3, source_url=_A100,
            aliases=("a100-80gb", "a100 80g", "a100", "a100-sxm4-80gb", "a100 80", "a100-80g", "a100 80gb sxm4")),
    GPUSpec("A100 80GB PCIe", 80, 312, 1.935, **_pcie(_PCIE4), source_url=_A100,
            aliases=("a100-80gb-pcie", "a100 pcie", "a100-pcie-80gb", "a100 80g pcie")),
    GPUSpec("A800 80GB SXM", 80, 312, 2.039, **_fabric("NVLink 3, export variant (400 GB/s total)", 200),
            source_url="https://www.nvidia.cn/data-center/a800/",
            aliases=("a800", "a800-80gb", "a800 80g", "a800-sxm4-80gb", "a800-80g")),
    GPUSpec("A800 80GB PCIe", 80, 312, 1.935, **_pcie(_PCIE4), source_url="https://www.nvidia.cn/data-center/a800/",
            aliases=("a800 pcie", "a800-80gb-pcie", "a800-pcie-80gb")),
    GPUSpec("A10 24GB", 24, 125, 0.6, **_pcie(_PCIE4), source_url=f"{_NV_DC}products/a10-gpu/",
            aliases=("a10", "a10-24gb", "a10 24g")),
    GPUSpec("A10G 24GB", 24, 70, 0.6, **_pcie(_PCIE4), source_url="https://aws.amazon.com/ec2/instance-types/g5/",
            aliases=("a10g", "a10g-24gb", "a10g 24g", "aws a10g", "g5"), approximate=True,
            notes="AWS-only variant of the A10; NVIDIA publishes no tensor peak, ~70 TFLOPS is the "
                  "commonly measured dense bf16 figure"),
    GPUSpec("A40 48GB", 48, 149.7, 0.696, **_pcie(_PCIE4),
            source_url="https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf",
            aliases=("a40", "a40-48gb", "a40 48g"), notes="a 2-way NVLink bridge is optional"),
    GPUSpec("RTX A6000 48GB", 48, 154.8, 0.768, **_pcie(_PCIE4),
            source_url="https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/quadro-product-literature/proviz-print-nvidia-rtx-a6000-datasheet-us-nvidia-1454980-r9-web%20(1).pdf",
            aliases=("a6000", "rtx a6000", "rtxa6000", "a6000 48g", "rtx-a6000"),
            notes="a 2-way NVLink bridge is optional"),
    # --- NVIDIA data center: Pascal (still in threads: "8*P100") ------------------------------------
    # No tensor cores: fp16 runs on the CUDA cores at twice the fp32 rate (21.2 vs 10.6 TFLOPS on
    # SXM2, 18.7 on PCIe); HBM2 at 732 GB/s; NVLink 1, 160 GB/s total per SXM2 card (datasheet).
    GPUSpec("P100 16GB SXM2", 16, 21.2, 0.732, **_fabric("NVLink 1 (160 GB/s total)", 80), supports_bf16=False,
            host_pcie_gb_s=_PCIE3[1], source_url=_P100, notes="no tensor cores; fp16 at 2x the fp32 rate",
            aliases=("p100", "tesla p100", "p100 16g", "p100-16gb", "p100-sxm2-16gb", "p100 sxm2")),
    GPUSpec("P100 16GB PCIe", 16, 18.7, 0.732, **_pcie(_PCIE3), supports_bf16=False, source_url=_P100,
            notes="no tensor cores; fp16 at 2x the fp32 rate",
            aliases=("p100 pcie", "p100-pcie-16gb", "tesla p100 pcie")),
    # Tesla P40 (GP102, compute capability 6.1): 24 GB GDDR5 at 346 GB/s, 12 TFLOPS fp32, PCIe Gen3
    # x16 (datasheet). No tensor cores and fp16 at 1/64 of the fp32 rate on 6.1 (_CUDA_THROUGHPUT):
    # 12 / 64 = 0.19 TFLOPS, which is why P40 runs train in fp32.
    GPUSpec("P40 24GB", 24, 0.19, 0.346, **_pcie(_PCIE3), supports_bf16=False, source_url=_P40,
            notes="no tensor cores; fp16 at 1/64 of the 12 TFLOPS fp32 rate (train in fp32)",
            aliases=("p40", "tesla p40", "p40 24g", "p40-24gb", "tesla p40 24gb")),
    # --- NVIDIA data center: Volta, Turing, Ada ----------------------------------------------------
    # Host interface PCIe Gen3 x16: 32 GB/s in both directions, 16 per direction (datasheet)
    GPUSpec("V100 16GB SXM2", 16, 125, 0.9, **_fabric("NVLink 2 (300 GB/s total)", 150), supports_bf16=False,
            host_pcie_gb_s=_PCIE3[1],
            source_url=_V100, aliases=("v100-16gb", "v100 16g", "v100-16g", "v100-sxm2-16gb")),
    # Host interface PCIe Gen3 x16: 32 GB/s in both directions, 16 per direction (datasheet)
    GPUSpec("V100 32GB SXM2", 32, 125, 0.9, **_fabric("NVLink 2 (300 GB/s total)", 150), supports_bf16=False,
            host_pcie_gb_s=_PCIE3[1],
            source_url=_V100, aliases=("v100", "v100-32gb", "v100 32g", "v100-32g", "v100-sxm2-32gb")),
    GPUSpec("T4 16GB", 16, 65, 0.32, **_pcie(_PCIE3), supports_bf16=False,
            source_url="https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf",
            aliases=("t4", "tesla t4", "t4 16g", "t4-16gb")),
    GPUSpec("L4 24GB", 24, 121, 0.3, **_pcie(_PCIE4), source_url=f"{_NV_DC}l4/",
            aliases=("l4", "l4-24gb", "l4 24g")),
    GPUSpec("L40S 48GB", 48, 362, 0.864, **_pcie(_PCIE4), source_url=f"{_NV_DC}l40s/",
            aliases=("l40s", "l40s-48gb", "l40s 48g")),
    # --- NVIDIA Hopper / Blackwell -------------------------------------------------------------
    GPUSpec("H100 80GB SXM", 80, 989, 3.35, **_NVLINK4, source_url=_H100,
            aliases=("h100", "h100-80gb", "h100 sxm", "h100-sxm", "h100 80g", "h100-sxm5-80gb", "h100-80g",
                     "h100 sxm5")),
    GPUSpec("H100 80GB PCIe", 80, 756, 2.0, **_pcie(_PCIE5), source_url=_H100,
            aliases=("h100-pcie", "h100 pcie", "h100-80gb-pcie", "h100 80g pcie")),
    GPUSpec("H100 NVL 94GB", 94, 835, 3.9, **_fabric("NVLink bridge (600 GB/s total)", 300), source_url=_H100,
            aliases=("h100 nvl", "h100-nvl", "h100 nvl 94g", "h100 nvl 96g", "h100 96g", "h100-96gb", "h100 94g"),
            notes="sold as 94 GB usable (96 GB physical); NVLink bridges pair cards, PCIe between pairs"),
    GPUSpec("H800 80GB SXM", 80, 989, 3.35, **_fabric("NVLink 4, export variant (400 GB/s total)", 200),
            source_url="https://www.nvidia.cn/data-center/h800/", aliases=("h800", "h800-80gb", "h800 80g",
                                                                            "h800-sxm5-80gb")),
    GPUSpec("H20 96GB", 96, 148, 4.0, **_NVLINK4, source_url="https://www.nvidia.cn/data-center/h20/",
            aliases=("h20", "h20-96gb", "h20 96g"), approximate=True,
            notes="China export part; NVIDIA's product brief is not public, figures are the widely "
                  "reported ones (96 GB HBM3, 148 TFLOPS bf16 dense, 4.0 TB/s, NVLink 900 GB/s)"),
    GPUSpec("H200 141GB SXM", 141, 989, 4.8, **_NVLINK4, source_url=f"{_NV_DC}h200/",
            aliases=("h200", "h200-141gb", "h200 141g", "h200 sxm", "h200-sxm-141gb")),
    GPUSpec("B200 180GB", 180, 2250, 8.0, **_fabric("NVLink 5 (1.8 TB/s total)", 900),
            source_url=f"{_NV_DC}hgx/", aliases=("b200", "b200-180gb", "b200 180g", "b200 192g", "hgx b200"),
            notes="HGX/DGX B200 per-GPU figures (1.44 TB over 8 GPUs; bf16 dense = half the sparse peak)"),
    # --- NVIDIA GeForce: PCIe only by default ------------------------------------------------------
    GPUSpec("RTX 3080 10GB", 10, 59.5, 0.76, **_pcie(_PCIE4, "PCIe Gen4 x16 (no NVLink)"), source_url=_AMPERE_GA102,
            aliases=("3080", "rtx3080", "rtx 3080", "geforce rtx 3080", "3080 10g")),
    GPUSpec("RTX 3090 24GB", 24, 71, 0.936, **_pcie(_PCIE4), source_url=_AMPERE_GA102,
            aliases=("3090", "rtx3090", "rtx 3090", "geforce rtx 3090", "3090 24g"),
            notes="a 2-way NVLink bridge is optional"),
    # RTX 3090 Ti: the full GA102, 84 SMs at a 1.86 GHz boost, 24 GB GDDR6X at 21 Gbps on 384 bits =
    # 1008 GB/s (product page); dense fp16/bf16 tensor with fp32 accumulate 512 FLOP/clk/SM on GeForce
    # GA102 (_AMPERE_GA102: the 3090's 71 TFLOPS = 82 SMs x 1.695 GHz x 512), so 84 x 1.86 x 512 = 80 TFLOPS
    GPUSpec("RTX 3090 Ti 24GB", 24, 80, 1.008, **_pcie(_PCIE4), source_url=_RTX_3090_TI,
            aliases=("3090 ti", "3090ti", "rtx 3090 ti", "rtx3090ti", "geforce rtx 3090 ti", "3090 ti 24g"),
            notes="a 2-way NVLink bridge is optional"),
    GPUSpec("RTX 4090 24GB", 24, 165.2, 1.008, **_pcie(_PCIE4, _NO_P2P), source_url=_ADA,
            aliases=("4090", "rtx4090", "rtx 4090", "geforce rtx 4090", "4090 24g", "4090d", "rtx 4090d")),
    GPUSpec("RTX 5090 32GB", 32, 209.5, 1.792, **_pcie(_PCIE5, "PCIe Gen5 x16 (no NVLink)"), source_url=_BLACKWELL_RTX,
            aliases=("5090", "rtx5090", "rtx 5090", "geforce rtx 5090", "5090 32g")),
    # Cards the architecture whitepapers do not tabulate: memory and bandwidth from the product page;
    # the tensor peak is SMs x boost clock x the architecture's dense FP16-with-FP32-accumulate rate per
    # SM per clock on GeForce (512 FLOP: RTX 3090 71 TFLOPS / (82 SMs x 1.695 GHz), RTX 4090 165.2 /
    # (128 x 2.52), RTX 5090 209.5 / (170 x 2.41), from _AMPERE_GA102, _ADA, _BLACKWELL_RTX), so they
    # are marked approximate.
    GPUSpec("RTX 3060 12GB", 12, 25.5, 0.36, **_pcie(_PCIE4, "PCIe Gen4 x16 (no NVLink)"), approximate=True,
            source_url="https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3060-3060ti/",
            notes="tensor peak derived: 28 SMs x 1.777 GHz x 512", aliases=(
                "3060", "rtx3060", "rtx 3060", "geforce rtx 3060", "3060 12g", "rtx 3060 12g", "3060 12gb")),
    GPUSpec("RTX 3080 12GB", 12, 61.3, 0.912, **_pcie(_PCIE4, "PCIe Gen4 x16 (no NVLink)"), approximate=True,
            source_url="https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3080-3080ti/",
            notes="tensor peak derived: 70 SMs x 1.71 GHz x 512", aliases=("3080 12g", "rtx 3080 12g", "3080 12gb")),
    GPUSpec("RTX 4060 Ti 16GB", 16, 44.1, 0.288, **_pcie(("PCIe Gen4 x8", 16.0), "PCIe Gen4 x8 (no NVLink)"),
            approximate=True, source_url="https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4060-4060ti/",
            notes="tensor peak derived: 34 SMs x 2.535 GHz x 512; the card has an x8 host link", aliases=(
                "4060ti", "4060 ti", "rtx 4060 ti", "rtx4060ti", "4060ti 16g", "4060 ti 16g", "rtx 4060 ti 16g")),
    GPUSpec("RTX 4080 16GB", 16, 97.5, 0.717, **_pcie(_PCIE4, _NO_P2P), source_url=_ADA,
            aliases=("4080", "rtx4080", "rtx 4080", "geforce rtx 4080", "4080 16g", "4080 super", "rtx 4080 super")),
    GPUSpec("RTX 5070 12GB", 12, 61.7, 0.672, **_pcie(_PCIE5, "PCIe Gen5 x16 (no NVLink)"), approximate=True,
            source_url="https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5070-family/",
            notes="tensor peak derived: 48 SMs x 2.51 GHz x 512",
            aliases=("5070", "rtx5070", "rtx 5070", "geforce rtx 5070", "5070 12g")),
    GPUSpec("RTX 5070 Ti 16GB", 16, 87.8, 0.896, **_pcie(_PCIE5, "PCIe Gen5 x16 (no NVLink)"), approximate=True,
            source_url="https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5070-family/",
            notes="tensor peak derived: 70 SMs x 2.45 GHz x 512",
            aliases=("5070ti", "5070 ti", "rtx 5070 ti", "rtx5070ti", "5070 ti 16g")),
    GPUSpec("RTX 5080 16GB", 16, 112.6, 0.96, **_pcie(_PCIE5, "PCIe Gen5 x16 (no NVLink)"), approximate=True,
            source_url="https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5080/",
            notes="tensor peak derived: 84 SMs x 2.62 GHz x 512",
            aliases=("5080", "rtx5080", "rtx 5080", "geforce rtx 5080", "5080 16g")),
    # Turing: FP16 tensor with FP32 accumulate 53.8 TFLOPS (reference clocks), 616 GB/s, no bf16, no TF32,
    # PCIe Gen3 x16; a 2-way NVLink bridge (100 GB/s total) is optional (Turing whitepaper, appendix table)
    GPUSpec("RTX 2080 Ti 11GB", 11, 53.8, 0.616, **_pcie(_PCIE3), supports_bf16=False,
            source_url="https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/"
                       "turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf",
            notes="a 2-way NVLink bridge is optional", aliases=(
                "2080ti", "2080 ti", "rtx 2080 ti", "rtx2080ti", "rtx 2080ti", "geforce rtx 2080 ti", "2080ti 11g",
                "2080 ti 11g", "2080ti 11gb")),
    # --- NVIDIA GeForce Pascal and the TITANs (still in threads: "两张1080ti", "GTX1050Ti 4G") ----------
    # No tensor cores and no bf16. Native fp16 arithmetic on compute capability 6.1 runs at 1/64 of the fp32
    # rate (_CUDA_THROUGHPUT), but a mixed-precision matmul does not use it: PyTorch calls cublasGemmEx for
    # fp16 inputs with an fp32 compute type (_TORCH_FP16_GEMM), so on these cards the 16-bit training peak
    # is the CUDA-core fp32 rate. Memory, bandwidth and the fp32 rate (shaders x 2 x boost clock) from each
    # card's TechPowerUp page (NVIDIA's GeForce pages give no FLOPS); PCIe Gen3 x16, SLI bridges carry no
    # CUDA traffic. Marked approximate: the peak is derived, the page third-party.
    GPUSpec("GTX 1080 Ti 11GB", 11, 11.34, 0.4844, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}geforce-gtx-1080-ti.c2877", notes=_PASCAL_NOTE,
            aliases=("gtx 1080 ti", "gtx1080ti", "1080ti", "1080 ti", "geforce gtx 1080 ti", "gtx 1080ti",
                     "1080ti 11g", "1080 ti 11g", "1080ti 11gb")),
    GPUSpec("GTX 1080 8GB", 8, 8.873, 0.3203, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}geforce-gtx-1080.c2839", notes=_PASCAL_NOTE,
            aliases=("gtx 1080", "gtx1080", "geforce gtx 1080", "gtx 1080 8g")),
    GPUSpec("GTX 1070 Ti 8GB", 8, 8.186, 0.256, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}geforce-gtx-1070-ti.c3010", notes=_PASCAL_NOTE,
            aliases=("gtx 1070 ti", "gtx1070ti", "1070ti", "1070 ti", "geforce gtx 1070 ti", "gtx 1070ti")),
    GPUSpec("GTX 1070 8GB", 8, 6.463, 0.256, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}geforce-gtx-1070.c2840", notes=_PASCAL_NOTE,
            aliases=("gtx 1070", "gtx1070", "geforce gtx 1070", "gtx 1070 8g")),
    GPUSpec("GTX 1060 6GB", 6, 4.375, 0.192, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}geforce-gtx-1060-6-gb.c2862", notes=_PASCAL_NOTE,
            aliases=("gtx 1060", "gtx1060", "geforce gtx 1060", "gtx 1060 6g", "gtx1060 6g", "1060 6g", "1060 6gb")),
    GPUSpec("GTX 1060 3GB", 3, 3.935, 0.192, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}geforce-gtx-1060-3-gb.c2867", notes=_PASCAL_NOTE,
            aliases=("gtx 1060 3g", "gtx1060 3g", "1060 3g", "1060 3gb", "geforce gtx 1060 3gb")),
    GPUSpec("GTX 1050 Ti 4GB", 4, 2.138, 0.112, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}geforce-gtx-1050-ti.c2885", notes=_PASCAL_NOTE,
            aliases=("gtx 1050 ti", "gtx1050ti", "1050ti", "1050 ti", "geforce gtx 1050 ti", "gtx 1050ti",
                     "1050ti 4g", "1050 ti 4g")),
    GPUSpec("GTX 1050 2GB", 2, 1.862, 0.112, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}geforce-gtx-1050.c2875", notes=_PASCAL_NOTE,
            aliases=("gtx 1050", "gtx1050", "geforce gtx 1050", "gtx 1050 2g")),
    # TITAN X (Pascal, 2016) and TITAN Xp (2017): the full-rate GP102 of the same generation (same notes).
    # "TITAN X" alone is read as the Pascal card; the 2015 Maxwell TITAN X also has 12 GB.
    GPUSpec("TITAN X Pascal 12GB", 12, 10.97, 0.4804, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}titan-x-pascal.c2863", notes=_PASCAL_NOTE,
            aliases=("titan x pascal", "titan x (pascal)", "titanx pascal", "nvidia titan x", "titan x", "titanx",
                     "titan xp pascal")),
    GPUSpec("TITAN Xp 12GB", 12, 12.15, 0.5476, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}titan-xp.c2948", notes=_PASCAL_NOTE,
            aliases=("titan xp", "titanxp", "titan-xp", "nvidia titan xp", "titan xp 12g", "titan x p")),
    # TITAN V (GV100, Volta): 12 GB HBM2 at 652.8 GB/s, 640 tensor cores, "110 TFLOPS" of deep learning
    # (NVIDIA's page), fp32 14.9; no bf16; its NVLink fingers are disabled, so PCIe Gen3 x16.
    GPUSpec("TITAN V 12GB", 12, 110, 0.6528, **_pcie(_PCIE3), supports_bf16=False,
            source_url="https://www.nvidia.com/en-us/titan/titan-v/",
            notes="Volta tensor cores (fp16); no NVLink on this card", aliases=(
                "titan v", "titanv", "titan-v", "nvidia titan v", "titan v 12g")),
    # TITAN RTX (full TU102): 24 GB GDDR6 at 672 GB/s, 130 tensor TFLOPS (NVIDIA's page; the TITAN and
    # Quadro Turing parts run FP16 with FP32 accumulate at full rate, 8 x the 16.3 TFLOPS fp32 rate, where
    # GeForce halves it), a 2-way NVLink bridge (100 GB/s total) optional.
    GPUSpec("TITAN RTX 24GB", 24, 130, 0.672, **_pcie(_PCIE3), supports_bf16=False,
            source_url="https://www.nvidia.com/en-us/deep-learning-ai/products/titan-rtx/",
            notes="Turing tensor cores (fp16); a 2-way NVLink bridge (100 GB/s total) is optional", aliases=(
                "titan rtx", "titanrtx", "titan-rtx", "nvidia titan rtx", "titan rtx 24g")),
    # Quadro RTX (Turing, TU102/TU104): memory, bandwidth and fp32 from TechPowerUp; the tensor peak is
    # 8 x fp32 (full-rate FP32 accumulate, the TITAN RTX's 16.3 -> 130 ratio), so marked approximate.
    GPUSpec("Quadro RTX 8000 48GB", 48, 130.5, 0.672, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}quadro-rtx-8000.c3306",
            notes="tensor peak derived: 8 x 16.31 TFLOPS fp32; a 2-way NVLink bridge (100 GB/s total) is optional",
            aliases=("quadro rtx 8000", "quadro rtx8000", "quadrortx8000", "rtx 8000", "rtx8000", "quadro 8000")),
    GPUSpec("Quadro RTX 6000 24GB", 24, 130.5, 0.672, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}quadro-rtx-6000.c3307",
            notes="tensor peak derived: 8 x 16.31 TFLOPS fp32; a 2-way NVLink bridge (100 GB/s total) is optional",
            aliases=("quadro rtx 6000", "quadro rtx6000", "quadrortx6000")),
    GPUSpec("Quadro RTX 5000 16GB", 16, 89.2, 0.448, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url="https://cvw.cac.cornell.edu/gpu-architecture/gpus-frontera-rtx-5000/rtx_5000",
            notes="fp32 11.2 TFLOPS (3,072 cores x 2 x 1.815 GHz, the source); NVIDIA's sheet gives 89.2 TFLOPS "
                  "tensor and 448 GB/s; a 2-way NVLink bridge (50 GB/s total) is optional",
            aliases=("quadro rtx 5000", "quadro rtx5000", "quadrortx5000")),
    GPUSpec("Quadro RTX 4000 8GB", 8, 57.0, 0.416, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}quadro-rtx-4000.c3336",
            notes="tensor peak derived: 8 x 7.12 TFLOPS fp32; no NVLink",
            aliases=("quadro rtx 4000", "quadro rtx4000", "quadrortx4000")),
    # Pascal and Volta Quadros: the same GP102/GP104 rule as the GeForce Pascal cards above (P6000, P5000);
    # the GV100 has Volta tensor cores, "118.5 TFLOPS" of deep learning on NVIDIA's datasheet = 8 x its 14.8
    # boost fp32 rate (TechPowerUp lists 16.66 at its own boost clock), no bf16, a 2-way NVLink bridge. Never a bare
    # "GV100": that is also the V100's chip, and "8*32GV100" is eight 32 GB V100s.
    GPUSpec("Quadro P6000 24GB", 24, 12.63, 0.4328, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}quadro-p6000.c2865", notes=_PASCAL_NOTE,
            aliases=("quadro p6000", "p6000", "quadrop6000", "quadro p6000 24g")),
    GPUSpec("Quadro P5000 16GB", 16, 8.873, 0.288, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}quadro-p5000.c2864", notes=_PASCAL_NOTE,
            aliases=("quadro p5000", "p5000", "quadrop5000", "quadro p5000 16g")),
    GPUSpec("Quadro GV100 32GB", 32, 118.5, 0.8684, **_pcie(_PCIE3), supports_bf16=False, approximate=True,
            source_url=f"{_TPU}quadro-gv100.c3066",
            notes="Volta tensor cores (fp16), 118.5 TFLOPS per NVIDIA; a 2-way NVLink bridge (200 GB/s total) is "
                  "optional", aliases=("quadro gv100", "quadrogv100", "quadro gv100 32g")),
    # More Ampere workstation cards, as the RTX A5000/A4000 above: memory, bandwidth and fp32 from
    # TechPowerUp, dense bf16 = 4 x fp32 (the RTX A6000 sheet's ratio).
    GPUSpec("RTX A5500 24GB", 24, 136.4, 0.768, **_pcie(_PCIE4), approximate=True,
            source_url=f"{_TPU}rtx-a5500.c3901",
            notes="bf16 dense derived: 4 x 34.1 TFLOPS FP32; a 2-way NVLink bridge is optional",
            aliases=("a5500", "rtx a5500", "rtxa5500", "rtx-a5500", "a5500 24g")),
    GPUSpec("RTX A4500 20GB", 20, 94.6, 0.64, **_pcie(_PCIE4), approximate=True,
            source_url=f"{_TPU}rtx-a4500.c3849",
            notes="bf16 dense derived: 4 x 23.65 TFLOPS FP32; a 2-way NVLink bridge is optional",
            aliases=("a4500", "rtx a4500", "rtxa4500", "rtx-a4500", "a4500 20g")),
    GPUSpec("RTX A2000 12GB", 12, 31.9, 0.288, **_pcie(_PCIE4), approximate=True,
            source_url=f"{_TPU}rtx-a2000-12-gb.c3853",
            notes="bf16 dense derived: 4 x 7.987 TFLOPS FP32", aliases=("rtx a2000 12g", "a2000 12g", "a2000 12gb")),
    GPUSpec("RTX A2000 6GB", 6, 31.9, 0.288, **_pcie(_PCIE4), approximate=True,
            source_url=f"{_TPU}rtx-a2000.c3820",
            notes="bf16 dense derived: 4 x 7.987 TFLOPS FP32",
            aliases=("a2000", "rtx a2000", "rtxa2000", "rtx-a2000", "a2000 6g", "rtx a2000 6g")),
    # --- NVIDIA data center / workstation, more ----------------------------------------------------
    GPUSpec("A30 24GB", 24, 165, 0.933, **_pcie(_PCIE4), source_url=f"{_NV_DC}products/a30-gpu/",
            aliases=("a30", "a30-24gb", "a30 24g"), notes="a 2-way NVLink bridge (200 GB/s) is optional"),
    GPUSpec("L40 48GB", 48, 181, 0.864, **_pcie(_PCIE4), source_url=f"{_NV_DC}l40/",
            aliases=("l40", "l40-48gb", "l40 48g")),
    GPUSpec("RTX 6000 Ada 48GB", 48, 364.2, 0.96, **_pcie(_PCIE4), approximate=True,
            source_url="https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/rtx-6000/"
                       "proviz-print-rtx6000-datasheet-web-2504660.pdf",
            notes="bf16 dense derived from the 1457 TFLOPS FP8 sparse figure (/4)",
            aliases=("rtx 6000 ada", "6000 ada", "rtx6000 ada", "rtx 6000 ada generation")),
    # Ada and Ampere workstation cards (PCIe, GDDR6 with ECC). Memory, bandwidth and FP32 from each
    # datasheet; NVIDIA prints the tensor peak only as FP8/sparse, so the dense bf16 figure is taken as
    # 4 x the FP32 rate, the ratio the RTX 6000 Ada (91.1 -> 364.2) and RTX A6000 (38.7 -> 154.8) show.
    GPUSpec("RTX 5880 Ada 48GB", 48, 277.2, 0.96, **_pcie(_PCIE4), approximate=True,
            source_url="https://www.nvidia.com/en-us/design-visualization/rtx-5880/",
            notes="bf16 dense derived: 4 x 69.3 TFLOPS FP32",
            aliases=("rtx 5880 ada", "5880 ada", "rtx5880 ada", "rtx 5880", "rtx 5880 ada generation")),
    GPUSpec("RTX 5000 Ada 32GB", 32, 261.2, 0.576, **_pcie(_PCIE4), approximate=True,
            source_url="https://www.nvidia.com/en-us/design-visualization/rtx-5000/",
            notes="bf16 dense derived: 4 x 65.3 TFLOPS FP32",
            aliases=("rtx 5000 ada", "5000 ada", "rtx5000 ada", "rtx 5000 ada generation")),
    GPUSpec("RTX 4500 Ada 24GB", 24, 158.4, 0.432, **_pcie(_PCIE4), approximate=True,
            source_url="https://www.nvidia.com/en-us/design-visualization/rtx-4500/",
            notes="bf16 dense derived: 4 x 39.6 TFLOPS FP32",
            aliases=("rtx 4500 ada", "4500 ada", "rtx4500 ada", "rtx 4500 ada generation")),
    GPUSpec("RTX 4000 Ada 20GB", 20, 106.8, 0.36, **_pcie(_PCIE4), approximate=True,
            source_url="https://www.nvidia.com/en-us/design-visualization/rtx-4000/",
            notes="bf16 dense derived: 4 x 26.7 TFLOPS FP32",
            aliases=("rtx 4000 ada", "4000 ada", "rtx4000 ada", "rtx 4000 ada generation")),
    GPUSpec("RTX A5000 24GB", 24, 111.2, 0.768, **_pcie(_PCIE4), approximate=True,
            source_url="https://www.nvidia.com/en-us/design-visualization/rtx-a5000/",
            notes="bf16 dense derived: 4 x 27.8 TFLOPS FP32; a 2-way NVLink bridge is optional",
            aliases=("a5000", "rtx a5000", "rtxa5000", "rtx-a5000", "a5000 24g")),
    GPUSpec("RTX A4000 16GB", 16, 76.8, 0.448, **_pcie(_PCIE4), approximate=True,
            source_url="https://www.nvidia.com/en-us/design-visualization/rtx-a4000/",
            notes="bf16 dense derived: 4 x 19.2 TFLOPS FP32",
            aliases=("a4000", "rtx a4000", "rtxa4000", "rtx-a4000", "a4000 16g")),
    # Blackwell workstation: 96 GB GDDR7 at 1792 GB/s, PCIe Gen5 x16, FP32 125 TFLOPS (product page)
    GPUSpec("RTX PRO 6000 Blackwell 96GB", 96, 500, 1.792, **_pcie(_PCIE5, "PCIe Gen5 x16 (no NVLink)"),
            approximate=True,
            source_url="https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000/",
            notes="bf16 dense derived: 4 x 125 TFLOPS FP32",
            aliases=("rtx pro 6000", "rtx pro 6000 blackwell", "pro 6000", "rtx pro6000", "rtx 6000 pro",
                     "rtx pro 6000 96g", "rtx pro 6000 blackwell server edition", "rtx pro 6000 workstation")),
    # China data-center part on the Ada die: 48 GB GDDR6, 864 GB/s, PCIe Gen4; NVIDIA publishes no
    # product brief, the compute figure is the widely reported one (like the H20 above)
    GPUSpec("L20 48GB", 48, 119.5, 0.864, **_pcie(_PCIE4), approximate=True,
            source_url="https://www.nvidia.cn/data-center/products/",
            notes="China export part; figures are the widely reported ones (48 GB, 119.5 TFLOPS bf16 dense, "
                  "864 GB/s)", aliases=("l20", "l20-48gb", "l20 48g")),
    # GB200 (Grace Blackwell superchip): per-GPU figures from the NVL72 rack totals over 72 GPUs
    # (13.4 TB HBM3e -> 186 GB, 576 TB/s -> 8 TB/s, 360 PFLOPS sparse FP16/BF16 -> 2.5 PFLOPS dense)
    GPUSpec("GB200 186GB", 186, 2500, 8.0, **_fabric("NVLink 5 (1.8 TB/s total)", 900),
            source_url=f"{_NV_DC}gb200-nvl72/", approximate=True,
            notes="per-GPU figures derived from the GB200 NVL72 totals over 72 GPUs",
            aliases=("gb200", "gb200 nvl72", "gb200-nvl72", "gb200 186g", "grace blackwell")),
    # --- AMD (ROCm: torch.cuda API, RCCL behind the "nccl" backend name) ----------------------------
    GPUSpec("MI250X 64GB (one GCD)", 64, 191.5, 1.6, **_fabric("Infinity Fabric", 100), vendor="amd",
            source_url="https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html",
            aliases=("mi250x", "mi250", "amd mi250x", "instinct mi250x", "mi250x 128g"),
            notes="one MI250X module is two GCDs that PyTorch sees as two 64 GB devices; "
                  "module figures: 128 GB, 383 TFLOPS bf16, 3.2 TB/s"),
    GPUSpec("MI300X 192GB", 192, 1307.4, 5.3, **_fabric("Infinity Fabric (7 links, 896 GB/s total)", 448),
            vendor="amd", source_url="https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
            aliases=("mi300x", "mi300", "amd mi300x", "instinct mi300x", "mi300x 192g")),
    GPUSpec("MI325X 256GB", 256, 1307.4, 6.0, **_fabric("Infinity Fabric (7 links, 896 GB/s total)", 448),
            vendor="amd", source_url="https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html",
            aliases=("mi325x", "amd mi325x", "instinct mi325x", "mi325x 256g")),
    GPUSpec("MI210 64GB", 64, 181, 1.6, **_pcie(_PCIE4), vendor="amd",
            source_url="https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html",
            notes="an Infinity Fabric bridge links up to 4 cards",
            aliases=("mi210", "amd mi210", "instinct mi210", "mi210 64g")),
    # --- Intel Gaudi (habana_frameworks, HCCL) -----------------------------------------------------
    GPUSpec("Gaudi 2 96GB", 96, 432, 2.46, **_fabric("on-chip RoCE (21 x 100 GbE to peers)", 262.5),
            vendor="intel", backend="hccl", device_type="hpu", approximate=True,
            source_url="https://www.intel.com/content/www/us/en/products/details/processors/ai-accelerators/gaudi2.html",
            aliases=("gaudi2", "gaudi 2", "hl-225", "intel gaudi2", "habana gaudi2"),
            notes="Intel gives no single dense bf16 figure for Gaudi 2; 432 TFLOPS is the MME peak "
                  "commonly reported"),
    GPUSpec("Gaudi 3 128GB", 128, 1835, 3.7, **_fabric("on-chip RoCE (21 x 200 GbE to peers)", 525),
            vendor="intel", backend="hccl", device_type="hpu",
            source_url="https://www.intel.com/content/www/us/en/content-details/817486/intel-gaudi-3-ai-accelerator-white-paper.html",
            aliases=("gaudi3", "gaudi 3", "hl-325", "intel gaudi3")),
    # --- Huawei Ascend (torch_npu, HCCL) ---------------------------------------------------------------
    GPUSpec("Ascend 910B 64GB", 64, 313, 1.6, **_fabric("HCCS (392 GB/s total)", 196),
            vendor="huawei", backend="hccl", device_type="npu", approximate=True,
            source_url="https://www.hiascend.com/hardware/product",
            aliases=("910b", "ascend 910b", "ascend910b", "昇腾910b", "昇腾 910b", "huawei 910b", "910b3",
                     "atlas 800t a2", "ascend 910b3"),
            notes="Huawei publishes no per-chip datasheet; 64 GB HBM and ~313 TFLOPS fp16/bf16 are the "
                  "910B3 figures most often reported (910B4: 32 GB)"),
]


# Card names that are also everyday numbers ("1080p", "1920x1080", "seq len 1080"): read as the card only with
# card context beside them (a count with 张/块/x before, a card word or a memory size after; bot.understand.spans).
BARE_NUMBER_NAMES: dict[str, str] = {
    "1080": "GTX 1080 8GB", "1070": "GTX 1070 8GB", "1060": "GTX 1060 6GB", "1050": "GTX 1050 2GB",
}


# fp32 matmuls without tensor cores. PyTorch leaves TF32 off for matmuls by default
# (torch.backends.cuda.matmul.allow_tf32 = False since 1.12,
# https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices), so an
# fp32 run reaches the card's CUDA-core fp32 rate, not the TF32 tensor rate, unless TF32 is turned on
# (allow_tf32 = True or torch.set_float32_matmul_precision("high")). Dense fp32 TFLOP/s per datasheet:
# A100 19.5 (_A100), H100 SXM 67 / PCIe 51 / NVL 60 (_H100), H200 67, B200 75 (HGX B200 FP32 600 TFLOPS over
# 8 GPUs, https://www.nvidia.com/en-us/data-center/hgx/), L40S 91.6, L4 30.3, A10 31.2, RTX 4090 82.6 (_ADA),
# V100 15.7 (_V100), T4 8.1.
FP32_TFLOPS: dict[str, float] = {
    "A100 40GB SXM": 19.5, "A100 40GB PCIe": 19.5, "A100 80GB SXM": 19.5, "A100 80GB PCIe": 19.5,
    "A800 80GB SXM": 19.5, "A800 80GB PCIe": 19.5, "H100 80GB SXM": 67.0, "H100 80GB PCIe": 51.0,
    "H100 NVL 94GB": 60.0, "H800 80GB SXM": 67.0, "H200 141GB SXM": 67.0, "B200 180GB": 75.0,
    "L40S 48GB": 91.6, "L4 24GB": 30.3, "A10 24GB": 31.2, "RTX 4090 24GB": 82.6,
    "V100 16GB SXM2": 15.7, "V100 32GB SXM2": 15.7, "T4 16GB": 8.1, "P40 24GB": 12.0,
    # product pages / whitepapers of the cards above (CUDA cores x 2 x boost clock where not printed)
    "RTX 2080 Ti 11GB": 13.4, "RTX 3060 12GB": 12.7, "RTX 3080 12GB": 30.6, "RTX 4060 Ti 16GB": 22.1,
    "RTX 4080 16GB": 48.7, "RTX 5070 12GB": 30.9, "RTX 5070 Ti 16GB": 43.9, "RTX 5080 16GB": 56.3,
    "A30 24GB": 10.3, "L40 48GB": 90.5, "RTX 6000 Ada 48GB": 91.1,
    "RTX 5880 Ada 48GB": 69.3, "RTX 5000 Ada 32GB": 65.3, "RTX 4500 Ada 24GB": 39.6, "RTX 4000 Ada 20GB": 26.7,
    "RTX A5000 24GB": 27.8, "RTX A4000 16GB": 19.2, "RTX PRO 6000 Blackwell 96GB": 125.0,
    # Pascal GeForce/TITAN (their 16-bit peak is this rate too), Volta/Turing TITANs and Quadro RTX, more
    # Ampere workstation cards: the TechPowerUp pages and NVIDIA pages of their catalog entries
    "GTX 1080 Ti 11GB": 11.34, "GTX 1080 8GB": 8.873, "GTX 1070 Ti 8GB": 8.186, "GTX 1070 8GB": 6.463,
    "GTX 1060 6GB": 4.375, "GTX 1060 3GB": 3.935, "GTX 1050 Ti 4GB": 2.138, "GTX 1050 2GB": 1.862,
    "TITAN X Pascal 12GB": 10.97, "TITAN Xp 12GB": 12.15, "TITAN V 12GB": 14.9, "TITAN RTX 24GB": 16.3,
    "Quadro RTX 8000 48GB": 16.31, "Quadro RTX 6000 24GB": 16.31, "Quadro RTX 5000 16GB": 11.15,
    "Quadro RTX 4000 8GB": 7.12, "RTX A5500 24GB": 34.1, "RTX A4500 20GB": 23.65, "RTX A2000 12GB": 7.987,
    "RTX A2000 6GB": 7.987, "Quadro P6000 24GB": 12.63, "Quadro P5000 16GB": 8.873, "Quadro GV100 32GB": 16.66,
}
# Where no fp32 figure is listed: the A100's ratio of dense bf16 tensor peak to fp32 (312 / 19.5 = 16).
FP32_FALLBACK_RATIO = 16.0
# Cards without TF32 tensor cores (pre-Ampere): TF32 cannot be turned on.
NO_TF32_PREFIXES = ("V100", "T4", "P100", "P40", "RTX 2080", "GTX", "TITAN X", "TITAN V", "TITAN RTX", "Quadro RTX", "Quadro P", "Quadro GV")


def fp32_tflops(gpu: GPUSpec, tf32: bool = False) -> float:
    """Dense fp32 matmul peak: TF32 tensor cores (half the bf16 rate, A100 datasheet 156 vs 312) when
    ``tf32`` is on and the card has them, otherwise the CUDA-core fp32 rate (FP32_TFLOPS)."""
    if tf32 and not gpu.name.startswith(NO_TF32_PREFIXES):
        return gpu.bf16_tflops / 2
    return FP32_TFLOPS.get(gpu.name, gpu.bf16_tflops / FP32_FALLBACK_RATIO)


# The same chip sold with more HBM under one name: H100 SXM boards with 94 GB (HBM3, as in the H100 NVL)
# and 96 GB (HBM3 in GH200, https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/; HBM2e on Meta's
# Grand Teton, pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md). Same peak and links.
MEMORY_VARIANTS: dict[str, tuple[float, ...]] = {"H100 80GB SXM": (94.0, 96.0), "H100 80GB PCIe": (94.0, 96.0)}


def memory_variant(gpu: GPUSpec, memory_gb: float) -> GPUSpec | None:
    """``gpu`` with ``memory_gb`` of HBM when that is a variant sold under its name, else None."""
    from dataclasses import replace

    for size in MEMORY_VARIANTS.get(gpu.name, ()):
        if abs(size - memory_gb) <= 1:
            return replace(gpu, name=f"{gpu.name} ({size:g} GB variant)", memory_gb=size)
    return None


# DGX/HGX-class 8-GPU nodes carry one NIC per GPU for the compute fabric: DGX A100, 8 x ConnectX-6
# 200 Gb/s HDR InfiniBand (https://docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html);
# DGX H100/H200, 8 x ConnectX-7 400 Gb/s NDR
# (https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html); DGX B200, 8 x 400 Gb/s
# (https://docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html). Per-GPU NIC Gb/s by card.
DGX_NIC_GBPS_PER_GPU: dict[str, float] = {
    "A100 40GB SXM": 200.0, "A100 80GB SXM": 200.0, "A800 80GB SXM": 200.0,
    "H100 80GB SXM": 400.0, "H800 80GB SXM": 400.0, "H200 141GB SXM": 400.0, "B200 180GB": 400.0,
}
DGX_GPUS_PER_NODE = 8


def dgx_node_nic_gbps(gpu: GPUSpec | None, gpus_per_node: int) -> float | None:
    """A DGX-class node's total NIC bandwidth (Gb/s) for ``gpu``, or None when the node is not one."""
    if gpu is None or gpus_per_node != DGX_GPUS_PER_NODE:
        return None
    base = gpu.name.split(" (")[0]  # a memory variant keeps its card's fabric
    per_gpu = DGX_NIC_GBPS_PER_GPU.get(base)
    return per_gpu * gpus_per_node if per_gpu else None


def _gpu_norm(text: str) -> str:
    text = text.lower()
    for noise in ("nvidia", "geforce", "tesla", "huawei", "amd", "intel", "habana"):
        text = text.replace(noise, "")
    text = re.sub(r"(\d)\s*gb\b", r"\1g", text)
    text = re.sub(r"(\d)\s*g\b", r"\1g", text)
    return re.sub(r"[^a-z0-9\u4e00-\u9fff]", "", text)


_GPU_INDEX: dict[str, GPUSpec] = {}
for _g in _GPUS:
    for _key in (_g.name, *_g.aliases):
        _GPU_INDEX.setdefault(_gpu_norm(_key), _g)


def list_gpus() -> list[GPUSpec]:
    return list(_GPUS)


def gpu_names() -> dict[str, str]:
    """Every name and alias a user may type -> the catalog name (for the parser)."""
    out: dict[str, str] = {}
    for g in _GPUS:
        for key in (g.name, *g.aliases):
            out.setdefault(key, g.name)
    return out


def lookup_gpu(name: str) -> GPUSpec:
    """Find a GPU by name or alias (``a100-80gb``, ``A100 80G``, ``4090``, ``昇腾910B``)."""
    key = _gpu_norm(name)
    if key in _GPU_INDEX:
        return _GPU_INDEX[key]
    raise UnknownNameError("GPU", name, suggest(key, _GPU_INDEX, lambda g: g.name))


# Placeholder figures for a card we only know the memory of: a mid-range PCIe card.
CUSTOM_BF16_TFLOPS = 100.0
CUSTOM_HBM_TB_S = 1.0


def custom_gpu(memory_gb: float, name: str | None = None, *, supports_bf16: bool = True) -> GPUSpec:
    """A card the catalog lacks, known by its memory size. Memory is the user's figure; compute
    and link figures are placeholders (PCIe Gen4), so the spec is marked approximate."""
    if not memory_gb > 0:
        raise ValueError("memory_gb must be positive")
    label = name.strip() if name and name.strip() else "unlisted GPU"
    return GPUSpec(f"{label} ({memory_gb:g} GB, not in catalog)", float(memory_gb), CUSTOM_BF16_TFLOPS,
                   CUSTOM_HBM_TB_S, **_pcie(_PCIE4), supports_bf16=supports_bf16,
                   source_url="", approximate=True,
                   notes="not in the catalog: memory as stated; compute and link figures are placeholders")
