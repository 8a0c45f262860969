"""FSDP2 layouts beyond one unit per block (issue 14): the root unit resharded / kept / split
(``fsdp_root``), ``reshard_after_forward`` as an integer group size, and the throughput changes
that came with the torchtune rows (sm80-class cards on the A100 calibration, the utilisation
ceiling after torch.compile's speed-up)."""

from __future__ import annotations

import dataclasses

import pytest

from bot.calc import _comm_inputs, _mem_inputs, estimate_setup
from bot.calc.comm import HFU_BOUNDS, comm_bytes_and_seconds, flops_per_token, gpu_generation, peak_tflops
from bot.calc.memory import fsdp_root_buffers, phases, reshard_group, root_params
from bot.catalog import lookup_gpu
from bot.core.setup import TrainingSetup, check_setup, resolve_setup

BASE = dict(model="llama3.1-70b", gpu="a100-80gb", gpu_count=8, precision="bf16", seq_len=2048, micro_batch=2,
            activation_checkpointing=True, optimizer_impl="fused")


def mem_inputs(**kw):
    return _mem_inputs(resolve_setup(TrainingSetup(**{**BASE, **kw})))


def phase_bytes(strategy: str = "fsdp_full_shard", **kw) -> dict[str, float]:
    inputs = mem_inputs(**kw)
    return {ph.name: ph.total(inputs.micro_batch) for ph in phases(inputs, strategy)[0]}


def root_used(**kw) -> float:
    inputs = mem_inputs(**kw)
    return root_params(inputs.model) * 2  # bf16 compute dtype


# --- fsdp_root -----------------------------------------------------------------------------------


def test_root_buffers_per_layout():
    inputs = mem_inputs()
    r = 1000.0
    assert fsdp_root_buffers(inputs, r) == (0.0, 2 * r, r)  # the default: resharded, gathered again
    assert fsdp_root_buffers(dataclasses.replace(inputs, fsdp_root="kept"), r) == (r, r, r)
    loss, head, block = fsdp_root_buffers(dataclasses.replace(inputs, fsdp_root="split"), r)
    model = inputs.model  # untied: the head is about half of the root (the final norm is tiny)
    assert (loss, block) == (0.0, 0.0)
    assert head == pytest.approx(2 * r * model.vocab * model.hidden / root_params(model))


def test_split_root_frees_the_embeddings_and_head_during_the_blocks_backward():
    default, split = phase_bytes(), phase_bytes(fsdp_root="split")
    assert default["block_backward"] - split["block_backward"] == pytest.approx(root_used())
    assert "embedding_backward" in split and "embedding_backward" not in default
    # torchtune's 70B full fine-tune (CPU offload, custom_sharded_layers): the peak drops by the root
    offload = dict(optimizer_impl=None, finetune="full")
    d = estimate_setup(TrainingSetup(**{**BASE, **offload}))
    s = estimate_setup(TrainingSetup(**{**BASE, **offload, "fsdp_root": "split"}))
    assert s.memory["fsdp_full_shard_offload"].total_gib < d.memory["fsdp_full_shard_offload"].total_gib - 3
    assert s.memory["ddp"] == d.memory["ddp"]  # DDP has no root unit


def test_kept_root_is_gathered_from_forward_on_but_never_twice():
    default, kept = phase_bytes(), phase_bytes(fsdp_root="kept")
    r = root_used()
    assert kept["loss_backward"] - default["loss_backward"] == pytest.approx(r)
    assert default["head_backward"] - kept["head_backward"] == pytest.approx(r)
    assert kept["block_backward"] == pytest.approx(default["block_backward"])


# --- reshard_after_forward -----------------------------------------------------------------------


def test_reshard_group_reads_ints_not_bools():
    assert [reshard_group(v) for v in (None, True, False, 1, 4)] == [None, None, None, None, 4]


def test_integer_reshard_keeps_one_kth_of_every_block_and_gathers_in_the_group():
    model = mem_inputs().model
    unit = model.layer_params() * 2
    default, by4 = phase_bytes(), phase_bytes(reshard_after_forward=4)
    assert by4["loss_backward"] - default["loss_backward"] == pytest.approx(model.n_layers * unit / 4)
    false = phase_bytes(reshard_after_forward=False)
    sgo = phase_bytes("fsdp_shard_grad_op")
    assert false["block_backward"] == pytest.approx(sgo["block_backward"])
    # 2 nodes x 8: k = 8 keeps the backward all-gather inside a node, on NVLink instead of the NIC
    two_nodes = dict(gpu_count=16, nodes=2, inter_node_link="infiniband", inter_node_gbps=100)

    def comm(**kw):
        return comm_bytes_and_seconds(_comm_inputs(resolve_setup(TrainingSetup(**{**BASE, **two_nodes, **kw}))),
                                      "fsdp_full_shard")

    (bus_true, s_true), (bus_8, s_8) = comm(), comm(reshard_after_forward=8)
    assert bus_8 < bus_true and s_8 < 0.75 * s_true
    assert comm(reshard_after_forward=False)[0] == pytest.approx(
        comm_bytes_and_seconds(_comm_inputs(resolve_setup(TrainingSetup(**{**BASE, **two_nodes}))),
                               "fsdp_shard_grad_op")[0])


