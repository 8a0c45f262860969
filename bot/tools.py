"""LangChain tools over the same functions every surface uses (no copies of any computation).

``make_tools()`` returns ``estimate_memory``, ``simulate_memory``, ``lookup_benchmarks`` and
``search_knowledge`` for an agent (``bot.llm``); each returns plain JSON-able data.
``estimate_memory`` takes the inputs MCP's does (``bot.fields.estimate_tool_fields``): the setup
fields, and the model by name, by size or as a Hugging Face ``config.json`` (``hf_config``: a path,
the JSON text or object, a Hub id), read by ``bot.fields.read_config_input`` as ``shardwise calc
--config`` reads it; a card the catalog lacks is accepted with ``gpu_memory_gb`` and marked.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, ConfigDict, Field, create_model

from bot.fields import CONFIG_FIELD, ConfigInputError, card_report, config_field, describe, model_report
from bot.setup import SetupError, TrainingSetup, resolve_setup
from bot.strategies import TRAINING_STRATEGIES

# Models above this size are not simulated inside a tool call (a 7B simulation takes ~30 s);
# the tool answers with a stored result or says how to run one.
MAX_INLINE_SIM_PARAMS_B = 1.0


def estimate_memory(**fields: Any) -> dict[str, Any]:
    """Per-GPU memory, communication, step time and throughput for every strategy (and the
    variants the advice weighs: activation checkpointing, DDP bucket view + fused AdamW), and the
    recommendation of the decision ladder (docs/decision.md). The model is a catalog name,
    params_b, or `hf_config`: a Hugging Face config.json path, its JSON, or a Hub id."""
    from bot.calc import resolve_with_model
    from bot.decide import decide
    from bot.evidence import evidence_for_resolved
    from bot.fields import read_config_input

    hf_config = fields.pop(CONFIG_FIELD, None)
    setup = TrainingSetup(**{k: v for k, v in fields.items() if v is not None})
    spec = source = None
    try:
        if hf_config is not None:  # the reader `shardwise calc --config` uses
            spec, source = read_config_input(hf_config, model=setup.model, params_b=setup.params_b)
        resolved = resolve_with_model(setup, spec) if spec is not None else resolve_setup(setup)
    except ConfigInputError as err:
        return {"error": str(err), "problems": [str(err)]}
    except SetupError as err:
        return {"error": str(err), "problems": [str(p) for p in err.problems]}
    except (ValueError, LookupError) as err:  # a catalog or formula refusing a value (as the CLI)
        return {"error": f"cannot compute this setup: {err}", "problems": [str(err)]}
    ev = evidence_for_resolved(resolved)
    d = decide(ev)
    out: dict[str, Any] = {
        "setup": resolved.setup.model_dump(), "numbers": ev.numbers(), "gpu_card": card_report(resolved),
        "recommendation": {"strategy": d.strategy, "variant": d.variant, "alternatives": d.alternatives,
                           "confidence": d.confidence}}
    if spec is not None:
        out["model_from_config"] = model_report(spec, source or "")
    return out


def setup_args_model() -> type[BaseModel]:
    """``estimate_memory``'s arguments: ``TrainingSetup``'s own fields (names, types, allowed
    values) with the descriptions and units of ``bot.fields``, plus ``hf_config``
    (``bot.fields.config_field``) -- the fields MCP's estimate_memory shows, described once. Validation is ``TrainingSetup``'s: ranges are checked by
    ``check_setup`` inside the tool, so a value out of range comes back as ``{"error", "problems"}``
    naming every problem rather than as a schema exception. A field without a description in
    ``bot.fields.FIELD_DOCS`` raises KeyError here (tests/test_tool_schemas.py)."""
    fields: dict[str, Any] = {name: (info.annotation, Field(default=None, description=describe(name)))
                              for name, info in TrainingSetup.model_fields.items()}
    fields[CONFIG_FIELD] = config_field()
    return create_model("EstimateMemoryArgs", __config__=ConfigDict(extra="forbid"),
                        __doc__="A (possibly partial) training setup; unknown fields are left out.", **fields)


_CONFIG_ANNOTATION, _CONFIG_INFO = config_field()


class SimulateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, description="catalog model name or a size like '7b'; or give "
                                                        "hf_config instead")
    # the field MCP's simulate_memory and both estimate_memory tools take (bot.fields.config_field)
    hf_config: _CONFIG_ANNOTATION = _CONFIG_INFO  # type: ignore[valid-type]
    gpu_count: int = Field(description="number of GPUs (ranks)")
    strategy: Literal["ddp", "fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard",
                      "fsdp_full_shard_offload"]
    gpus_per_node: int | None = None
    seq_len: int = 2048
    micro_batch: int = 1
    precision: str = "bf16-mixed"
    activation_checkpointing: bool = False


def simulate_memory(**args) -> dict:
    """Exact per-GPU peak from a FakeTensor simulation: stored result, or run now for small models.
    The model is a catalog name or `hf_config` (a config.json path, its JSON, or a Hub id)."""
    from bot.bench.simulate import SimConfig, SimError, simulate_cached
    from bot.bench.store import ResultStore
    from bot.catalog import UnknownNameError
    from bot.fields import load_config_input

    hf_config = args.pop(CONFIG_FIELD, None)
    model = args.pop("model", None)
    try:
        if (model is None) == (hf_config is None):  # `bench simulate`'s rule: --model or --config
            return {"error": "pass either model or hf_config (a config.json path, its JSON, or a Hub id)"}
        if hf_config is not None:  # read as `bench simulate --config` reads it
            read = load_config_input(hf_config)
            cfg = SimConfig.from_hf_config(read.data, model=read.spec.name, **args).normalized()
        else:
            cfg = SimConfig(model=model, **args).normalized()
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
    except ConfigInputError as err:
        return {"error": str(err)}
    except (SimError, UnknownNameError, TypeError) as err:
        return {"error": str(err)}


def lookup_benchmarks(model: str | None = None, strategy: str | None = None) -> list[dict]:
    """Stored benchmark and simulation results (ids "run-..." are citable), newest first."""
    from bot.bench.store import ResultStore
    from bot.catalog import UnknownNameError, lookup_model

    if model:
        try:
            model = lookup_model(model).name
        except UnknownNameError:
            pass
    if strategy is not None and strategy not in TRAINING_STRATEGIES:
        return [{"error": f"unknown strategy {strategy!r}"}]
    store: Any = ResultStore()
    runs = store.find_runs(model=model, strategy=strategy)[:10]
    return [{"id": r.id, "kind": r.kind, "summary": r.summary(), "figures": r.figures} for r in runs]


def search_knowledge(query: str, k: int = 5, kinds: list[str] | None = None) -> list[dict]:
    """Forum answers and docs relevant to the query (hybrid BM25 + dense search)."""
    from bot.knowledge.search import search

    hits = search(query, k=max(1, min(int(k), 10)), kinds=tuple(kinds or ("forum", "doc")))
    return [{"id": h.id, "kind": h.kind, "title": h.title, "url": h.url, "text": h.text[:800]} for h in hits]


class SearchArgs(BaseModel):
    query: str
    k: int = 5
    kinds: list[Literal["forum", "doc"]] | None = None


class BenchArgs(BaseModel):
    model: str | None = None
    strategy: str | None = None


def make_tools() -> list[StructuredTool]:
    return [
        StructuredTool.from_function(estimate_memory, name="estimate_memory", args_schema=setup_args_model(),
                                     description=estimate_memory.__doc__),
        StructuredTool.from_function(simulate_memory, name="simulate_memory", args_schema=SimulateArgs,
                                     description=simulate_memory.__doc__),
        StructuredTool.from_function(lookup_benchmarks, name="lookup_benchmarks", args_schema=BenchArgs,
                                     description=lookup_benchmarks.__doc__),
        StructuredTool.from_function(search_knowledge, name="search_knowledge", args_schema=SearchArgs,
                                     description=search_knowledge.__doc__),
    ]
