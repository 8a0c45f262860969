"""The tool registry: each tool once (name, description, argument fields, function, output model),
and the adapters that make LangChain tools (the agent in ``bot.surfaces.llm``) and MCP tools
(``bot.surfaces.mcp_server``) from it.

A tool's function takes its arguments as keywords and returns its output model (or plain JSON-able
data); a problem the caller can fix is a :class:`ToolInputError` carrying every problem. Each
surface turns that into its own form: the MCP adapter into a tool error (``isError``), the
LangChain adapter into ``{"error", "problems"}`` the agent reads. Arguments come from one field
table per tool (for ``estimate_memory``: ``TrainingSetup``'s fields described in ``bot.fields``);
MCP validates them strictly (no ``"8"`` for 8, ranges in the schema), the agent's view
(``agent_fields``) is the same fields without the ranges, so an out-of-range value comes back
with every problem named rather than as a schema exception.

- ``estimate_memory`` (LangChain and MCP): per-GPU memory, communication and step time for every
  strategy and the decision ladder's pick; the model by name, by size or as a Hugging Face
  ``config.json`` (``hf_config``: a path, the JSON text or object, a Hub id, read as ``shardwise
  calc --config`` reads it); a card the catalog lacks is accepted with ``gpu_memory_gb`` and marked.
- ``search_knowledge`` (LangChain and MCP): forum answers and docs, zh/en.
- ``simulate_memory`` and ``lookup_benchmarks`` (LangChain): a stored simulation, or one run now
  for small models; stored benchmark results. MCP's ``simulate_memory`` (which runs any size, with
  progress) and ``ask`` are defined in ``bot.surfaces.mcp_server``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from bot.core.setup import SetupError, TrainingSetup, resolve_setup
from bot.fields import (
    CONFIG_FIELD,
    ConfigInputError,
    card_report,
    config_field,
    describe,
    estimate_tool_fields,
    model_report,
)
from bot.strategies import TRAINING_STRATEGIES

# Models above this size are not simulated inside an agent's tool call (a 7B simulation takes
# ~30 s); the tool answers with a stored result or says how to run one.
MAX_INLINE_SIM_PARAMS_B = 1.0
MAX_QUERY_CHARS = 2_000
MAX_HITS = 20

Fields = dict[str, tuple[Any, Any]]  # name -> (annotation, pydantic FieldInfo)


class ToolInputError(ValueError):
    """Arguments a tool cannot use; ``problems`` names each one, the message says what to fix."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems) if problems else [message]


@dataclass(frozen=True)
class Tool:
    """One tool as every surface sees it."""

    name: str
    title: str
    description: str
    fields: Callable[[], Fields]  # the arguments (strict, with ranges): MCP's schema
    function: Callable[..., Any]  # keywords in, the output model (or JSON-able data) out
    output: type[BaseModel] | None  # the structured output MCP declares
    surfaces: tuple[str, ...] = ("langchain", "mcp")
    agent_fields: Callable[[], Fields] | None = None  # the agent's (lenient) view; default: fields
    open_world: bool = False  # may reach outside (a Hub id fetched when online)

    def args_model(self, *, agent: bool = False) -> type[BaseModel]:
        """The arguments as a pydantic model (unknown arguments are refused)."""
        fields = (self.agent_fields or self.fields)() if agent else self.fields()
        name = "".join(part.title() for part in self.name.split("_")) + "Args"
        definitions: dict[str, Any] = dict(fields)
        return create_model(name, __config__=ConfigDict(extra="forbid"),
                            __doc__=self.description.split("\n")[0], **definitions)


