"""The surfaces: adapters that take a question from a person or a program and show an ``Answer``.

``cli`` (the ``shardwise`` command and its lazy subcommands), ``ask_cli`` (``shardwise ask``),
``webui`` + ``web/`` (the Gradio page), ``slack_app`` + ``slack_transport`` (the Slack bot and its
HTTP delivery), ``mcp_server`` + ``mcp_jobs`` (the MCP server and its long simulations) and ``llm``
(``answer()``, the boundary every surface crosses, and the optional OpenAI-compatible LLM path).
Each calls ``bot.surfaces.llm.answer`` / ``bot.ask`` and the tool registry (``bot.tools``) and
computes nothing itself (tests/unit/test_architecture.py). Nothing is imported here, so importing
one surface never loads another's packages (gradio, slack_bolt, mcp, langchain).
"""
