"""Message catalogs: every sentence an answer says, per language, kept as data.

The wording lives in ``bot/answer/messages/<lang>.yaml`` (``en`` and ``zh``, the same keys). A
message is a Jinja template rendered with ``StrictUndefined``, and each placeholder names what it
prints:

- ``{{ cfg.memory.total_gib }}``: the ``memory.<strategy>.total_gib`` figure (or its variant key,
  ``ckpt.memory.ddp.total_gib``) of the configuration passed as ``cfg``; ``{{ cfg.name }}``,
  ``{{ cfg.label }}``, ``{{ cfg.short }}`` are its names in the answer's language;
- ``{{ num['capacity.gpu_count'] }}``: a figure by its ``numbers`` key;
- ``{{ setup.micro_batch }}``: a field of the setup as the answer reports it;
- ``{{ c }}``: the calculator citation marker (`` [1]``);
- anything else is a plain value the caller passes (a label, a pre-bound figure).

A figure that is missing raises ``MissingFigure`` (and an unknown name Jinja's ``UndefinedError``)
instead of printing "?". The composer drops a sentence whose figure is missing and logs it; with
``SHARDWISE_STRICT_MESSAGES=1`` (the test suite) it raises, so a missing figure fails a test.

Figures are bound through ``bind(value, key)`` (``bot.compose.Say.val``): the rendered text carries
each figure's key, which the composer records for the renderer's figure check.

The surfaces' own words (the page's labels and notes ``page.*``, Slack's ``slack.*``, the
strategies' names ``strategy.*``, the how-to's titles ``howto.*``) are read with ``wording``
(one message) and ``words_in`` (a group looked up by a value).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import yaml

LANGUAGES = ("en", "zh")
_DIR = Path(__file__).with_name("messages")


class MissingFigure(Exception):  # not a LookupError/AttributeError: Jinja must not swallow it
    """A message asked for a figure the evidence does not have."""

    def __init__(self, key: str) -> None:
        super().__init__(f"missing figure: {key}")
        self.key = key


def strict() -> bool:
    """Raise on a missing figure instead of dropping the sentence (set by the test suite)."""
    return os.environ.get("SHARDWISE_STRICT_MESSAGES") == "1"


@functools.cache
def catalog(lang: str) -> dict[str, str]:
    """The ``lang`` catalog, flattened to dotted keys (``reason.ddp_fits``)."""
    if lang not in LANGUAGES:
        raise ValueError(f"no message catalog for language {lang!r}")
    raw = yaml.safe_load((_DIR / f"{lang}.yaml").read_text(encoding="utf-8"))
    out: dict[str, str] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(node, str):
            out[prefix] = node
        else:
            raise ValueError(f"{lang}.yaml: {prefix} is not a string")

    walk("", raw)
    return out


_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)
# ``{{ name | repr }}``: a name or option quoted as Python quotes it ('every_k'), as the setup's
# problems always printed the user's text
_ENV.filters["repr"] = repr


@functools.cache
def template(lang: str, key: str) -> jinja2.Template:
    try:
        source = catalog(lang)[key]
    except KeyError:
        raise KeyError(f"message {key!r} is not in the {lang} catalog") from None
    return _ENV.from_string(source)


Bind = Callable[[Any, str], str]


class _Kind:
    """``cfg.memory`` in a template: the figures of one kind of one configuration."""

    def __init__(self, key_of: Callable[[str], str], numbers: dict[str, Any], bind: Bind) -> None:
        self._key_of, self._numbers, self._bind = key_of, numbers, bind

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        key = self._key_of(name)
        value = self._numbers.get(key)
        if value is None or isinstance(value, bool):
            raise MissingFigure(key)
        return self._bind(value, key)


class ConfigView:
    """A configuration (``bot.evidence.Config``) as a template sees it: its figures by kind and its
    names in the answer's language."""

    KINDS = ("memory", "comm", "time", "throughput")

    def __init__(self, config: Any, numbers: dict[str, Any], bind: Bind, names: dict[str, str]) -> None:
        self._config = config
        self.memory, self.comm, self.time, self.throughput = (
            _Kind(functools.partial(config.key, kind), numbers, bind) for kind in self.KINDS)
        self.name, self.label, self.short = names["name"], names["label"], names["short"]
        self.strategy, self.variant, self.fits = config.strategy, config.variant, config.fits


class Numbers:
    """``num['key']`` in a template: any figure by its ``numbers`` key."""

    def __init__(self, numbers: dict[str, Any], bind: Bind) -> None:
        self._numbers, self._bind = numbers, bind

    def __getitem__(self, key: str) -> str:
        value = self._numbers.get(key)
        if value is None or isinstance(value, bool):
            raise MissingFigure(key)
        return self._bind(value, key)


class SetupView:
    """``setup.field`` in a template: a number is bound to ``setup.<field>``, text printed as is."""

    def __init__(self, setup: dict[str, Any], bind: Bind) -> None:
        self._setup, self._bind = setup, bind

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        value = self._setup.get(name)
        if value is None:
            raise MissingFigure(f"setup.{name}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return self._bind(value, f"setup.{name}")
        return str(value)


def render(lang: str, key: str, context: dict[str, Any]) -> str:
    """The message ``key`` in ``lang`` with ``context``; raises MissingFigure / UndefinedError."""
    return template(lang, key).render(**context)


def language_of(language: str | None) -> str:
    """The catalog a surface reads for an answer's ``language``: ``zh``, else ``en``."""
    return "zh" if language == "zh" else "en"


def wording(language: str | None, key: str, **values: Any) -> str:
    """A surface's label or sentence (``page.*``, ``slack.*``, ``strategy.*``, ``howto.*``): the
    message ``key`` in ``language`` (``zh``, else ``en``) with ``values``. A message without a
    placeholder is returned as written (no template run: a label is read per table cell)."""
    lang = language_of(language)
    source = catalog(lang).get(key)
    if source is None:
        raise KeyError(f"message {key!r} is not in the {lang} catalog")
    if not values and "{" not in source:
        return source
    return render(lang, key, values)


@functools.cache
def words_in(language: str | None, prefix: str) -> dict[str, str]:
    """The messages under ``prefix`` (``strategy.label.``) in ``language``, by the rest of their
    key, as written: a group of labels looked up by a value (a strategy, a field, a verdict)."""
    return {k.removeprefix(prefix): v for k, v in catalog(language_of(language)).items() if k.startswith(prefix)}


def slots(lang: str, key: str) -> set[str]:
    """The names the message ``key`` reads from its context (its placeholders), in ``lang``."""
    return set(jinja2.meta.find_undeclared_variables(_ENV.parse(catalog(lang)[key])))


def check_catalogs() -> list[str]:
    """Problems with the catalogs: keys missing from a language, templates that do not parse."""
    problems = []
    keys = {lang: set(catalog(lang)) for lang in LANGUAGES}
    for lang in LANGUAGES:
        for other in LANGUAGES:
            for k in sorted(keys[other] - keys[lang]):
                problems.append(f"{k} is in {other}.yaml but not in {lang}.yaml")
        for k, src in catalog(lang).items():
            try:
                _ENV.parse(src)
            except jinja2.TemplateSyntaxError as e:
                problems.append(f"{lang}.yaml {k}: {e}")
    return problems