# ---------------------------------------------------------------------------------------------
# estimate_memory
class MemoryReport(BaseModel):
    """Calculator output: resolved setup, the defaults it assumed, per-strategy figures, the pick."""

    setup: dict[str, Any] = Field(description="The setup as computed (stated fields plus defaults).")
    assumed: list[str] = Field(description="Fields filled from defaults rather than stated.")
    memory: dict[str, dict[str, Any]] = Field(
        description="Per strategy: params/grads/optimizer/activations/buffers/total GiB per GPU, "
                    "fits, max_micro_batch, usable_gib, host_ram_gib.")
    comm: dict[str, dict[str, Any]] = Field(description="Per strategy: gb_per_step, seconds_per_step, vs_ddp.")
    step_seconds: dict[str, float] = Field(description="Per strategy: estimated seconds per training step.")
    numbers: dict[str, float | int | bool | None] = Field(
        description="The same figures as flat keys memory.<strategy>.<field>, comm.<strategy>.<field>, "
                    "time.<strategy>.step_seconds (the keys of an Answer's numbers; what `shardwise calc "
                    "--json` prints).")
    inputs: dict[str, Any] = Field(description="Every input the formulas used (model shape, links, peak "
                                               "TFLOPS, headroom), for citing the result.")
    recommendation: dict[str, Any] = Field(
        default_factory=dict, description="The decision ladder's pick (docs/decision.md): strategy, variant, "
                                          "alternatives, confidence.")
    model_from_config: dict[str, Any] | None = Field(
        default=None, description="When the model came from `hf_config`: its source, name, kind, total and "
                                  "active parameters (they differ for MoE), approximate, caveats.")
    gpu_card: dict[str, Any] = Field(
        default_factory=dict, description="The card computed for: name, memory_gb, in_catalog, approximate, "
                                          "backend, note. A card the catalog lacks is accepted with its stated "
                                          "memory and marked (in_catalog false, approximate true).")


def estimate_memory(**fields: Any) -> MemoryReport:
    """Per-GPU memory, communication, step time and throughput for every strategy, and the
    recommendation of the decision ladder (docs/decision.md), which also weighs the variants
    (activation checkpointing, DDP bucket view + fused AdamW). The model is a catalog name,
    params_b, or `hf_config`: a Hugging Face config.json path, its JSON, or a Hub id."""
    from bot.calc import estimate, resolve_with_model
    from bot.decide import decide
    from bot.evidence import evidence_for_resolved
    from bot.fields import read_config_input

    hf_config = fields.pop(CONFIG_FIELD, None)
    unknown = sorted(set(fields) - set(TrainingSetup.model_fields))
    if unknown:
        raise ToolInputError(f"unknown arguments: {', '.join(unknown)}")
    setup = TrainingSetup(**{k: v for k, v in fields.items() if v is not None})
    spec = source = None
    try:
        if hf_config is not None:  # the reader `shardwise calc --config` uses
            spec, source = read_config_input(hf_config, model=setup.model, params_b=setup.params_b)
        resolved = resolve_with_model(setup, spec) if spec is not None else resolve_setup(setup)
        est = estimate(resolved)
        ev = evidence_for_resolved(resolved, est)
    except ConfigInputError as err:
        raise ToolInputError(str(err)) from None
    except SetupError as err:
        problems = [str(p) for p in err.problems]
        raise ToolInputError("cannot compute this setup: " + "; ".join(problems), problems) from None
    except (ValueError, LookupError) as err:  # a catalog or formula refusing a value (as the CLI)
        raise ToolInputError(f"cannot compute this setup: {err}", [str(err)]) from None
    d = decide(ev)
    return MemoryReport(
        setup={k: v for k, v in resolved.setup.model_dump().items() if v is not None},
        assumed=list(resolved.assumed),
        memory={s: asdict(m) for s, m in est.memory.items()},
        comm={s: asdict(c) for s, c in est.comm.items()},
        step_seconds=dict(est.time), numbers=est.numbers(), inputs=est.inputs,
        recommendation={"strategy": d.strategy, "variant": d.variant, "alternatives": d.alternatives,
                        "confidence": d.confidence},
        model_from_config=model_report(spec, source or "") if spec is not None else None,
        gpu_card=card_report(resolved),
    )


def _agent_setup_fields() -> Fields:
    """``TrainingSetup``'s own fields (names, types, allowed values) with the descriptions and
    units of ``bot.fields``, plus ``hf_config``, without ranges: ``check_setup`` inside the tool
    names every problem. A field without a description in ``bot.fields.FIELD_DOCS`` raises
    KeyError here (tests/unit/test_tool_schemas.py)."""
    fields: Fields = {name: (info.annotation, Field(default=None, description=describe(name)))
                      for name, info in TrainingSetup.model_fields.items()}
    fields[CONFIG_FIELD] = config_field()
    return fields


# ---------------------------------------------------------------------------------------------
# search_knowledge
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


KindName = Literal["forum", "doc"]


