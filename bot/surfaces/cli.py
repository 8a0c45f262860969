"""The ``shardwise`` command line. Each subcommand lives with the code it drives and is imported
only when used, so ``shardwise calc`` never loads torch.distributed, chromadb or gradio."""

from __future__ import annotations

import importlib

import click

import bot  # noqa: F401  (sets the offline environment first)
from bot.core.errors import UserError

# name -> "module:attribute" of a click command or group
SUBCOMMANDS = {
    "calc": "bot.calc.cli:calc",
    "bench": "bot.bench.cli:bench",
    "ingest": "bot.knowledge.cli:ingest",
    "search": "bot.knowledge.cli:search",
    "ask": "bot.surfaces.ask_cli:ask",
    "eval": "evals.cli:eval_command",
    "app": "bot.surfaces.webui:app_command",
    "slack": "bot.surfaces.slack_app:slack_command",
    "mcp": "bot.surfaces.mcp_server:mcp_command",
}

HELP = {
    "calc": "Per-GPU memory, communication and step time for every strategy.",
    "bench": "Simulate exact memory, run real DDP/FSDP benchmarks, script cluster runs.",
    "ingest": "Build or update the knowledge index.",
    "search": "Search the forum and docs corpus.",
    "ask": "Ask a question (zh/en); several questions form one conversation.",
    "eval": "Run the eval harness over gold cases.",
    "app": "Start the Gradio chat page.",
    "slack": "Run the Slack bot.",
    "mcp": "Serve the tools over MCP (stdio or --http).",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(SUBCOMMANDS)

    def get_command(self, ctx, name):
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name and (err.name == module_name or module_name.startswith(err.name + ".")):
                return _unavailable(name, module_name)
            raise
        return getattr(module, attr)

    def invoke(self, ctx):
        """A ``UserError`` from any subcommand is one clean line (exit 1), caught here once."""
        try:
            return super().invoke(ctx)
        except UserError as err:
            raise click.ClickException(str(err)) from None

    def format_commands(self, ctx, formatter):
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _unavailable(name: str, module_name: str) -> click.Command:
    @click.command(name=name, help=HELP.get(name))
    def missing() -> None:
        raise click.ClickException(f"'{name}' is not available in this build ({module_name} missing)")

    return missing


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="shardwise")
def main() -> None:
    """shardwise: DDP or FSDP for my setup? Answers with numbers it can prove."""


if __name__ == "__main__":
    main()
