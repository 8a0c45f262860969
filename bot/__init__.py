"""shardwise: DDP or FSDP for my setup? Answers with computed, benchmarked and cited numbers.

``bot.ask(question, history=None) -> Answer`` is the one entry every surface uses; it is loaded
lazily so that ``import bot`` stays cheap for the CLI and the calculator.
"""

from bot.env import configure_offline

configure_offline()

__all__ = ["ask"]


def __getattr__(name: str):
    if name == "ask":
        from bot.assistant import ask

        return ask
    raise AttributeError(f"module 'bot' has no attribute {name!r}")