def search_knowledge(query: str, k: int = 5, kinds: list[str] | None = None) -> KnowledgeResults:
    """Forum answers and docs relevant to the query (hybrid BM25 + dense search)."""
    from bot.knowledge.search import search

    if not isinstance(query, str) or not query.strip():
        raise ToolInputError("query is empty: say what to look for")
    hits = search(query, k=max(1, min(int(k), MAX_HITS)), kinds=tuple(kinds or ("forum", "doc")))
    return KnowledgeResults(query=query, hits=[KnowledgeHit(**asdict(h)) for h in hits])


def _search_fields() -> Fields:
    return {
        "query": (str, Field(description="What to look for, English or Chinese.", max_length=MAX_QUERY_CHARS)),
        "k": (int, Field(default=5, description="How many entries to return.", ge=1, le=MAX_HITS, strict=True)),
        "kinds": (list[KindName] | None, Field(default=None, description="Restrict to forum answers or docs; "
                                                                         "default both.")),
    }


def _agent_search_fields() -> Fields:
    return {"query": (str, Field(description="What to look for, English or Chinese.")),
            "k": (int, Field(default=5, description="How many entries to return (at most 20).")),
            "kinds": (list[KindName] | None, Field(default=None, description="forum, doc, or both (default)."))}


# ---------------------------------------------------------------------------------------------
# simulate_memory and lookup_benchmarks (the agent's)
StrategyName = Literal["ddp", "fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard",
                       "fsdp_full_shard_offload"]


def _simulate_fields() -> Fields:
    return {
        "model": (str | None, Field(default=None, description="catalog model name or a size like '7b'; or "
                                                              "give hf_config instead")),
        CONFIG_FIELD: config_field(),  # the field both estimate_memory tools take (bot.fields)
        "gpu_count": (int, Field(description="number of GPUs (ranks)")),
        "strategy": (StrategyName, Field()),
        "gpus_per_node": (int | None, Field(default=None)),
        "seq_len": (int, Field(default=2048)),
        "micro_batch": (int, Field(default=1)),
        "precision": (str, Field(default="bf16-mixed")),
        "activation_checkpointing": (bool, Field(default=False)),
    }


def simulation_config(model: str | None, hf_config: Any, **options: Any) -> Any:
    """The ``SimConfig`` both ``simulate_memory`` tools run: a catalog model (or a size like '7b')
    or ``hf_config`` (a config.json path, its JSON, or a Hub id, read as ``bench simulate --config``
    reads it and built with transformers), normalised so that a configuration the simulator refuses
    is refused now, before any queueing. Raises ``ToolInputError`` when neither or both are given,
    and the ``UserError`` of the layer that refused it otherwise."""
    from bot.bench.simulate import SimConfig
    from bot.fields import load_config_input

    if (model is None) == (hf_config is None):  # `bench simulate`'s rule: --model or --config
        raise ToolInputError("pass either model or hf_config (a config.json path, its JSON, or a Hub id)")
    if hf_config is not None:
        read = load_config_input(hf_config)
        return SimConfig.from_hf_config(read.data, model=read.spec.name, **options).normalized()
    assert model is not None  # one of the two is given (checked above)
    return SimConfig(model=model, **options).normalized()


def run_simulation(config: Any, progress: Any = None, should_stop: Any = None) -> tuple[str, Any]:
    """``(run_id, SimResult)``: the stored simulation of ``config``, else simulated now and stored."""
    from bot.bench.simulate import simulate_cached

    return simulate_cached(config, progress=progress, should_stop=should_stop)


def stored_simulation(config: Any) -> tuple[tuple[str, Any] | None, Any]:
    """``((run_id, SimResult) or None, store)``: the stored simulation of ``config`` when the result
    store has one (served at once, no queue), with the store its expected duration is read from."""
    from bot.bench.store import ResultStore

    store = ResultStore()
    found = store.find_simulation(config)
    return ((found.run_id, found) if found is not None and found.run_id else None), store


def simulate_memory(**args: Any) -> dict[str, Any]:
    """Exact per-GPU peak from a FakeTensor simulation: stored result, or run now for small models.
    The model is a catalog name or `hf_config` (a config.json path, its JSON, or a Hub id)."""
    from bot.bench.simulate import SimError, simulate_cached
    from bot.bench.store import ResultStore
    from bot.catalog import UnknownNameError

    hf_config = args.pop(CONFIG_FIELD, None)
    model = args.pop("model", None)
    try:
        cfg = simulation_config(model, hf_config, **args)
        store = ResultStore()
        found = store.find_simulation(cfg)
        if found is not None:
            return {"run_id": found.run_id, **found.to_dict()}
        if cfg.spec().params_b > MAX_INLINE_SIM_PARAMS_B:
            how = "--config PATH|HUB_ID" if hf_config is not None else f"--model {cfg.model!r}"
            return {"stored": False, "message": "no stored simulation for this config; run "
                    f"`shardwise bench simulate {how}` to record one (takes about half a minute)"}
        run_id, result = simulate_cached(cfg, store)
        return {"run_id": run_id, **result.to_dict()}
    except (ConfigInputError, SimError, UnknownNameError, TypeError) as err:
        raise ToolInputError(str(err)) from None


