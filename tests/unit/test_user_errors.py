"""Every user-facing error inherits ``bot.core.UserError`` and the CLI turns it into one clean
line, caught once at the boundary (issue 28, as simonw/llm does)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from bot.bench.simulate import SimError
from bot.bench.validate import GridError
from bot.catalog.hf_config import ConfigError
from bot.catalog.names import UnknownNameError
from bot.core import UserError
from bot.core.setup import SetupError
from bot.fields import ConfigInputError
from bot.surfaces import cli


@pytest.mark.parametrize("cls", [SetupError, UnknownNameError, ConfigError, ConfigInputError, SimError, GridError])
def test_user_facing_errors_share_the_base(cls):
    assert issubclass(cls, UserError)


def test_the_cli_shows_a_user_error_as_one_line(monkeypatch):
    @click.command(name="boom")
    def boom() -> None:
        raise UserError("the model name 'llama-9000' is not in the catalog")

    monkeypatch.setitem(cli.SUBCOMMANDS, "boom", "tests.unit.test_user_errors:_BOOM")
    monkeypatch.setattr(__import__("tests.unit.test_user_errors", fromlist=["x"]), "_BOOM", boom, raising=False)
    result = CliRunner().invoke(cli.main, ["boom"])
    assert result.exit_code == 1
    assert result.output.strip() == "Error: the model name 'llama-9000' is not in the catalog"
    assert "Traceback" not in result.output


def test_an_internal_error_is_not_dressed_up(monkeypatch):
    @click.command(name="bug")
    def bug() -> None:
        raise KeyError("internal")

    monkeypatch.setitem(cli.SUBCOMMANDS, "bug", "tests.unit.test_user_errors:_BUG")
    monkeypatch.setattr(__import__("tests.unit.test_user_errors", fromlist=["x"]), "_BUG", bug, raising=False)
    result = CliRunner().invoke(cli.main, ["bug"])
    assert isinstance(result.exception, KeyError)  # not turned into a user message
