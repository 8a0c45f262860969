"""``UserError``: the base of every error a user's input can cause (a setup that contradicts
itself, an unknown model name, a malformed config, a refused simulation, a bad grid file, an
impossible parallel plan, bad tool arguments). Each surface catches it once and shows its message
as it is: one clean line on the CLI, a tool error over MCP, a message on the page and in Slack.
Anything else is an internal failure (logged, ``status="error"``), never dressed up as advice."""

from __future__ import annotations


class UserError(Exception):
    """An input the user can fix; ``str(err)`` is the message to show them."""