def lookup_benchmarks(model: str | None = None, strategy: str | None = None) -> list[dict[str, Any]]:
    """Stored benchmark and simulation results (ids "run-..." are citable), newest first."""
    from bot.bench.store import ResultStore
    from bot.catalog import UnknownNameError, lookup_model

    if model:
        try:
            model = lookup_model(model).name
        except UnknownNameError:
            pass
    if strategy is not None and strategy not in TRAINING_STRATEGIES:
        raise ToolInputError(f"unknown strategy {strategy!r}")
    store: Any = ResultStore()
    runs = store.find_runs(model=model, strategy=strategy)[:10]
    return [{"id": r.id, "kind": r.kind, "summary": r.summary(), "figures": r.figures} for r in runs]


def _bench_fields() -> Fields:
    return {"model": (str | None, Field(default=None)), "strategy": (str | None, Field(default=None))}


# ---------------------------------------------------------------------------------------------
# The page's calls (bot/web): its strategy x precision table, Simulate and the setup panel reach
# the calculator, the simulator and the catalog through these, as the agent and MCP do through
# the tools above; the page itself only shows what comes back.
class SimulationUnavailable(ToolInputError):
    """A setup Simulate cannot run: ``incomplete`` when fields are missing, else a setup the
    simulator refuses (LoRA, a model it cannot build)."""

    def __init__(self, message: str, incomplete: bool) -> None:
        super().__init__(message)
        self.incomplete = incomplete


def setup_arguments(setup: dict[str, Any]) -> dict[str, Any]:
    """The fields of an answer's ``setup`` that ``estimate_memory`` takes (unset ones left out)."""
    return {k: v for k, v in setup.items() if k in TrainingSetup.model_fields and v is not None}


