"""The MCP server: shardwise's tools for other agents, over stdio or streamable HTTP.

Four tools, each a thin wrapper over the one implementation every surface uses:

- ``estimate_memory``  -> ``bot.tools.estimate_memory`` (formula; every strategy; instant); the model
  by name, by size, or as a Hugging Face ``config.json`` (``hf_config``: path, JSON, Hub id), read by
  ``bot.fields.read_config_input`` as ``shardwise calc --config`` reads it
- ``simulate_memory``  -> ``bot.bench.simulate.simulate_cached`` (exact per-GPU peak from a
  FakeTensorMode run of one strategy; seconds to minutes, cached by config); a catalog model or
  ``hf_config`` (``SimConfig.from_hf_config``, as ``bench simulate --config``)
- ``search_knowledge`` -> ``bot.tools.search_knowledge`` (forum answers and docs, zh/en)
- ``ask``              -> ``bot.ask`` (the full Answer JSON, the same as ``shardwise ask --json``)

Bad arguments (schema violations, impossible setups, unknown models) come back as tool errors
(``isError``) with a message saying what to fix; they never take the server down.
``estimate_memory`` and ``search_knowledge`` are generated from the tool registry (``bot.tools``),
as the agent's are. ``build_mcp_server`` takes ``ask`` and ``simulate`` as parameters so tests can swap one; by default
each is imported on first use, so the server starts without loading torch or the index.

SDK: ``mcp`` 2.x, ``mcp.server.mcpserver.MCPServer`` (https://py.sdk.modelcontextprotocol.io/v2/).
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Annotated, Any, Literal

import anyio
import click
from mcp.server.mcpserver import Context  # at module level: the SDK finds the ctx parameter by its annotation
from pydantic import BaseModel, Field

from bot.answer import Answer
from bot.core.errors import UserError
from bot.fields import (
    MAX_CONFIG_CHARS,
    MAX_NAME_CHARS,
    ConfigInputError,
    config_field,
    describe,
)
from bot.surfaces.mcp_jobs import (
    MAX_RUNNING,
    MAX_WAITING,
    QueueBusy,
    SimulationQueue,
    expected_seconds,
    follow,
)
from bot.tools import (
    ToolInputError,
    add_mcp_tools,
    run_simulation,
    simulation_config,
    stored_simulation,
)

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
# Structured outputs (estimate_memory's and search_knowledge's are the registry's, bot.tools)
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


class Turn(BaseModel):
    role: Literal["user", "assistant"]
    content: str = Field(max_length=MAX_QUESTION_CHARS)


# ---------------------------------------------------------------------------------------------
def _default_ask(question: str, history=None) -> Answer:
    # The same answer as ``shardwise ask`` (``bot.surfaces.llm.answer``: the LLM when configured).
    from bot.surfaces.llm import answer

    return answer(question, history)


def build_mcp_server(*, ask_fn=None, simulate_fn=None, lookup_fn=None,
                     max_running: int = MAX_RUNNING, max_waiting: int = MAX_WAITING):
    """The MCPServer with the four tools; each ``*_fn`` defaults to the real implementation.

    ``simulate_fn(config, progress=, should_stop=)`` runs one simulation; ``lookup_fn(config)``
    returns ``((run_id, result) or None, store)`` for a stored one (default: the result store when
    ``simulate_fn`` is the real one, nothing otherwise). At most ``max_running`` simulations run
    at once with ``max_waiting`` more queued (``bot.surfaces.mcp_jobs``)."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    ask_fn = ask_fn or _default_ask
    lookup_fn = lookup_fn or (stored_simulation if simulate_fn is None else (lambda config: (None, None)))
    simulate_fn = simulate_fn or run_simulation
    simulations = SimulationQueue(simulate_fn, max_running=max_running, max_waiting=max_waiting)
    server = _server_class()("shardwise", instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    add_mcp_tools(server, note=LIMITS_TEXT)  # estimate_memory, search_knowledge (bot.tools)

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
        options: dict[str, Any] = dict(
            gpu_count=gpu_count, strategy=strategy, gpus_per_node=gpus_per_node, seq_len=seq_len,
            micro_batch=micro_batch, precision=precision, activation_checkpointing=activation_checkpointing,
            optimizer=optimizer)
        try:
            config = simulation_config(model, hf_config, **options)  # refused now, not after queueing
            found, store = await anyio.to_thread.run_sync(lookup_fn, config)
            if found is not None:
                run_id, result = found
            else:
                job = simulations.submit(config, expected_seconds(config, store))

                async def report(fraction: float, message: str) -> None:
                    if ctx is not None:
                        await ctx.report_progress(fraction, 1.0, message)

                run_id, result = await follow(job, report)
        except (QueueBusy, ToolInputError, ConfigInputError) as err:
            raise ToolError(str(err)) from None
        except UserError as err:  # the simulator's refusal (SimError), an unknown model name
            raise ToolError(str(err).split("\n", 1)[0]) from None  # the reason, not the child's traceback
        return SimulationReport(
            run_id=run_id, config=asdict(result.config), peak_gib=result.peak_gib, params_gib=result.params_gib,
            grads_gib=result.grads_gib, optimizer_gib=result.optimizer_gib,
            activations_gib=result.activations_gib, buffers_gib=result.buffers_gib, host_gib=result.host_gib,
            seconds=result.seconds, torch_version=result.torch_version)

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
