"""The MCP server: shardwise's tools for other agents, over stdio or streamable HTTP.

Four tools, each a thin wrapper over the one implementation every surface uses:

- ``estimate_memory``  -> ``bot.calc.estimate_setup`` (formula; every strategy; instant); the model
  by name, by size, or as a Hugging Face ``config.json`` (``hf_config``: path, JSON, Hub id), read by
  ``bot.fields.read_config_input`` as ``shardwise calc --config`` reads it
- ``simulate_memory``  -> ``bot.bench.simulate.simulate_cached`` (exact per-GPU peak from a
  FakeTensorMode run of one strategy; seconds to minutes, cached by config); a catalog model or
  ``hf_config`` (``SimConfig.from_hf_config``, as ``bench simulate --config``)
- ``search_knowledge`` -> ``bot.knowledge.search.search`` (forum answers and docs, zh/en)
- ``ask``              -> ``bot.ask`` (the full Answer JSON, the same as ``shardwise ask --json``)

Bad arguments (schema violations, impossible setups, unknown models) come back as tool errors
(``isError``) with a message saying what to fix; they never take the server down.
``build_mcp_server`` takes the four functions as parameters so tests can swap one; by default
each is imported on first use, so the server starts without loading torch or the index.

SDK: ``mcp`` 2.x, ``mcp.server.mcpserver.MCPServer`` (https://py.sdk.modelcontextprotocol.io/v2/).
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import asdict
from typing import Annotated, Any, Literal

import anyio
import click
from mcp.server.mcpserver import Context  # at module level: the SDK finds the ctx parameter by its annotation
from pydantic import BaseModel, Field

from bot.answer import Answer
from bot.fields import (
    CONFIG_FIELD,
    MAX_CONFIG_CHARS,
    MAX_NAME_CHARS,
    ConfigInputError,
    card_report,
    config_field,
    describe,
    estimate_tool_fields,
    load_config_input,
    model_report,
    read_config_input,
)
from bot.mcp_jobs import MAX_RUNNING, MAX_WAITING, QueueBusy, SimulationQueue, expected_seconds, follow

log = logging.getLogger("shardwise.mcp")

StrategyName = Literal["ddp", "fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard",
                       "fsdp_full_shard_offload"]

INSTRUCTIONS = """\
shardwise answers "DDP or FSDP for my setup?" for PyTorch distributed training with numbers it can
prove. Use `ask` for a question in plain English or Chinese (it parses the setup, computes, cites
sources and says what is missing). Use `estimate_memory` when you already know the setup fields and
want per-GPU memory, communication and step time for every strategy; give the model by name, by size,
or as a Hugging Face config.json (`hf_config`: a path, the JSON itself, or a Hub id). Use `simulate_memory` to
confirm one strategy's exact per-GPU peak for a catalog model (slower; cached). Use
`search_knowledge` to find what the forum and docs say about a topic. GiB = 2^30 bytes.
Arguments are strictly typed (no true for a number, no "yes" for a boolean); errors are short."""

MAX_QUESTION_CHARS = 20_000
MAX_HISTORY_TURNS = 50
MAX_QUERY_CHARS = 2_000
MAX_ERROR_CHARS = 200  # a tool error never echoes a huge input back
LIMITS_TEXT = (f"Limits: names (model, gpu) up to {MAX_NAME_CHARS} characters, hf_config up to "
               f"{MAX_CONFIG_CHARS:,} characters, numbers finite and within the "
               f"ranges in the schema; an error message is at most {MAX_ERROR_CHARS} characters.")
INSTRUCTIONS += "\n" + LIMITS_TEXT + (f" Questions up to {MAX_QUESTION_CHARS:,} characters with up to "
                                      f"{MAX_HISTORY_TURNS} earlier turns; search queries up to {MAX_QUERY_CHARS:,}.")


# simulate_memory's hf_config: the field both estimate_memory tools take (bot.fields), at module
# level because the SDK resolves the tool's annotations in this module's namespace
HF_CONFIG_TYPE, HF_CONFIG_INFO = config_field()


# ---------------------------------------------------------------------------------------------
# Structured outputs
class MemoryReport(BaseModel):
    """Calculator output: resolved setup, the defaults it assumed, and per-strategy figures."""

    setup: dict[str, Any] = Field(description="The setup as computed (stated fields plus defaults).")
    assumed: list[str] = Field(description="Fields filled from defaults rather than stated.")
    memory: dict[str, dict[str, Any]] = Field(
        description="Per strategy: params/grads/optimizer/activations/buffers/total GiB per GPU, "
                    "fits, max_micro_batch, usable_gib, host_ram_gib.")
    comm: dict[str, dict[str, Any]] = Field(description="Per strategy: gb_per_step, seconds_per_step, vs_ddp.")
    step_seconds: dict[str, float] = Field(description="Per strategy: estimated seconds per training step.")
    numbers: dict[str, float | int | bool | None] = Field(
        description="The same figures as flat keys memory.<strategy>.<field>, comm.<strategy>.<field>, "
                    "time.<strategy>.step_seconds (the keys of an Answer's numbers).")
    inputs: dict[str, Any] = Field(description="Every input the formulas used (model shape, links, peak "
                                               "TFLOPS, headroom), for citing the result.")
    model_from_config: dict[str, Any] | None = Field(
        default=None, description="When the model came from `hf_config`: its source, name, kind, total and "
                                  "active parameters (they differ for MoE), approximate, caveats.")
    gpu_card: dict[str, Any] = Field(
        default_factory=dict, description="The card computed for: name, memory_gb, in_catalog, approximate, "
                                          "backend, note. A card the catalog lacks is accepted with its stated "
                                          "memory and marked (in_catalog false, approximate true).")


class SimulationReport(BaseModel):
    """One simulated training step: exact per-GPU peak and its breakdown at the peak, GiB."""

    run_id: str = Field(description="Stored result id (cite as a bench source).")
    config: dict[str, Any] = Field(description="The normalized configuration that was simulated.")
    peak_gib: float
    params_gib: float
    grads_gib: float
    optimizer_gib: float
    activations_gib: float
    buffers_gib: float = Field(description="Temporaries: unsharded params/grads, collective buffers, DDP "
                                           "buckets.")
    host_gib: float = Field(description="Host RAM held by CPU offload (not part of the GPU peak).")
    seconds: float = Field(description="Wall time the simulation took when it ran.")
    torch_version: str


class KnowledgeHit(BaseModel):
    id: str
    kind: Literal["forum", "doc"]
    title: str
    url: str
    score: float = Field(description="Fused rank score; compare within one query only.")
    lang: str
    text: str = Field(description="Forum: the verbatim answer. Doc: the matching passage.")


class KnowledgeResults(BaseModel):
    query: str
    hits: list[KnowledgeHit]


class Turn(BaseModel):
    role: Literal["user", "assistant"]
    content: str = Field(max_length=MAX_QUESTION_CHARS)


# ---------------------------------------------------------------------------------------------
def _default_estimate(setup, model_spec=None):
    from bot.calc import estimate_setup

    return estimate_setup(setup, model_spec=model_spec)


def _default_simulate(config, progress=None, should_stop=None):
    from bot.bench.simulate import simulate_cached

    return simulate_cached(config, progress=progress, should_stop=should_stop)


def _default_lookup(config):
    """``(run_id, result)`` when the store has this simulation (served at once, no queue)."""
    from bot.bench.store import ResultStore

    store = ResultStore()
    found = store.find_simulation(config)
    return ((found.run_id, found) if found is not None and found.run_id else None), store


def _default_search(query: str, k: int, kinds):
    from bot.knowledge.search import search

    return search(query, k=k, kinds=kinds)


def _default_ask(question: str, history=None) -> Answer:
    # The same answer as ``shardwise ask`` (``bot.llm.answer``: the LLM when configured).
    from bot.llm import answer

    return answer(question, history)


def build_mcp_server(*, ask_fn=None, estimate_fn=None, simulate_fn=None, search_fn=None, lookup_fn=None,
                     max_running: int = MAX_RUNNING, max_waiting: int = MAX_WAITING):
    """The MCPServer with the four tools; each ``*_fn`` defaults to the real implementation.

    ``simulate_fn(config, progress=, should_stop=)`` runs one simulation; ``lookup_fn(config)``
    returns ``((run_id, result) or None, store)`` for a stored one (default: the result store when
    ``simulate_fn`` is the real one, nothing otherwise). At most ``max_running`` simulations run
    at once with ``max_waiting`` more queued (``bot.mcp_jobs``)."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from bot.setup import SetupError, TrainingSetup

    ask_fn = ask_fn or _default_ask
    estimate_fn = estimate_fn or _default_estimate
    lookup_fn = lookup_fn or (_default_lookup if simulate_fn is None else (lambda config: (None, None)))
    simulate_fn = simulate_fn or _default_simulate
    simulations = SimulationQueue(simulate_fn, max_running=max_running, max_waiting=max_waiting)
    search_fn = search_fn or _default_search
    server = _server_class()("shardwise", instructions=INSTRUCTIONS, log_level="WARNING")
    setup_fields = set(TrainingSetup.model_fields)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def estimate_memory(**fields) -> MemoryReport:
        hf_config = fields.get(CONFIG_FIELD)
        fields = {k: v for k, v in fields.items() if k in setup_fields and v is not None}
        setup = TrainingSetup(**fields)
        spec = source = None
        try:
            if hf_config is not None:  # the reader `shardwise calc --config` uses
                spec, source = read_config_input(hf_config, model=setup.model, params_b=setup.params_b)
            est = estimate_fn(setup, spec) if spec is not None else estimate_fn(setup)
        except ConfigInputError as err:
            raise ToolError(str(err)) from None
        except SetupError as err:
            raise ToolError("cannot compute this setup: " + "; ".join(str(p) for p in err.problems)) from None
        except (ValueError, LookupError) as err:  # a catalog or formula refusing a value (as the CLI)
            raise ToolError(f"cannot compute this setup: {err}") from None
        return MemoryReport(
            model_from_config=model_report(spec, source or "") if spec is not None else None,
            gpu_card=card_report(est.resolved),
            setup={k: v for k, v in est.resolved.setup.model_dump().items() if v is not None},
            assumed=list(est.resolved.assumed),
            memory={s: asdict(m) for s, m in est.memory.items()},
            comm={s: asdict(c) for s, c in est.comm.items()},
            step_seconds=dict(est.time), numbers=est.numbers(), inputs=est.inputs,
        )

    # The arguments are TrainingSetup's own fields plus `hf_config`, described once in bot.fields
    # (units, ranges, strict types, length limits): nothing here re-declares them.
    estimate_memory.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                           annotation=Annotated[annotation, info])
         for name, (annotation, info) in estimate_tool_fields().items()],
        return_annotation=MemoryReport)
    # open world: a Hub id in hf_config may be fetched from the Hub (when HF_HUB_OFFLINE=0)
    hub_reading = ToolAnnotations(read_only_hint=True, open_world_hint=True)
    server.tool(title="Per-GPU memory for every strategy", annotations=hub_reading, description=(
        "Compute per-GPU memory (params, grads, optimizer state, activations, buffers; whether it fits "
        "and the largest micro-batch that fits), communication per step and step time for EVERY "
        "strategy (ddp, fsdp_shard_grad_op, fsdp_full_shard, fsdp_hybrid_shard, "
        "fsdp_full_shard_offload) from setup fields. Needs the model (a catalog name, params_b, or "
        "`hf_config`: a Hugging Face config.json path, its JSON, or a Hub id), the GPU (gpu name or "
        "gpu_memory_gb; a card the catalog lacks is accepted with gpu_memory_gb and marked in "
        "gpu_card) and gpu_count (or nodes and gpus_per_node); other fields "
        "default (bf16-mixed, adamw, full fine-tune, seq_len 2048, micro_batch 1) and are listed in "
        "`assumed`. Instant; a formula, not a measurement. " + LIMITS_TEXT))(estimate_memory)

    @server.tool(title="Simulate one strategy's exact per-GPU peak", description=(
        "Measure the exact per-GPU peak memory of one training step (forward, backward, optimizer "
        "step) for a catalog model, or any model given as a Hugging Face config.json (`hf_config`: a "
        "path, its JSON, or a Hub id; built with transformers), under one strategy, by running the "
        "real PyTorch DDP/FSDP2 code on fake tensors on CPU (no GPU, nothing allocated). Slower than "
        "estimate_memory (seconds for small models, minutes for 70B); results are cached by "
        "configuration and get a run_id to cite. Long runs send progress notifications (the first "
        "one says the expected duration) and stop when the request is cancelled; "
        f"{max_running} run(s) at once and {max_waiting} waiting, beyond that the call is refused "
        "at once as busy."))
    async def simulate_memory(
        gpu_count: Annotated[int, Field(description="World size (total GPUs).", ge=1, le=65_536, strict=True)],
        strategy: StrategyName,
        model: Annotated[str | None, Field(description="Catalog model name ('Llama-2-7B', 'GPT-2', 'tiny', ...) "
                                                       "or a size like '7b'; or give hf_config instead.",
                                           min_length=1, max_length=100)] = None,
        hf_config: Annotated[HF_CONFIG_TYPE, HF_CONFIG_INFO] = None,  # type: ignore[valid-type]
        gpus_per_node: Annotated[int | None, Field(description="HSDP only: GPUs per node (shard group).",
                                                   ge=1, le=64, strict=True)] = None,
        seq_len: Annotated[int, Field(description=describe("seq_len"), ge=1, le=1 << 20, strict=True)] = 2048,
        micro_batch: Annotated[int, Field(description=describe("micro_batch"), ge=1, le=4096, strict=True)] = 1,
        precision: Literal["bf16-mixed", "fp16-mixed", "bf16", "fp32"] = "bf16-mixed",
        activation_checkpointing: Annotated[bool, Field(description=describe("activation_checkpointing"),
                                                        strict=True)] = False,
        optimizer: Literal["adamw", "sgd"] = "adamw",
        ctx: Context | None = None,
    ) -> SimulationReport:
        from bot.bench.simulate import SimConfig, SimError

        if (model is None) == (hf_config is None):  # `bench simulate`'s rule: --model or --config
            raise ToolError("pass either model or hf_config (a config.json path, its JSON, or a Hub id)")
        options: dict[str, Any] = dict(
            gpu_count=gpu_count, strategy=strategy, gpus_per_node=gpus_per_node, seq_len=seq_len,
            micro_batch=micro_batch, precision=precision, activation_checkpointing=activation_checkpointing,
            optimizer=optimizer)
        try:
            if hf_config is not None:  # read as `bench simulate --config` reads it, then built with transformers
                read = load_config_input(hf_config)
                config = SimConfig.from_hf_config(read.data, model=read.spec.name, **options)
            else:
                assert model is not None  # one of the two is given (checked above)
                config = SimConfig(model=model, **options)
            config = config.normalized()  # a config the simulator refuses is refused now, not after queueing
            found, store = await anyio.to_thread.run_sync(lookup_fn, config)
            if found is not None:
                run_id, result = found
            else:
                job = simulations.submit(config, expected_seconds(config, store))

                async def report(fraction: float, message: str) -> None:
                    if ctx is not None:
                        await ctx.report_progress(fraction, 1.0, message)

                run_id, result = await follow(job, report)
        except QueueBusy as err:
            raise ToolError(str(err)) from None
        except ConfigInputError as err:
            raise ToolError(str(err)) from None
        except SimError as err:
            raise ToolError(str(err).split("\n", 1)[0]) from None  # the reason, not the child's traceback
        return SimulationReport(
            run_id=run_id, config=asdict(result.config), peak_gib=result.peak_gib, params_gib=result.params_gib,
            grads_gib=result.grads_gib, optimizer_gib=result.optimizer_gib,
            activations_gib=result.activations_gib, buffers_gib=result.buffers_gib, host_gib=result.host_gib,
            seconds=result.seconds, torch_version=result.torch_version)

    @server.tool(title="Search the forum and docs", annotations=read_only, description=(
        "Search shardwise's knowledge: the forum thread's answers on DDP vs FSDP (Chinese originals) "
        "and docs written for this project (FSDP2, DDP, HSDP, offload, memory math), in English or "
        "Chinese. Returns the best entries with their source URLs and text to quote."))
    def search_knowledge(
        query: Annotated[str, Field(description="What to look for, English or Chinese.",
                                    max_length=MAX_QUERY_CHARS)],
        k: Annotated[int, Field(description="How many entries to return.", ge=1, le=20, strict=True)] = 5,
        kinds: Annotated[list[Literal["forum", "doc"]] | None,
                         Field(description="Restrict to forum answers or docs; default both.")] = None,
    ) -> KnowledgeResults:
        if not query.strip():
            raise ToolError("query is empty: say what to look for")
        hits = search_fn(query, k, tuple(kinds) if kinds else ("forum", "doc"))
        return KnowledgeResults(query=query, hits=[KnowledgeHit(**asdict(h)) for h in hits])

    @server.tool(name="ask", title="Ask shardwise (full answer)", annotations=read_only, description=(
        "Ask a question about choosing DDP or FSDP (or HSDP, offload) in English or Chinese, e.g. "
        "'DDP or FSDP for Llama-2-7B on 8x A100 40GB?'. Returns the full Answer: the parsed setup, "
        "what is missing, the recommendation (strategy id, alternatives, confidence, reasons), every "
        "figure as flat numbers, citations (forum/doc/calc/bench), follow-up questions and the answer "
        "as markdown with [n] markers. Pass earlier turns in `history` for follow-ups."))
    def ask_tool(
        question: Annotated[str, Field(description="The question, English or Chinese.",
                                       max_length=MAX_QUESTION_CHARS)],
        history: Annotated[list[Turn] | None,
                           Field(description="Earlier turns of this conversation, oldest first.",
                                 max_length=MAX_HISTORY_TURNS)] = None,
    ) -> Answer:
        turns = [t.model_dump() for t in history] if history else None
        return ask_fn(question, history=turns)

    _reject_unknown_arguments(server)
    return server