def estimate_precisions(setup: dict[str, Any], precisions: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``estimate_memory``'s flat ``numbers`` for ``setup`` at each precision, by precision; a
    precision the setup cannot run (bf16 on a card without it) is left out."""
    base = setup_arguments(setup)
    out: dict[str, dict[str, Any]] = {}
    for precision in precisions:
        try:
            out[precision] = estimate_memory(**{**base, "precision": precision}).numbers
        except ToolInputError:
            continue
    return out


def simulation_config_for_setup(setup: dict[str, Any], strategy: str) -> Any:
    """The simulator's config (``bot.bench.simulate.SimConfig``, normalised) for ``setup`` under
    ``strategy``; raises :class:`SimulationUnavailable`."""
    from bot.bench.simulate import SimConfig, SimError

    try:
        resolved = resolve_setup(TrainingSetup(**setup_arguments(setup)))
    except (SetupError, ValueError) as err:
        raise SimulationUnavailable(str(err), incomplete=True) from None
    try:
        return SimConfig.from_resolved(resolved, strategy).normalized()
    except SimError as err:
        raise SimulationUnavailable(str(err).rstrip("."), incomplete=False) from None


def simulation_store() -> Any:
    """The result store simulations are kept in (``bot.bench.store.ResultStore``)."""
    from bot.bench.store import ResultStore

    return ResultStore()


def simulated_params_b(config: Any) -> float | None:
    """The parameter count (billions) of a simulation config or a stored run's config dict;
    None for an old stored config the catalog no longer knows."""
    from bot.bench.simulate import SimConfig

    try:
        cfg = SimConfig.from_dict(config) if isinstance(config, dict) else config
        return float(cfg.spec().params_b)
    except Exception:  # noqa: BLE001
        return None


def has_stored_simulation(config: Any, store: Any = None) -> bool:
    """Whether this config was simulated before (its result is in the store)."""
    return (store or simulation_store()).find_simulation(config) is not None


def catalog_names() -> tuple[list[str], list[str]]:
    """The catalog's model and GPU names, for the setup panel's lists."""
    from bot.catalog import list_gpus, list_models

    return [m.name for m in list_models()], [g.name for g in list_gpus()]


def model_stand_in(written: str | None, model: str | None) -> bool:
    """Whether the catalog entry ``model`` that the name ``written`` resolved to is another
    release standing in for it (``Qwen2-7B`` -> ``Qwen2.5-7B``, ``Llama-3-8B`` ->
    ``Llama-3.1-8B``), not the same model written differently (``Qwen/Qwen2.5-7B-Instruct``,
    ``llama2 7b``, ``千问2.5-7B``): the family words of the two names differ."""
    from bot.catalog.names import split_name

    if not written or not model:
        return False
    said, entry = split_name(written), split_name(model)
    return said is not None and entry is not None and said.family_key != entry.family_key


# ---------------------------------------------------------------------------------------------
# The registry
ESTIMATE_DESCRIPTION = (
    "Compute per-GPU memory (params, grads, optimizer state, activations, buffers; whether it fits "
    "and the largest micro-batch that fits), communication per step and step time for EVERY "
    "strategy (ddp, fsdp_shard_grad_op, fsdp_full_shard, fsdp_hybrid_shard, "
    "fsdp_full_shard_offload) from setup fields, and the decision ladder's recommendation. Needs the "
    "model (a catalog name, params_b, or `hf_config`: a Hugging Face config.json path, its JSON, or a "
    "Hub id), the GPU (gpu name or gpu_memory_gb; a card the catalog lacks is accepted with "
    "gpu_memory_gb and marked in gpu_card) and gpu_count (or nodes and gpus_per_node); other fields "
    "default (bf16-mixed, adamw, full fine-tune, seq_len 2048, micro_batch 1) and are listed in "
    "`assumed`. Instant; a formula, not a measurement.")

TOOLS: tuple[Tool, ...] = (
    Tool("estimate_memory", "Per-GPU memory for every strategy", ESTIMATE_DESCRIPTION, estimate_tool_fields,
         estimate_memory, MemoryReport, agent_fields=_agent_setup_fields, open_world=True),
    Tool("simulate_memory", "Simulate one strategy's exact per-GPU peak", simulate_memory.__doc__ or "",
         _simulate_fields, simulate_memory, None, surfaces=("langchain",)),
    Tool("lookup_benchmarks", "Stored benchmark results", lookup_benchmarks.__doc__ or "", _bench_fields,
         lookup_benchmarks, None, surfaces=("langchain",)),
    Tool("search_knowledge", "Search the forum and docs", (
        "Search shardwise's knowledge: the forum thread's answers on DDP vs FSDP (Chinese originals) "
        "and docs written for this project (FSDP2, DDP, HSDP, offload, memory math), in English or "
        "Chinese. Returns the best entries with their source URLs and text to quote."),
         _search_fields, search_knowledge, KnowledgeResults, agent_fields=_agent_search_fields),
)


def tools_for(surface: str) -> list[Tool]:
    return [t for t in TOOLS if surface in t.surfaces]


# ---------------------------------------------------------------------------------------------
# Adapters
def _plain(out: Any) -> Any:
    return out.model_dump() if isinstance(out, BaseModel) else out


def make_tools() -> list[Any]:
    """The LangChain ``StructuredTool`` of every tool for the agent; a :class:`ToolInputError`
    comes back as ``{"error", "problems"}`` so the agent can read what to fix."""
    from langchain_core.tools import StructuredTool

    def agent_call(tool: Tool) -> Callable[..., Any]:
        def call(**kwargs: Any) -> Any:
            try:
                return _plain(tool.function(**kwargs))
            except ToolInputError as err:
                return {"error": str(err), "problems": err.problems}

        return call

    return [StructuredTool.from_function(agent_call(t), name=t.name, description=t.description,
                                         args_schema=t.args_model(agent=True)) for t in tools_for("langchain")]


def add_mcp_tools(server: Any, *, note: str = "") -> None:
    """Register every MCP tool of the registry on an ``MCPServer``: the signature the SDK reads is
    the tool's field table, the return annotation its output model, a :class:`ToolInputError` a
    tool error. ``note`` (the server's limits) is appended to each description."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    for tool in tools_for("mcp"):
        def call(_tool: Tool = tool, **kwargs: Any) -> Any:
            try:
                return _tool.function(**kwargs)
            except ToolInputError as err:
                raise ToolError(str(err)) from None

        fields = tool.fields()
        call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[annotation, info],
                               default=inspect.Parameter.empty if info.is_required() else info.default)
             for name, (annotation, info) in fields.items()],
            return_annotation=tool.output)
        call.__name__ = tool.name
        server.tool(name=tool.name, title=tool.title, description=f"{tool.description} {note}".strip(),
                    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=tool.open_world))(call)