@pytest.mark.parametrize("value, ok", [(True, True), (False, True), (4, True), (2, True), (1, False),
                                       (3, False), (8, False)])
def test_reshard_group_must_be_a_proper_divisor(value, ok):
    problems = check_setup(TrainingSetup(**{**BASE, "reshard_after_forward": value}))
    assert (not problems) == ok, problems
    if not ok:
        assert problems[0].field == "reshard_after_forward"


# --- throughput ------------------------------------------------------------------------------------


@pytest.mark.parametrize("gpu, family", [("4090", "ampere"), ("a6000", "ampere"), ("a100-40gb", "ampere"),
                                         ("h100", "hopper"), ("l40s", None), ("3090", None), ("t4", None)])
def test_sm80_class_cards_with_the_a100_balance_use_its_calibration(gpu, family):
    assert gpu_generation(lookup_gpu(gpu)) == family


def test_compile_never_lifts_utilisation_above_the_ceiling():
    for kw in ({}, {"torch_compile": True}):
        e = estimate_setup(TrainingSetup(**{**BASE, "finetune": "lora", **kw}))
        comm_in = _comm_inputs(resolve_setup(TrainingSetup(**{**BASE, "finetune": "lora", **kw})))
        tokens = comm_in.micro_batch * comm_in.seq_len
        achieved = tokens * flops_per_token(comm_in) / (e.inputs["compute_seconds"]
                                                        * peak_tflops(comm_in.gpu, "bf16") * 1e12)
        assert achieved <= HFU_BOUNDS[1] + 1e-9
    # below the ceiling compile still speeds the step up (an 8B model on 8 H100)
    small = dict(BASE, model="llama3.1-8b", gpu="h100")
    eager = estimate_setup(TrainingSetup(**small)).inputs["compute_seconds"]
    compiled = estimate_setup(TrainingSetup(**small, torch_compile=True)).inputs["compute_seconds"]
    assert compiled < eager / 1.1


# --- the loss's bytes per logit (measured on CPU Inductor, docs/calc.md) ---------------------------


def test_compiled_losses_keep_no_fp32_logits():
    from bot.calc.memory import LOSS_CHUNKS, loss_bytes_per_logit

    inputs = mem_inputs()
    assert loss_bytes_per_logit(dataclasses.replace(inputs, loss_impl="standard"), 2) == (4, 8, 2)
    assert loss_bytes_per_logit(dataclasses.replace(inputs, loss_impl="fused"), 2) == (2, 2, 2)
    chunked = dataclasses.replace(inputs, loss_impl="chunked", torch_compile=True)
    assert loss_bytes_per_logit(chunked, 2) == (2, 2 / LOSS_CHUNKS, 2)


# --- optimizer in backward, paged optimizer state (torchtune's 8B single-device full fine-tune) ----

ONE_4090 = dict(model="llama3.1-8b", gpu="4090", gpu_count=1, precision="bf16", optimizer="adam8bit",
                activation_checkpointing=True, seq_len=2048, micro_batch=2, torch_compile=True, loss_impl="chunked")


def test_optimizer_in_backward_drops_the_moment_all_gradients_coexist():
    plain = {ph.name for ph in phases(_mem_inputs(resolve_setup(TrainingSetup(**ONE_4090))), "ddp")[0]}
    fused = {ph.name for ph in phases(_mem_inputs(resolve_setup(TrainingSetup(**ONE_4090, optimizer_in_backward=True))),
                                      "ddp")[0]}
    assert "optimizer_step" in plain and "optimizer_step" not in fused
    for strategy in ("fsdp_full_shard", "ddp"):
        a = estimate_setup(TrainingSetup(**{**BASE, "finetune": "full"})).memory[strategy]
        b = estimate_setup(TrainingSetup(**{**BASE, "finetune": "full", "optimizer_in_backward": True})).memory[strategy]
        assert b.total_gib <= a.total_gib and b.grads_gib < a.grads_gib + 1e-9
    problems = check_setup(TrainingSetup(**ONE_4090, optimizer_in_backward=True, grad_accum_steps=4))
    assert [p.field for p in problems] == ["optimizer_in_backward"]


def test_paged_state_leaves_the_allocator_figures_for_host_ram():
    plain = estimate_setup(TrainingSetup(**ONE_4090)).memory["ddp"]
    paged = estimate_setup(TrainingSetup(**ONE_4090, paged_optimizer=True, optimizer_in_backward=True)).memory["ddp"]
    assert paged.optimizer_gib == 0 and plain.host_ram_gib == 0
    # 8-bit Adam: 2 B/param (+ block constants) of Llama-3.1-8B's 8.03 B parameters, all pageable to host
    assert paged.host_ram_gib == pytest.approx(8.03e9 * 2 * (1 + 4 / 2048) / 2**30, rel=0.01)
    assert not plain.fits and paged.fits  # torchtune runs this on one 24 GB card (README: 18.9 GiB)
    assert paged.reserved_gib == pytest.approx(18.9, rel=0.10)
    bad = check_setup(TrainingSetup(**{**ONE_4090, "optimizer": "adamw"}, paged_optimizer=True, optimizer_impl="fused"))
    assert [p.field for p in bad] == ["paged_optimizer"]
