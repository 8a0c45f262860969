"""Inference memory: weights by dtype plus the KV cache, for out-of-scope serving questions.

The answer to "will it fit for inference?" that a DDP/FSDP question sometimes is. Formulas:
- weights = parameters x bytes per parameter of the serving dtype (bf16/fp16 2 B, int8 1 B,
  int4 0.5 B);
- KV cache = 2 (K and V) x layers x KV heads x head size x context x batch x bytes per element
  (Kwon et al. 2023, "Efficient Memory Management for Large Language Model Serving with
  PagedAttention", https://arxiv.org/abs/2309.06180 sec. 2.2; grouped-query attention stores
  ``n_kv_heads`` heads, Ainslie et al. 2023, https://arxiv.org/abs/2305.13245).
Activations and the serving engine's workspace come on top; the answer says so.
GiB = 2**30 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GIB = 2**30
DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "int8": 1.0, "fp8": 1.0, "int4": 0.5}
DEFAULT_CONTEXT = 4096  # assumed when the question states none (said in the answer's setup)
DEFAULT_BATCH = 1


@dataclass(frozen=True)
class InferenceEstimate:
    model: str
    params: int
    dtype: str
    context_len: int
    batch: int
    weights_gib: float
    kv_cache_gib: float
    assumed: tuple[str, ...]
    named: bool = True  # the model is a catalog entry (else a bare parameter count)

    @property
    def total_gib(self) -> float:
        return self.weights_gib + self.kv_cache_gib

    def numbers(self) -> dict[str, float | int]:
        return {"inference.weights_gib": round(self.weights_gib, 4), "inference.kv_cache_gib": round(self.kv_cache_gib, 4),
                "inference.total_gib": round(self.total_gib, 4), "inference.context_len": self.context_len,
                "inference.batch": self.batch}

    def setup(self) -> dict[str, Any]:
        """The inputs, as TrainingSetup fields (``inference_estimate`` of this gives this back)."""
        out: dict[str, Any] = {"model": self.model} if self.named else {"params_b": round(self.params / 1e9, 3)}
        out.update(seq_len=self.context_len, micro_batch=self.batch)
        if "dtype" not in self.assumed:
            out["precision"] = {"fp16": "fp16-mixed", "fp32": "fp32"}.get(self.dtype, "bf16-mixed")
        return out

    def quote(self) -> str:
        return (f"{self.model}, {round(self.params / 1e9, 2)}B params in {self.dtype}, context {self.context_len}, "
                f"batch {self.batch}: weights {self.weights_gib:.2f} GiB + KV cache {self.kv_cache_gib:.2f} GiB")


def inference_estimate(setup: Any, dtype: str | None = None) -> InferenceEstimate:
    """Weights + KV cache for the model ``setup`` names (a TrainingSetup); raises ValueError when
    it names no model size."""
    from bot.catalog import generic_model, lookup_model

    named = bool(getattr(setup, "model", None))
    if named:
        model = lookup_model(setup.model)
    elif getattr(setup, "params_b", None):
        model = generic_model(float(setup.params_b))
    else:
        raise ValueError("no model size")
    assumed = []
    if dtype is None:
        precision = getattr(setup, "precision", None) or ""
        dtype = "fp16" if precision.startswith("fp16") else "fp32" if precision == "fp32" else "bf16"
        if not precision:
            assumed.append("dtype")
    context = getattr(setup, "seq_len", None) or DEFAULT_CONTEXT
    if not getattr(setup, "seq_len", None):
        assumed.append("seq_len")
    batch = getattr(setup, "micro_batch", None) or DEFAULT_BATCH
    bytes_per = DTYPE_BYTES[dtype]
    weights = model.params * bytes_per / GIB
    head = model.attn_head_dim or model.hidden // model.n_heads
    kv_bytes = 2.0 if bytes_per < 2 else bytes_per  # the cache stays 16-bit under weight quantization
    kv = 2 * model.n_layers * model.n_kv_heads * head * context * batch * kv_bytes / GIB
    return InferenceEstimate(model.name, int(model.params), dtype, int(context), int(batch), weights, kv, tuple(assumed),
                             named=named)  # an approximate catalog entry is still that entry (its own shape)