# =============================================================================================
# The web page's calls (issue 27: a thin web surface). What ``bot/surfaces/web`` needed from
# below the pipeline: the share link's framework, the setup panel's catalog and config.json
# readers, the answering workers' reading and query batching, and the page's start-up. The page
# calls these and shows what comes back; it imports no catalog, reader or knowledge module.
# =============================================================================================
if TYPE_CHECKING:
    from bot.catalog import ModelSpec


def known_framework(name: str | None) -> str | None:
    """``name`` (any case, spaces trimmed) when it is a training framework whose defaults the
    answer applies (LlamaFactory's activation checkpointing, ...); None otherwise."""
    from bot.parse import FRAMEWORK_DEFAULTS

    key = (name or "").strip().lower()
    return key if key in FRAMEWORK_DEFAULTS else None


def model_in_catalog(name: str | None) -> bool:
    """Whether ``name`` is a model the catalog knows (by any of its spellings)."""
    from bot.catalog import UnknownNameError, lookup_model

    if not name:
        return False
    try:
        lookup_model(name)
    except UnknownNameError:
        return False
    return True


def model_defines_size(name: str | None) -> bool:
    """Whether ``name`` is a catalog model with an exact parameter count (choosing it makes a
    stated size redundant); False for an unknown name or an approximate entry."""
    from bot.catalog import UnknownNameError, lookup_model

    if not name:
        return False
    try:
        return not lookup_model(name).approximate
    except UnknownNameError:
        return False


def gpu_in_catalog(name: str | None) -> bool:
    """Whether ``name`` is a card the catalog knows (its memory and link then follow from it)."""
    from bot.catalog import UnknownNameError, lookup_gpu

    if not name:
        return False
    try:
        lookup_gpu(name)
    except UnknownNameError:
        return False
    return True


def model_from_config(config: dict[str, Any] | str, name: str | None = None) -> ModelSpec:
    """The model a Hugging Face ``config.json`` describes (a parsed dict or its JSON text), named
    ``name`` when given. Raises ``ConfigError`` (a ``ValueError``) saying what it cannot read.
    Text is parsed as JSON, never opened as a path."""
    from bot.catalog.hf_config import model_from_hf_config

    if isinstance(config, str):
        config = json.loads(config)
    if not isinstance(config, dict):
        raise ValueError("that is not a config.json (a JSON object with the model's fields)")
    return model_from_hf_config(config, name)


def model_from_hub(hub_id: str, name: str | None = None) -> ModelSpec:
    """The model of a Hub repo's ``config.json`` (``org/name``; offline, only from the local
    Hub cache). Raises ``ConfigError`` (see :func:`is_hub_offline`)."""
    from bot.catalog.hf_config import fetch_hub_config, model_from_hf_config

    return model_from_hf_config(fetch_hub_config(hub_id), name or hub_id)


def is_hub_offline(err: BaseException) -> bool:
    """Whether ``err`` is the Hub reader saying it could not go online (the repo's config is not
    in the local cache), as opposed to a config it read and refused."""
    from bot.catalog.hf_config import OFFLINE_MESSAGE

    return str(err).startswith(OFFLINE_MESSAGE)


def reader_setup(question: str, history: list[str] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """What the reader takes from ``question`` after ``history``: ``(setup fields, the run's
    framework)``, both None when it cannot read them (the page then marks no assumed field)."""
    try:
        from bot.parse import parse_conversation

        reading = parse_conversation(question, history)
        return reading.setup.model_dump(), reading.observed.framework
    except Exception:  # noqa: BLE001  (the marks are a convenience; the answer itself is the ask's)
        return None, None


def prefetch_questions(questions: list[str]) -> int:
    """Embed several questions' search text in one batch before they are answered one by one;
    returns how many were embedded (0 for fewer than two). Never raises."""
    from bot.knowledge.answering import prefetch_query_vectors

    return prefetch_query_vectors(questions)


def prepare_knowledge() -> None:
    """Build (or repair) the knowledge index before the first question, so no answer waits for
    it; cheap when the index is already fine."""
    from bot.knowledge.index import ensure_index

    ensure_index()
