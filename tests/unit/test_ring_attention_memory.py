"""Ring attention's buffers as torch runs them for torchtitan (bot.calc.parallel,
``ring_attention_bytes_per_element``): q-wide (k/v expanded before SDPA), the whole sequence's K/V
all-gathered, fp32 gradient accumulators and the fp32 dK/dV in flight."""

from __future__ import annotations

import pytest

from bot.calc.parallel import GIB, ParallelPlan, plan_memory, ring_attention_bytes_per_element
from bot.calc.parallel_comm import plan_comm_time
from bot.core.setup import TrainingSetup, resolve_setup


def _setup(seq: int, **kw):
    fields = dict(model="llama3.1-8b", gpu="H100", gpu_count=8, seq_len=seq, micro_batch=1,
                  activation_checkpointing=True, precision="bf16-mixed")
    fields.update(kw)
    return resolve_setup(TrainingSetup(**fields))


def test_the_per_element_count_grows_with_the_gathered_sequence():
    # 2 cp c gathered + 2c sent + 3 x 4 accumulators + 3c step grads + 2 x 2 x 4 dK/dV in flight
    assert ring_attention_bytes_per_element(2, 2) == 8 + 4 + 12 + 6 + 16
    assert ring_attention_bytes_per_element(8, 2) - ring_attention_bytes_per_element(2, 2) == 2 * 6 * 2


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_ring_buffers_are_as_wide_as_the_query_heads(cp):
    r = _setup(32768 * cp)
    with_cp = plan_memory(r, ParallelPlan(world_size=8, dp_shard=8 // cp, cp=cp))
    model = r.model
    assert model.q_dim > model.kv_dim  # GQA: the expanded width is what SDPA sees
    expected = ring_attention_bytes_per_element(cp, 2) * model.q_dim * 32768 / GIB
    # the block backward holds them beside the saved activations: at least the ring term
    assert with_cp.buffers_gib >= expected


def test_ring_buffers_scale_down_with_tp():
    r = _setup(65536, model="llama3.1-70b", gpu_count=32, nodes=4)
    a = plan_memory(r, ParallelPlan(world_size=32, dp_shard=8, cp=2, tp=2))
    b = plan_memory(r, ParallelPlan(world_size=32, dp_shard=2, cp=2, tp=8))
    assert b.buffers_gib < a.buffers_gib


def test_cp_traffic_counts_the_expanded_kv_and_fp32_gradients():
    r = _setup(131072)
    t = plan_comm_time(r, ParallelPlan(world_size=8, dp_shard=2, cp=4))
    cp = next(a for a in t.axes if a.axis == "cp")
    m = r.model
    kv = 2 * m.q_dim * 131072 / 4
    per_layer = 3 * kv * 2 * (1 + 1 + 1) + 4 * kv * 4  # 3 gathers of 2-byte K/V, 4 fp32 dK/dV sends
    assert cp.gb_per_step == pytest.approx(m.n_layers * per_layer / 1e9, rel=1e-6)
