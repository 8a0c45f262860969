"""``shardwise calc``: per-GPU memory, communication and step time for every strategy.

Bad input never produces a traceback: unknown names get "did you mean" suggestions, invalid or
contradictory values exit with code 2 and one line per problem (``bot.core.setup.check_setup``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from bot.core.setup import Problem, SetupError, TrainingSetup, check_setup
from bot.strategies import TRAINING_STRATEGIES

if TYPE_CHECKING:
    from bot.calc import Estimate
    from bot.catalog import ModelSpec

EXIT_BAD_INPUT = 2
# Short row names so the tables fit an 80-column terminal; the JSON keys use the full ids.
SHORT = {"ddp": "ddp", "fsdp_shard_grad_op": "shard_grad_op", "fsdp_full_shard": "full_shard",
         "fsdp_hybrid_shard": "hybrid_shard", "fsdp_full_shard_offload": "full+offload"}

_INTER_ALIASES = {"ib": "infiniband", "infiniband": "infiniband", "eth": "ethernet", "ethernet": "ethernet",
                  "roce": "ethernet", "none": "none"}


def parse_inter_node(text: str) -> tuple[str | None, float | None, list[Problem]]:
    """``ethernet:25`` -> ("ethernet", 25.0); ``infiniband`` -> ("infiniband", None); ``ib:400``."""
    kind, _, speed = text.strip().lower().partition(":")
    link = _INTER_ALIASES.get(kind.strip())
    if link is None:
        return None, None, [Problem.of("inter_node_link", "cli_not_a_link", text=text)]
    if not speed.strip():
        return link, None, []
    try:
        gbps = float(speed.strip().removesuffix("gbps").removesuffix("g"))
    except ValueError:
        return link, None, [Problem.of("inter_node_gbps", "cli_not_a_speed", text=speed)]
    return link, gbps, []


def _fail(problems: list[Problem]) -> NoReturn:
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
    sys.exit(EXIT_BAD_INPUT)


@click.command(name="calc")
@click.option("--model", help="Catalog model or alias (llama2-7b, Llama-2-7b-hf, qwen2.5-7b, 7b).")
@click.option("--config", "config_source", help="A Hugging Face config.json instead of --model: a file, a folder "
              "holding one, or a Hub id (config only; offline it must be cached).")
@click.option("--params-b", type=float, help="Model size in billions of parameters (no catalog model needed).")
@click.option("--gpu", help="GPU name or alias (a100-80gb, 'A100 80G', h100, 4090).")
@click.option("--gpu-memory-gb", type=float, help="GPU memory in GB when the GPU is not in the catalog.")
@click.option("--gpus", "gpu_count", type=int, help="Total number of GPUs.")
@click.option("--nodes", type=int, help="Number of nodes.")
@click.option("--gpus-per-node", type=int, help="GPUs per node (HSDP's shard group).")
@click.option("--seq-len", type=int, help="Sequence length in tokens (default 2048).")
@click.option("--micro-batch", type=int, help="Sequences per GPU per step (default 1).")
@click.option("--precision", type=click.Choice(["bf16-mixed", "fp16-mixed", "bf16", "fp32"]),
              help="Default bf16-mixed (fp32 master weights, bf16 compute).")
@click.option("--optimizer", type=click.Choice(["adamw", "sgd", "adam8bit"]), help="Default adamw.")
@click.option("--finetune", type=click.Choice(["full", "lora", "qlora"]), help="Default full.")
@click.option("--lora-rank", type=int, help="LoRA rank (default 16; targets q,k,v,o).")
@click.option("--activation-checkpointing/--no-activation-checkpointing", default=None,
              help="Per-block activation checkpointing (default off).")
@click.option("--intra-node", type=click.Choice(["nvlink", "pcie"]), help="Link between GPUs in a node.")
@click.option("--inter-node", help="Link between nodes: infiniband[:Gbps], ethernet[:Gbps] or none "
                                   "(Gbps = one node's total NIC speed, e.g. ethernet:25).")
@click.option("--cpu-ram-gb", type=float, help="Host RAM per node in GB (checked for CPU offload).")
@click.option("--optimizer-impl", type=click.Choice(["foreach", "fused", "forloop"]),
              help="torch.optim implementation (default foreach, PyTorch's CUDA default).")
@click.option("--ddp-bucket-view/--no-ddp-bucket-view", default=None,
              help="DDP gradient_as_bucket_view (default off, as in PyTorch).")
@click.option("--checkpointing-policy", type=click.Choice(["full", "every_k", "selective_op"]),
              help="Which blocks/ops are checkpointed (implies --activation-checkpointing; default full).")
@click.option("--checkpoint-every", type=int, help="k for every_k: checkpoint every k-th block (default 2).")
@click.option("--compile/--no-compile", "torch_compile", default=None, help="torch.compile the model (default off).")
@click.option("--loss-impl", type=click.Choice(["standard", "fused", "chunked"]),
              help="Cross-entropy over the logits: standard (default), fused kernel, or chunked.")
@click.option("--grad-accum-steps", type=int, help="Gradient accumulation steps (default 1).")
@click.option("--lora-targets", type=click.Choice(["attention", "all_linear", "all_linear_but_o"]),
              help="LoRA target modules (default attention: q,k,v,o).")
@click.option("--base-dtype", type=click.Choice(["fp32", "bf16", "nf4"]),
              help="Frozen base weights under LoRA (default: compute dtype; nf4 for QLoRA).")
@click.option("--float8/--no-float8", default=None, help="torchao float8 linears and all-gathers (default off).")
@click.option("--norm-impl", type=click.Choice(["eager", "fused"]), help="RMSNorm/LayerNorm kernel (default eager).")
@click.option("--fsdp-root", type=click.Choice(["resharded", "kept", "split"]),
              help="FSDP root unit (embeddings + head): resharded (default), kept gathered, or split into own units.")
@click.option("--reshard-after-forward", help="FSDP2 reshard_after_forward for the blocks: true, false or a group "
                                              "size k (default true).")
@click.option("--optimizer-in-backward/--no-optimizer-in-backward", default=None,
              help="Step each parameter inside backward, freeing its gradient (default off).")
@click.option("--paged-optimizer/--no-paged-optimizer", default=None,
              help="bitsandbytes paged optimizer state (CUDA managed memory; default off).")
@click.option("--engine", type=click.Choice(["pytorch", "deepspeed"]),
              help="Whose sharding runs: pytorch (FSDP, default) or deepspeed (SHARD_GRAD_OP is ZeRO-2's layout).")
@click.option("--mfu", type=float, help="Model FLOPs utilisation to assume (0-1); default: calibrated per GPU.")
@click.option("--tf32/--no-tf32", default=None,
              help="fp32 matmuls on TF32 tensor cores (default off, PyTorch's allow_tf32=False).")
@click.option("--grad-sync", type=click.Choice(["every_micro_step", "last_micro_step"]),
              help="FSDP2 gradient sync under accumulation: every micro-step (default) or the last only "
                   "(set_requires_gradient_sync(False): an unsharded gradient per GPU until then).")
@click.option("--attn-implementation", type=click.Choice(["eager", "sdpa", "flash_attention_2"]),
              help="Attention kernel (default: transformers' choice for the model, or the config's "
                   "attn_implementation; eager keeps the s x s scores).")
@click.option("--lora-dropout", type=float,
              help="PEFT's lora_dropout (default 0): above 0 each adapter keeps a dropped copy of its input.")
@click.option("--logits-kept", type=click.Choice(["fp32", "16bit"]),
              help="The loop keeps the model output's logits through backward (fp32: transformers before v4.46).")
@click.option("--tensor-parallel", "--tp", type=int, help="TP degree: adds the plan's per-GPU memory (FSDP over the rest; docs/parallelism.md).")
@click.option("--pipeline-parallel", "--pp", type=int, help="PP degree (1F1B schedule): adds the plan's per-GPU memory.")
@click.option("--context-parallel", "--cp", type=int, help="CP degree (ring attention): adds the plan's per-GPU memory.")
@click.option("--json", "as_json", is_flag=True, help="Print a flat JSON object instead of tables.")
def calc(model: str | None, config_source: str | None, params_b: float | None, gpu: str | None,
         gpu_memory_gb: float | None, gpu_count: int | None, nodes: int | None, gpus_per_node: int | None,
         seq_len: int | None, micro_batch: int | None, precision: str | None, optimizer: str | None,
         finetune: str | None, lora_rank: int | None, activation_checkpointing: bool | None,
         intra_node: str | None, inter_node: str | None, cpu_ram_gb: float | None, optimizer_impl: str | None,
         ddp_bucket_view: bool | None, checkpointing_policy: str | None, checkpoint_every: int | None,
         torch_compile: bool | None, loss_impl: str | None, grad_accum_steps: int | None,
         lora_targets: str | None, base_dtype: str | None, float8: bool | None, norm_impl: str | None,
         fsdp_root: str | None, reshard_after_forward: str | None, optimizer_in_backward: bool | None,
         paged_optimizer: bool | None, engine: str | None, mfu: float | None, tf32: bool | None,
         grad_sync: str | None, attn_implementation: str | None, lora_dropout: float | None,
         logits_kept: str | None, tensor_parallel: int | None,
         pipeline_parallel: int | None,
         context_parallel: int | None, as_json: bool) -> None:
    """Per-GPU memory, communication and step time for every DDP/FSDP strategy.

    Example: shardwise calc --model llama2-7b --gpu a100-80gb --gpus 8
    """
    problems: list[Problem] = []
    spec = None
    if config_source is not None:
        if model or params_b:
            _fail([Problem.of("config", "cli_config_and_model")])
        spec, config_attn = model_from_config(config_source)
        attn_implementation = attn_implementation or config_attn
    inter_link = inter_gbps = None
    if inter_node is not None:
        inter_link, inter_gbps, problems = parse_inter_node(inter_node)
    reshard: bool | int | None = None
    if reshard_after_forward is not None:
        text = reshard_after_forward.strip().lower()
        if text in ("true", "false"):
            reshard = text == "true"
        elif text.isdigit():
            reshard = int(text)
        else:
            problems.append(Problem.of("reshard_after_forward", "cli_reshard_value", text=text))
    setup = TrainingSetup(
        model=model, params_b=params_b, gpu=gpu, gpu_memory_gb=gpu_memory_gb, gpu_count=gpu_count,
        nodes=nodes, gpus_per_node=gpus_per_node, seq_len=seq_len, micro_batch=micro_batch,
        precision=precision, optimizer=optimizer, finetune=finetune, lora_rank=lora_rank,
        activation_checkpointing=activation_checkpointing, intra_node_link=intra_node,
        inter_node_link=inter_link, inter_node_gbps=inter_gbps, cpu_ram_gb=cpu_ram_gb,
        optimizer_impl=optimizer_impl, ddp_bucket_view=ddp_bucket_view, checkpointing_policy=checkpointing_policy,
        checkpoint_every=checkpoint_every, torch_compile=torch_compile, loss_impl=loss_impl,
        grad_accum_steps=grad_accum_steps, lora_targets=lora_targets, base_dtype=base_dtype, float8=float8,
        norm_impl=norm_impl, fsdp_root=fsdp_root, reshard_after_forward=reshard,
        optimizer_in_backward=optimizer_in_backward, paged_optimizer=paged_optimizer, engine=engine,
        mfu=mfu, tf32=tf32, grad_sync=grad_sync, attn_implementation=attn_implementation,
        lora_dropout=lora_dropout, logits_kept=logits_kept, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel,
        context_parallel=context_parallel,
    )
    problems += check_setup(setup)
    if problems:
        _fail(problems)
    from bot.calc import estimate_setup

    try:
        est = estimate_setup(setup, model_spec=spec)
    except SetupError as err:
        _fail(err.problems)
    except (ValueError, LookupError) as err:  # a catalog or formula refusing a value
        _fail([Problem.of("setup", "cli_setup", detail=str(err))])

    plan = _parallel_plan(est.resolved) if any(x and x > 1 for x in (tensor_parallel, pipeline_parallel,
                                                                       context_parallel)) else None
    if as_json:
        data: dict[str, Any] = dict(est.numbers())
        if plan is not None:
            data["parallel"] = plan
        data["setup"] = est.resolved.setup.model_dump()
        data["assumed"] = list(est.resolved.assumed)
        if spec is not None:  # the setup names no catalog model: say which shape was used
            data["model_from_config"] = {"source": config_source, "name": spec.name, "params": spec.params,
                                         "kind": spec.kind, "caveats": list(spec.caveats)}
        data["not_modelled"] = list(est.not_modelled)
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    _print_tables(est, config_source, plan_below=plan is not None)
    if plan is not None:
        _print_plan(plan)


def _parallel_plan(resolved: Any) -> dict[str, Any]:
    """The stated TP/CP/PP degrees with FSDP over the rest (torchtitan's ParallelDims, as the ask
    path computes them: ``bot.parallel_evidence.stated_plan``), and each data-parallel strategy
    on the data-parallel group the degrees leave (``plan_rows``): per row one GPU's memory
    (``plan_memory``), the largest local batch that fits (``max_local_batch``) and the step time
    with each axis's communication (``plan_comm_time``). An impossible plan is a clean error."""
    from dataclasses import asdict, replace

    from bot.calc.parallel import PlanError, max_local_batch, plan_from_setup, plan_memory
    from bot.parallel_evidence import plan_rows, stated_plan

    try:
        plan = plan_from_setup(resolved)
        suggestion = stated_plan(resolved)
        if suggestion is None:  # stated_plan hides why; plan_memory says it
            plan_memory(resolved, plan)
            _fail([Problem.of("parallelism", "cli_plan_impossible")])
    except PlanError as err:
        _fail([Problem.of("parallelism", "cli_plan", detail=str(err))])
    step = suggestion.steps[0]
    local = resolved
    if step.figure == "local_batch" and step.value is not None:  # an unstated batch filling the pipeline
        local = replace(resolved, setup=resolved.setup.model_copy(update={"micro_batch": int(step.value)}))
    rows = plan_rows(resolved, suggestion)
    if not rows:  # no data-parallel group left (tp x cp x pp = every GPU): the plan alone
        from bot.parallel_evidence import PlanRow

        rows = [PlanRow("no_data_parallel", suggestion.plan, suggestion.memory, "", suggestion.time)]

    def rounded(obj: Any) -> Any:
        if isinstance(obj, float):
            return round(obj, 4)
        if isinstance(obj, dict):
            return {k: rounded(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [rounded(v) for v in obj]
        return obj

    def row_data(row: Any) -> dict[str, Any]:
        setup = local if not row.variant else replace(local, setup=local.setup.model_copy(
            update={"activation_checkpointing": True}))
        return {"strategy": row.strategy, "variant": row.variant, "mesh": dict(row.plan.degrees),
                "stated": row.plan == suggestion.plan and not row.variant,
                "memory": rounded(asdict(row.memory)),
                "max_local_batch": max_local_batch(setup, row.plan),
                "time": None if row.time is None else rounded(asdict(row.time))}

    d = suggestion.plan.degrees
    return {"mesh": dict(d), "world_size": suggestion.plan.world_size, "local_batch": local.setup.micro_batch or 1,
            "local_batch_raised": local is not resolved,
            "memory": rounded(asdict(suggestion.memory)),
            "max_local_batch": max_local_batch(local, suggestion.plan),
            "time": None if suggestion.time is None else rounded(asdict(suggestion.time)),
            "rows": [row_data(r) for r in rows],
            "toml": suggestion.toml, "torchrun": list(suggestion.torchrun)}


# Plan-table labels: the data-parallel strategies as the strategy tables name them, the
# checkpointing variant, the axes of torchtitan's mesh, the links in a cell.
PLAN_SHORT = {**SHORT, "no_data_parallel": "no DP"}
AXIS_SHORT = {"tp": "tp", "cp": "cp", "pp": "pp", "fsdp": "fsdp", "dp_replicate": "rep"}
LINK_WORDS = {"nvlink": "on NVLink", "pcie": "on PCIe", "network": "across nodes"}


def _row_name(row: dict[str, Any]) -> str:
    strategy = str(row["strategy"])
    name = PLAN_SHORT.get(strategy, strategy) + ("+ac" if row["variant"] else "")
    return name + ("*" if row["stated"] else "")


def _print_plan(plan: dict[str, Any]) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console()
    d = plan["mesh"]
    console.print(f"[bold]Parallel plan[/bold]: dp_replicate {d['dp_replicate']} x dp_shard {d['dp_shard']} x "
                  f"cp {d['cp']} x tp {d['tp']} x pp {d['pp']} = {plan['world_size']} GPUs, local batch "
                  f"{plan['local_batch']} per data-parallel rank"
                  + (" (the micro-batch was not stated: the fewest a pipeline runs, one per stage)"
                     if plan.get("local_batch_raised") else "")
                  + " (torchtitan's \\[parallelism]; docs/parallelism.md)")
    rows = plan["rows"]
    table = Table(title="Per-GPU peak memory under the plan (GiB)", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, padding=(0, 1), collapse_padding=True, show_edge=False)
    for col in ("strategy", "dp", "param", "grad", "optim", "activ", "buf", "resvd", "fits", "maxlb"):
        table.add_column(col, justify="left" if col == "strategy" else "right", no_wrap=True, min_width=len(col))
    for r in rows:
        m = r["memory"]
        table.add_row(_row_name(r), f"{r['mesh']['dp_replicate']}x{r['mesh']['dp_shard']}",
                      *(_gib(m[k]) for k in ("params_gib", "grads_gib", "optimizer_gib", "activations_gib",
                                             "buffers_gib", "reserved_gib")),
                      "[green]yes[/]" if m["fits"] else "[red]no[/]", str(r["max_local_batch"]))
    console.print(table)
    usable = plan["memory"]["usable_gib"]
    console.print(f"[dim]* = the plan as stated (FSDP over the rest); +ac = with full activation checkpointing; "
                  f"dp = dp_replicate x dp_shard; buf = gathered weights, ring K/V, pipeline and loss buffers; fits = resvd <= {usable:.1f} GiB usable; maxlb = the largest "
                  "local batch that fits[/]")

    timed = [r for r in rows if r["time"] is not None]
    if not timed:
        return
    axes = [a for a in AXIS_SHORT if any(x["axis"] == a for r in timed for x in r["time"]["axes"])]
    piped = plan["mesh"]["pp"] > 1
    table = Table(title="Communication and step time under the plan (per GPU, per step)", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True, show_edge=False)
    for col in ("strategy", "comp s", *(["bubble"] if piped else []), *(f"{AXIS_SHORT[a]} s" for a in axes),
                "step s", "tok/s/GPU", "MFU"):
        table.add_column(col, justify="left" if col == "strategy" else "right", no_wrap=True, min_width=len(col))
    links: dict[str, dict[str, list[str]]] = {}  # axis -> link -> the rows it runs there in
    for r in timed:
        t = r["time"]
        by_axis = {x["axis"]: x for x in t["axes"]}
        for a, x in by_axis.items():
            links.setdefault(a, {}).setdefault(x["link"], []).append(_row_name(r))
        table.add_row(_row_name(r), f"{t['compute_seconds']:.2f}",
                      *([f"{t['bubble_fraction']:.0%}"] if piped else []),
                      *(f"{by_axis[a]['seconds']:.2f}" if a in by_axis else "-" for a in axes),
                      f"{t['step_seconds']:.2f}", f"{t['tokens_per_s_per_gpu']:,.0f}", f"{t['mfu']:.0%}")
    console.print(table)
    stated = next((r for r in timed if r["stated"]), timed[0])
    exposed = [AXIS_SHORT[x["axis"]] for x in stated["time"]["axes"] if not x["overlapped"]]
    hidden = [AXIS_SHORT[x["axis"]] for x in stated["time"]["axes"] if x["overlapped"]]

    def where(axis: str) -> str:
        by_link = links[axis]
        if len(by_link) == 1:
            return f"{AXIS_SHORT[axis]} {LINK_WORDS.get(next(iter(by_link)), next(iter(by_link)))}"
        return f"{AXIS_SHORT[axis]} " + ", ".join(f"{LINK_WORDS.get(k, k)} ({', '.join(v)})" for k, v in by_link.items())

    console.print("[dim]links: " + "; ".join(where(a) for a in axes)
                  + (f". On the critical path: {', '.join(exposed)}" if exposed else "")
                  + (f"; overlapped with compute: {', '.join(hidden)}" if hidden else "")
                  + (". bubble = the pipeline's idle share of the step" if piped else "") + "[/]")
    console.print("[dim]launch:[/] " + " ".join(plan["torchrun"]), soft_wrap=True)


def model_from_config(source: str) -> tuple[ModelSpec, str | None]:
    """The ``ModelSpec`` of a config.json path/folder or Hub id (``bot.catalog.hf_config``) and the
    attention implementation the config names (``attn_implementation``, as transformers saves it;
    None when it names none or one the calculator does not know); a config it cannot read, or a Hub
    id offline ("no network: paste the config.json or pass --config PATH"), exits 2 with the
    reader's message."""
    from bot.catalog.hf_config import ConfigError, read_hf_config

    try:
        spec, cfg = read_hf_config(source)
        named = cfg.get("attn_implementation") or cfg.get("_attn_implementation")
        return spec, named if named in ("eager", "sdpa", "flash_attention_2") else None
    except ConfigError as err:
        _fail([Problem.of("config", "cli_config", detail=str(err))])
    except (ValueError, OSError) as err:  # unreadable file, a config of an unknown shape
        _fail([Problem.of("config", "cli_config_unreadable", source=source, detail=str(err))])


def _gib(value: float) -> str:
    # 3- and 4-digit GiB figures drop the decimal so the memory table still fits 80 columns
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _print_tables(est: Estimate, config_source: str | None = None, plan_below: bool = False) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console()
    inp = est.inputs
    nodes = f"{inp['nodes']} node(s) x {inp['gpus_per_node']}" if inp["nodes"] > 1 else "1 node"
    gpu = inp["gpu"] or f"{inp['gpu_memory_gb']:g} GB GPU"
    console.print(
        f"[bold]{inp['model']}[/] ({inp['params_b']:.2f}B params, {inp['trainable_params'] / 1e9:.3g}B trainable) "
        f"on {inp['gpu_count']} x {gpu} ({nodes}); {inp['precision']}, {inp['optimizer']}, "
        f"{inp['finetune']}, seq {inp['seq_len']}, micro-batch {inp['micro_batch']}"
        f"{_ckpt(inp)}{_options(inp)}")
    if inp["assumed"]:
        console.print(f"[dim]assumed (not stated): {', '.join(inp['assumed'])}[/]")
    model = est.resolved.model
    if config_source:
        console.print(f"[dim]model from config {config_source}: {model.describe()}[/]")
    for caveat in getattr(model, "caveats", ()):
        console.print(f"[yellow]note: {caveat}[/]")

    table = Table(title="Per-GPU peak memory (GiB)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  padding=(0, 1), collapse_padding=True, show_edge=False)
    for col in ("strategy", "param", "grad", "optim", "activ", "buf", "alloc", "resvd", "fits", "maxmb"):
        table.add_column(col, justify="left" if col == "strategy" else "right", no_wrap=True,
                         min_width=len(col))
    for s in TRAINING_STRATEGIES:
        m = est.memory[s]
        fits = "[green]yes[/]" if m.fits else "[red]no[/]"
        table.add_row(SHORT[s], *(_gib(v) for v in (m.params_gib, m.grads_gib, m.optimizer_gib,
                                                     m.activations_gib, m.buffers_gib, m.total_gib,
                                                     m.reserved_gib)),
                      fits, str(m.max_micro_batch))
    console.print(table)
    offload = est.memory["fsdp_full_shard_offload"]
    console.print("[dim]alloc = peak allocated; resvd = what PyTorch's caching allocator reserves "
                  f"({inp['reserved_model']}); fits = resvd <= usable[/]")
    console.print(f"[dim]usable per GPU: {offload.usable_gib:.1f} GiB (capacity minus {inp['headroom']}); "
                  f"CPU offload needs {offload.host_ram_gib:.1f} GiB host RAM per node[/]")
    cpu_ram = est.resolved.setup.cpu_ram_gb
    if not offload.fits and offload.total_gib <= offload.usable_gib and cpu_ram is not None:
        # the GPU side fits, so the "no" comes from the host-RAM check; say so instead of a bare "no"
        console.print(f"[red]full+offload does not fit: needs {offload.host_ram_gib:.1f} GiB host RAM per node, "
                      f"--cpu-ram-gb {cpu_ram:g} (minus OS headroom) is less[/]")

    table = Table(title="Communication and step time (per GPU, per step)", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("strategy", "comm GB", "comm s", "vs DDP", "step s", "tok/s/GPU", "MFU"):
        table.add_column(col, justify="left" if col == "strategy" else "right", no_wrap=True,
                         min_width=len(col))
    for s in TRAINING_STRATEGIES:
        c = est.comm[s]
        speed = est.throughput[s]
        table.add_row(SHORT[s], f"{c.gb_per_step:.2f}", f"{c.seconds_per_step:.3f}", f"{c.vs_ddp:.2f}x",
                      f"{est.time[s]:.3f}", f"{speed.tokens_per_s_per_gpu:,.0f}", f"{speed.mfu:.0%}")
    console.print(table)
    if inp["mfu_source"] == "stated":
        rate = f"the stated {inp['mfu']:.0%} MFU"
    elif inp["hfu"]:
        rate = f"{inp['hfu']:.0%} hardware FLOPs utilisation (calibrated on published runs)"
    else:
        rate = f"{inp['mfu']:.0%} utilisation (no published runs for this GPU)"
    core = ""
    if inp.get("attention_core_seconds"):
        core = (f", of it the attention core's {inp['attention_core_seconds']:.3f} s at the size-free "
                f"{inp['attention_core_hfu']:.1%} (no compile or float8 gain)")
    console.print(f"[dim]compute {inp['compute_seconds']:.3f} s per micro-batch at {rate} of "
                  f"{inp['peak_tflops']:g} TFLOP/s{' (assumed)' if inp['peak_tflops_assumed'] else ''}{core}; "
                  f"bus bandwidth intra {inp['intra_bus_gb_s']:g} GB/s"
                  + (f", inter-node {inp['node_nic_bus_gb_s']:g} GB/s per node" if inp["nodes"] > 1 else "")
                  + "; formulas and sources: docs/calc.md[/]")
    if plan_below and est.not_modelled:
        # the degrees are modelled, by the plan tables that follow; only these first tables ignore them
        console.print("[yellow]the tables above are pure data parallelism over all the GPUs; the stated "
                      "tensor/context/pipeline degrees are in the plan tables below[/]")
    else:
        for note in est.not_modelled:
            console.print(f"[yellow]not modelled: {note}[/]")


def _ckpt(inp: dict[str, Any]) -> str:
    if not inp["activation_checkpointing"]:
        return ""
    policy = inp.get("checkpointing_policy") or "full"
    if policy == "every_k":
        return f", checkpointing every {inp['checkpoint_every']} blocks"
    return ", selective-op checkpointing" if policy == "selective_op" else ", activation checkpointing"


def _options(inp: dict[str, Any]) -> str:
    """The run options that differ from PyTorch's defaults, for the header line."""
    parts = []
    if inp.get("optimizer_impl") not in (None, "foreach"):
        parts.append(f"{inp['optimizer_impl']} {inp['optimizer']}")
    if inp.get("ddp_bucket_view"):
        parts.append("DDP bucket view")
    if inp.get("torch_compile"):
        parts.append("torch.compile")
    if inp.get("loss_impl") not in (None, "standard"):
        parts.append(f"{inp['loss_impl']} loss")
    if inp.get("grad_accum_steps", 1) > 1:
        parts.append(f"grad accumulation {inp['grad_accum_steps']} (global batch {inp['global_batch']})")
    if inp.get("float8"):
        parts.append("float8")
    if inp.get("norm_impl") == "fused":
        parts.append("fused norm")
    if inp.get("engine") == "deepspeed":
        parts.append("DeepSpeed (shard grad-op = ZeRO-2 layout)")
    if inp.get("finetune") != "full" and inp.get("lora_targets"):
        parts.append(f"LoRA on {inp['lora_targets'].replace('_', ' ')}, base {inp['base_dtype']}")
    return "".join(f", {p}" for p in parts)