def short_error(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """One line of at most ``limit`` characters (a 1 MB argument must not come back as a 1 MB error)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _validation_summary(err) -> str:
    # field and reason only: the rejected values are the caller's data, maybe huge
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors(include_input=False)]
    return "invalid arguments: " + "; ".join(parts)


def _server_class():
    """MCPServer whose tool errors are short: validation errors name the field and the rule, every
    message is cut to ``MAX_ERROR_CHARS`` (the SDK would echo the input)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import ValidationError

    class ShardwiseMCPServer(MCPServer):
        async def call_tool(self, name, arguments, context=None):
            try:
                return await super().call_tool(name, arguments, context)
            except UnexpectedToolError:
                raise
            except ToolError as err:
                cause = err.__cause__
                text = _validation_summary(cause) if isinstance(cause, ValidationError) else str(err)
                raise ToolError(short_error(text)) from cause

    return ShardwiseMCPServer


def _reject_unknown_arguments(server) -> None:
    """Make a misspelled argument ("micro_batch_size") an error instead of silently dropping it
    (the SDK ignores unknown keys, and a dropped field would be computed from its default)."""
    for tool in server._tool_manager.list_tools():  # no public hook for the argument model's config
        model = tool.fn_metadata.arg_model
        model.model_config["extra"] = "forbid"
        model.model_rebuild(force=True)
        tool.parameters["additionalProperties"] = False


@click.command(name="mcp")
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: interface to bind.")
@click.option("--port", default=8765, show_default=True, type=int, help="HTTP: port (endpoint /mcp).")
def mcp_command(use_http: bool, host: str, port: int) -> None:
    """Serve estimate_memory, simulate_memory, search_knowledge and ask over MCP (stdio by default)."""
    from bot.env import configure_runtime

    # stdout is the protocol channel in stdio mode: configure_runtime logs to stderr only.
    configure_runtime(threads=1, level=logging.WARNING)
    server = build_mcp_server()
    if use_http:
        click.echo(f"shardwise MCP: streamable HTTP on http://{host}:{port}/mcp", err=True)
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")
