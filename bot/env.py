"""Process-wide environment: offline switches, where generated data lives, a free loopback port,
secret redaction on every logger and ``configure_runtime`` (threads, logging, offline switches).

Imported first by every entry point (``bot/__init__.py`` does it), so nothing ever tries to reach
a model hub, an analytics endpoint or chroma's telemetry, and jieba stays quiet.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Iterable
from pathlib import Path

_OFFLINE_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "ANONYMIZED_TELEMETRY": "False",  # chroma reads this for its client settings
    "TOKENIZERS_PARALLELISM": "false",
}


def configure_offline() -> None:
    """Set the offline switches unless the user set them explicitly."""
    for key, value in _OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)


def data_dir() -> Path:
    """Where generated data lives (index, benchmark store); ``SHARDWISE_DATA_DIR`` overrides.

    Default: ``$XDG_CACHE_HOME/shardwise`` or ``~/.cache/shardwise``. Never inside the repo.
    """
    explicit = os.environ.get("SHARDWISE_DATA_DIR")
    if explicit:
        path = Path(explicit).expanduser()
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(cache) / "shardwise"
    path.mkdir(parents=True, exist_ok=True)
    return path


def configure_jieba() -> None:
    """jieba logs on first use and writes its cache to /tmp: keep it quiet and in our data dir."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.dt.tmp_dir = str(data_dir())
    jieba.dt.cache_file = "jieba.cache"


def repo_root() -> Path:
    """The checkout root (where ``knowledge/`` and ``evals/`` live)."""
    return Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now (for servers and torchrun rendezvous)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_served(proc, url: str, timeout: float, log: object = None) -> None:
    """Return once ``url`` answers 200 (a server started as ``proc``, e.g. the chat page); raise
    RuntimeError when ``proc`` exits first and TimeoutError after ``timeout`` seconds. Loopback
    requests bypass any proxy from the environment."""
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before serving (log: {log})")
        try:
            with opener.open(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"the server did not serve {url} within {timeout:.0f}s (log: {log})")


# ---------------------------------------------------------------------------------------------
# Secrets never reach a log line: one redaction for every process (CLI, Slack, MCP, the page).
# Token shapes: Slack https://docs.slack.dev/authentication/tokens (xoxb- bot, xoxp- user, xapp-
# app-level, xoxe- refresh, xoxa-/xoxr-/xoxs- older kinds); OpenAI-style API keys "sk-..."; any
# "Bearer <token>" an HTTP error may echo.
REDACTED = "[redacted]"
_TOKEN_SHAPES = re.compile(
    r"\b(?:xox[abeoprs]|xapp)-[A-Za-z0-9-]+|\bsk-[A-Za-z0-9_\-]{12,}|(?<=Bearer )[A-Za-z0-9._~+/=\-]{8,}")
# Named secrets, plus every *_TOKEN / *_KEY / *SECRET* / *PASSWORD* variable the process has.
SECRET_ENV_VARS = ("SHARDWISE_LLM_API_KEY", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET")
_SECRET_NAME = re.compile(r"(?:_TOKEN|_KEY|SECRET|PASSWORD|_PASS)(?:_|$)|^(?:TOKEN|KEY)$", re.I)
MIN_SECRET_CHARS = 6  # a 1-char "secret" would shred every message


def known_secrets(extra: Iterable[str] = ()) -> list[str]:
    """Secret values this process knows (environment and ``extra``), longest first."""
    values = {os.environ.get(name, "") for name in SECRET_ENV_VARS}
    values |= {v for k, v in os.environ.items() if _SECRET_NAME.search(k)}
    values |= set(extra)
    return sorted((v for v in values if v and len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with token-shaped strings and known secret values replaced by ``[redacted]``."""
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    for secret in known_secrets() if secrets is None else secrets:
        if secret and len(secret) >= MIN_SECRET_CHARS:
            text = text.replace(secret, REDACTED)
    return text


class SecretRedactor(logging.Filter):
    """Rewrites each record with secrets removed: message, arguments and exception text.

    Installed on handlers (they see records propagated from every library's logger) and on every
    logger; ``install_redaction`` also wraps the record factory, so a logger created later and
    Python's last-resort handler are covered too. The environment is re-read every few seconds,
    so a key set after start-up is redacted as well.
    """

    def __init__(self, secrets: Iterable[str] = ()):
        super().__init__()
        self.extra = [s for s in secrets if s]
        self._cached: list[str] = []
        self._read_at = 0.0

    @property
    def secrets(self) -> list[str]:
        now = time.monotonic()
        if now - self._read_at > 5.0:
            self._cached, self._read_at = known_secrets(self.extra), now
        return self._cached

    def add(self, secrets: Iterable[str]) -> None:
        self.extra += [s for s in secrets if s]
        self._read_at = 0.0

    def scrub(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001  (a bad format string: logging reports it itself)
            return
        record.msg, record.args = redact(message, self.secrets), None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info), self.secrets)
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self.secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        self.scrub(record)
        return True


_REDACTOR: SecretRedactor | None = None


def install_redaction(secrets: Iterable[str] = ()) -> SecretRedactor:
    """The process's one ``SecretRedactor``: on the record factory, the root logger's handlers,
    and every existing logger and its handlers. Idempotent; ``secrets`` adds values to redact."""
    global _REDACTOR
    if _REDACTOR is None:
        _REDACTOR = SecretRedactor(secrets)
        previous = logging.getLogRecordFactory()
        redactor = _REDACTOR

        def factory(*args, **kwargs):
            record = previous(*args, **kwargs)
            redactor.scrub(record)
            return record

        logging.setLogRecordFactory(factory)
    else:
        _REDACTOR.add(secrets)
    loggers = [logging.getLogger()] + [logger for logger in logging.Logger.manager.loggerDict.values()
                                       if isinstance(logger, logging.Logger)]
    for logger in loggers:
        if _REDACTOR not in logger.filters:
            logger.addFilter(_REDACTOR)
        for handler in logger.handlers:
            if _REDACTOR not in handler.filters:
                handler.addFilter(_REDACTOR)
    return _REDACTOR


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_runtime(*, threads: int | None = 1, level: int = logging.INFO,
                      secrets: Iterable[str] = ()) -> SecretRedactor:
    """What every long-running entry point (Slack, MCP, the page, the CLI) does first: offline
    switches, torch's thread count (``threads=None`` leaves torch alone and unimported), a stderr
    log handler at ``level`` (stdout may be a protocol channel: MCP stdio, ``--json``), and secret
    redaction on every logger."""
    configure_offline()
    if threads is not None:
        try:
            import torch

            torch.set_num_threads(threads)  # one request should not take every core
        except ImportError:  # pragma: no cover
            pass
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    root.setLevel(level)
    return install_redaction(secrets)
