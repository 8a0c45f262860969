"""Process-wide environment: offline switches, where generated data lives, a free loopback port.

Imported first by every entry point (``bot/__init__.py`` does it), so nothing ever tries to reach
a model hub, an analytics endpoint or chroma's telemetry, and jieba stays quiet.
"""

from __future__ import annotations

import logging
import os
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
