"""The LangChain tools (``bot.tools``, for the agent in ``bot.surfaces.llm``) and the MCP server describe the
same setup fields: both come from ``TrainingSetup`` and ``bot.fields``, nothing re-declared."""

from __future__ import annotations

import anyio

from bot.core.setup import TrainingSetup
from bot.fields import FIELD_DOCS, TOOL_ONLY_FIELDS, describe
from bot.tools import make_tools
from tests.lazy import lazy_module

mcp = lazy_module("mcp")  # the SDK and the server: imported by the first test that uses them
mcp_server = lazy_module("bot.surfaces.mcp_server")


def _mcp_estimate_schema() -> dict:
    async def listing():
        async with mcp.Client(mcp_server.build_mcp_server()) as client:
            return (await client.list_tools()).tools

    return next(t for t in anyio.run(listing) if t.name == "estimate_memory").input_schema


def _langchain_estimate_schema() -> dict:
    tool = next(t for t in make_tools() if t.name == "estimate_memory")
    return tool.args_schema.model_json_schema()


def test_mcp_and_langchain_estimate_memory_take_the_same_fields_with_the_same_descriptions():
    mcp = _mcp_estimate_schema()["properties"]
    lc = _langchain_estimate_schema()["properties"]
    assert set(mcp) == set(lc) == set(TrainingSetup.model_fields) | set(TOOL_ONLY_FIELDS)
    for name in set(mcp):
        assert mcp[name]["description"] == lc[name]["description"] == describe(name), name
    # the unit the calculator means (issue 15: MCP once described it as per GPU)
    assert "one NODE" in lc["inter_node_gbps"]["description"] and "Gb/s" in lc["inter_node_gbps"]["description"]


def test_every_setup_field_has_a_description():
    assert set(TrainingSetup.model_fields) <= set(FIELD_DOCS)


def test_langchain_estimate_memory_still_reports_every_problem_as_an_error():
    tool = next(t for t in make_tools() if t.name == "estimate_memory")
    out = tool.invoke({"params_b": -1, "gpu_memory_gb": 40, "gpu_count": 8})
    assert "error" in out and any("params_b" in p for p in out["problems"])
    assert tool.args_schema.model_json_schema().get("additionalProperties") is False  # a typo is not dropped


SEVEN_B = {"model": "Llama-2-7B", "gpu": "A100 40GB", "gpu_count": 8}


def _mcp_call(name: str, arguments: dict):
    async def calling():
        async with mcp.Client(mcp_server.build_mcp_server()) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(calling)


def test_estimate_memory_is_one_function_with_one_output_on_both_surfaces():
    """The registry's estimate_memory (bot.tools) is what MCP and the agent call: same figures,
    same recommendation, same error text."""
    import json

    tool = next(t for t in make_tools() if t.name == "estimate_memory")
    agent = json.loads(json.dumps(tool.invoke(SEVEN_B)))
    mcp = _mcp_call("estimate_memory", SEVEN_B).structured_content
    assert agent == mcp
    assert mcp["recommendation"]["strategy"] in ("fsdp_full_shard", "fsdp_shard_grad_op")
    unknown = {"model": "no-such-model-xyz", "gpu_memory_gb": 40, "gpu_count": 2}
    refused = _mcp_call("estimate_memory", unknown)
    assert refused.is_error and tool.invoke(unknown)["error"][:80] in refused.content[0].text  # MCP cuts to 200


def test_every_registry_tool_reaches_its_surfaces():
    from bot.tools import TOOLS, tools_for

    assert {t.name for t in make_tools()} == {t.name for t in tools_for("langchain")}
    async def listing():
        async with mcp.Client(mcp_server.build_mcp_server()) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert {t.name for t in tools_for("mcp")} <= anyio.run(listing)
    assert len({t.name for t in TOOLS}) == len(TOOLS)
