"""The setup panel: its fields (DESIGN.md setup field names) with labels in both languages
(the message catalogs' ``page.panel.*``, as every note the panel writes), reading what the user typed (empty = unknown; unreadable numbers named in the chat's
language), the setup to answer after an edit, the model box (a catalog name, a Hub id or
pasted config.json), each field's mark (stated, assumed, missing) and the Gradio components.

Nothing here computes a figure or reads the catalog itself: the registry (``bot.tools``) says
whether a chosen model or GPU defines a size (which is then dropped) and reads a config.json or
Hub id into a model.
"""

from __future__ import annotations

import re
from typing import Any

import gradio as gr

from bot.answer import Answer
from bot.answer.catalog import render, wording, words_in
from bot.core.setup import TrainingSetup
from bot.surfaces.web import answer_view as view
from bot.tools import (
    gpu_in_catalog,
    is_hub_offline,
    model_defines_size,
    model_from_config,
    model_from_hub,
    model_in_catalog,
    model_stand_in,
)

# The panel's fields, in display order (DESIGN.md setup field names).
PANEL_FIELDS = (
    "model", "params_b", "gpu", "gpu_memory_gb", "gpu_count", "nodes", "intra_node_link",
    "inter_node_link", "precision", "optimizer", "finetune", "seq_len", "micro_batch",
    "activation_checkpointing",
    # run options (issue 14), under "Run options"; empty or off = PyTorch's defaults
    "optimizer_impl", "loss_impl", "grad_accum_steps", "torch_compile", "ddp_bucket_view",
)


INT_FIELDS = {"gpu_count", "nodes", "seq_len", "micro_batch", "grad_accum_steps"}


NUMBER_FIELDS = {"params_b", "gpu_memory_gb", "gpu_count", "nodes", "seq_len", "micro_batch", "grad_accum_steps"}


CHOICE_FIELDS = {"model", "gpu", "intra_node_link", "inter_node_link", "precision", "optimizer", "finetune",
                 "optimizer_impl", "loss_impl"}


BOOL_FIELDS = {"activation_checkpointing", "torch_compile", "ddp_bucket_view"}


def field_label(name: str, language: str = "en") -> str:
    """A panel field's label (``page.panel.field.*``; the page's own labels are English, the chat's
    messages name fields in the chat's language); an unknown field is its own name."""
    return words_in(language, "page.panel.field.").get(name, name)


MISSING_MARK = " ⚠"


def assumed_mark() -> str:
    return wording("en", "page.panel.assumed_mark")


def carried_mark() -> str:
    return wording("en", "page.panel.carried_mark")


def display_value(name: str, value: Any) -> Any:
    """A setup value as its panel component shows it ('' for unknown numbers)."""
    if name in BOOL_FIELDS:
        return bool(value)
    if name in NUMBER_FIELDS:
        if value is None or value == "":
            return ""
        return f"{int(value)}" if float(value).is_integer() else f"{float(value):g}"
    return value


def panel_values(setup: dict) -> list[Any]:
    """Panel component values for an answer's setup dict."""
    return [display_value(f, setup.get(f)) for f in PANEL_FIELDS]


def model_box_error(err: Exception, text: str, language: str) -> str:
    """What the chat says when the model box cannot be read: a Hub id missing from the local
    cache (offline) said as such, anything else with the reader's reason."""
    if is_hub_offline(err) and _HUB_ID.match((text or "").strip()):
        return panel_words("hub_offline", language, hub_id=text.strip())
    return panel_words("model_box", language, err=err)


def panel_words(key: str, language: str, **values: Any) -> str:
    """The panel's own messages (``page.panel.<key>``), in the chat's language."""
    return wording(language, f"page.panel.{key}", **values)


def read_panel(values: list[Any], language: str = "en") -> tuple[dict[str, Any], list[str]]:
    """Panel values -> typed values (None = unknown) and a message per unreadable number (in
    ``language``)."""
    out: dict[str, Any] = {}
    problems = []
    for name, value in zip(PANEL_FIELDS, values, strict=True):
        if isinstance(value, str):
            value = value.strip()
        if value is None or value == "":
            out[name] = None
            continue
        if name in NUMBER_FIELDS:
            try:
                number = float(str(value).replace(",", ""))
            except ValueError:
                problems.append(panel_words("not_number", language, label=field_label(name, language), value=value))
                out[name] = None
                continue
            if name in INT_FIELDS:
                if not number.is_integer():
                    problems.append(panel_words("not_whole", language, label=field_label(name, language), value=value))
                    out[name] = None
                    continue
                number = int(number)
            out[name] = number
        elif name in BOOL_FIELDS:
            out[name] = bool(value)
        else:
            out[name] = value
    return out, problems


def _same(name: str, a: Any, b: Any) -> bool:
    return display_value(name, a) == display_value(name, b)


def edited_setup(values: list[Any], stated: dict, shown: dict, language: str = "en") -> tuple[dict, list[str], list[str]]:
    """The setup to answer after a panel edit: what the user stated before, updated with the
    fields changed since the panel last showed an answer. Returns (setup dict, changed fields,
    problems). Assumed values the user left alone are not sent: they are assumed again for the
    new setup (two nodes then get an inter-node link, a model its own sequence limit)."""
    current, problems = read_panel(values, language)
    changed = [f for f in PANEL_FIELDS if not _same(f, current[f], shown.get(f))
               and not (f in problems and current[f] is None)]
    data = dict(stated)
    for name in changed:
        if current[name] is None:
            data.pop(name, None)
        else:
            data[name] = current[name]
    # A catalog model or GPU defines its own size: choosing one drops the old size (unless the
    # same edit changed the size too), else the two would contradict.
    if "model" in changed and "params_b" not in changed and model_defines_size(data.get("model")):
        data.pop("params_b", None)
    if "gpu" in changed and gpu_in_catalog(data.get("gpu")):
        for follows in ("gpu_memory_gb", "intra_node_link"):
            if follows not in changed:
                data.pop(follows, None)
    if {"gpu_count", "nodes"} & set(changed):
        data.pop("gpus_per_node", None)  # derived again from count / nodes
    nodes = data.get("nodes")
    if nodes == 1:
        data.pop("inter_node_link", None)
    elif data.get("inter_node_link") == "none" and (nodes or 0) > 1 and "inter_node_link" not in changed:
        data.pop("inter_node_link", None)  # "none" was the one-node value; several nodes need a link
    return data, changed, problems


MAX_CONFIG_BYTES = 2_000_000  # a config.json is a few KB


_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def model_from_box(value: str | dict, name: str | None = None):
    """The ``ModelSpec`` for what the model box holds when it is not a catalog name: a Hub id
    (``org/name``, config only; offline it must be cached) or pasted ``config.json`` text, or an
    uploaded config (a dict). ``None`` for a catalog name or plain text (the answer then says the
    model is unknown). Raises ``ValueError`` with a message for a config it cannot read.
    Never reads a server path: a web user's text is not a file name."""
    if isinstance(value, dict):
        return model_from_config(value, name)
    text = (value or "").strip()
    if model_in_catalog(text):
        return None
    if text.startswith("{"):
        if len(text) > MAX_CONFIG_BYTES:
            raise ValueError(panel_words("too_big", "en"))
        return model_from_config(text, name)
    if _HUB_ID.match(text):
        return model_from_hub(text, name)
    return None


def apply_model_config(data: dict, spec) -> str:
    """Use a config's model: its parameter count (the calculator then takes a model of that size);
    returns the line that says so."""
    data.pop("model", None)
    data["params_b"] = round(float(spec.params_b), 3)
    return panel_words("from_config", "en", name=spec.name, params=f"{spec.params_b:.2f}")


def setup_from_panel(values: list[Any]) -> TrainingSetup:
    """The panel's values as a whole setup (every non-empty field; a catalog model or GPU drops
    the size it defines). Raises pydantic's ValidationError for values of the wrong type."""
    current, _ = read_panel(values)
    data = {k: v for k, v in current.items() if v is not None}
    if model_defines_size(data.get("model")):
        data.pop("params_b", None)
    if gpu_in_catalog(data.get("gpu")):
        data.pop("gpu_memory_gb", None)
    if data.get("nodes") == 1:
        data.pop("inter_node_link", None)
    return TrainingSetup(**data)


def setup_summary(setup: TrainingSetup | dict, language: str = "en") -> str:
    """What was set, in words ("GPU count 16, link between nodes ethernet"), for the chat's
    record of an edit or a shared link."""
    data = setup.model_dump() if isinstance(setup, TrainingSetup) else setup
    named = words_in(language, "page.field.")
    parts = []
    for k, v in data.items():
        if v is None:
            continue
        name = named.get(k) or field_label(k, language)
        shown = panel_words("on" if v else "off", language) if isinstance(v, bool) else (
            display_value(k, v) if k in NUMBER_FIELDS else v)
        parts.append(f"{name} {shown}")
    return panel_words("summary_sep", language).join(parts) or panel_words("empty_setup", language)


# Provenance values of a field the reader took from an earlier message ("history"; the reader
# may call it "carried"): shown marked, and dropped with one click.
CARRIED_SOURCES = ("history", "carried")


def carried_fields(sources: dict[str, str]) -> list[str]:
    """The fields the answer took from earlier messages, panel fields first."""
    carried = [f for f, s in sources.items() if s in CARRIED_SOURCES]
    return sorted(carried, key=lambda f: PANEL_FIELDS.index(f) if f in PANEL_FIELDS else len(PANEL_FIELDS))


def panel_updates(answer: Answer, sources: dict[str, str]) -> list[Any]:
    missing = set(answer.missing) | set(answer.questions)
    if {"gpu", "gpu_memory_gb"} & missing:
        missing |= {"gpu", "gpu_memory_gb"}
    if {"model", "params_b"} & missing:
        missing |= {"model", "params_b"}
    updates = []
    for name, value in zip(PANEL_FIELDS, panel_values(answer.setup), strict=True):
        if name in missing:
            classes, mark = ["sw-missing"], MISSING_MARK
        elif sources.get(name) == "assumed":
            classes, mark = ["sw-assumed"], assumed_mark()
        elif sources.get(name) in CARRIED_SOURCES:
            classes, mark = ["sw-carried"], carried_mark()
        else:
            classes, mark = [], ""
        updates.append(gr.update(value=value, elem_classes=classes, label=field_label(name) + mark))
    return updates


def _md_text(text: str) -> str:
    """User text inside the note's markdown: shown as typed (no markup, no emphasis)."""
    escaped = re.sub(r"([\\`*_\[\]()#|~!])", r"\\\1", " ".join(str(text).split())[:120])
    return escaped.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def stand_in_note(answer: Answer) -> str:
    """The model the catalog computed with in place of the one written (``Qwen2-7B`` computed as
    ``Qwen2.5-7B``), said next to the setup; '' when the name was the model itself."""
    item = next((i for i in answer.sections.setup_read if i.field == "model" and i.span), None)
    if item is None or not model_stand_in(item.span, str(item.value)):
        return ""
    return render("zh" if answer.language == "zh" else "en", "page.model_stand_in",
                  {"written": _md_text(item.span or ""), "model": _md_text(str(item.value))})


def read_from_note(answer: Answer) -> list[str]:
    """One line per origin (a pasted log, a config) naming each value read from it with the
    text it was read from, so a figure read from a log reads as what the log said."""
    lang = answer.language
    lines = []
    for origin in ("log", "config"):
        items = [i for i in answer.sections.setup_read if i.source == origin]
        if not items:
            continue
        shown = panel_words("read_sep", lang).join(
            f"{view.field_name(i.field, lang)} {_md_text(view._show_value(i.value))}"
            + (panel_words("read_span", lang, span=_md_text(i.span)) if i.span else "")
            for i in items)
        lines.append(panel_words("read_from", lang, origin=words_in(lang, "page.panel.origin.")[origin], items=shown))
    return lines


def panel_note(answer: Answer, sources: dict[str, str]) -> str:
    lang = answer.language
    missing = [f for f in PANEL_FIELDS if f in set(answer.missing) | set(answer.questions)]
    assumed = [f for f in PANEL_FIELDS if sources.get(f) == "assumed" and f not in missing]
    carried = carried_fields(sources)
    lines = [note] if (note := stand_in_note(answer)) else []
    lines += read_from_note(answer)
    for key, fields in (("page.panel.carried", carried), ("page.panel.needed", missing),
                        ("page.panel.assumed", assumed)):
        if fields:
            names = panel_words("names_sep", lang).join(field_label(f, lang) for f in fields)
            lines.append(wording(lang, key, names=names))
    return "\n\n".join(lines)


def _panel_components(models, gpus) -> list:
    """The editable setup fields, in PANEL_FIELDS order. Numbers are text boxes: empty means
    unknown (a number box would show 0 and send it)."""
    choice = {
        "intra_node_link": ["nvlink", "pcie"],
        "inter_node_link": ["infiniband", "ethernet", "none"],
        "precision": ["bf16-mixed", "fp16-mixed", "bf16", "fp32"],
        "optimizer": ["adamw", "sgd", "adam8bit"],
        "finetune": ["full", "lora", "qlora"],
        "optimizer_impl": ["foreach", "fused", "forloop"],
        "loss_impl": ["standard", "fused", "chunked"],
        "model": [m if isinstance(m, str) else m.name for m in models],
        "gpu": [g if isinstance(g, str) else g.name for g in gpus],
    }

    def number(name: str):
        return gr.Textbox("", label=field_label(name), placeholder=panel_words("unknown", "en"), max_lines=1,
                          elem_id=f"sw-f-{name}")

    def dropdown(name: str, custom: bool = False):
        return gr.Dropdown(choice[name], value=None, label=field_label(name), allow_custom_value=custom,
                           elem_id=f"sw-f-{name}")

    comps = []
    with gr.Row():
        comps += [dropdown("model", custom=True), number("params_b")]
    with gr.Row():
        comps += [dropdown("gpu", custom=True), number("gpu_memory_gb")]
    with gr.Row():
        comps += [number("gpu_count"), number("nodes")]
    with gr.Row():
        comps += [dropdown("intra_node_link"), dropdown("inter_node_link")]
    with gr.Row():
        comps += [dropdown("precision"), dropdown("optimizer"), dropdown("finetune")]
    with gr.Row():
        comps += [number("seq_len"), number("micro_batch")]
        comps.append(gr.Checkbox(False, label=field_label("activation_checkpointing"),
                                 elem_id="sw-f-activation_checkpointing"))
    with gr.Accordion(panel_words("run_options", "en"), open=False, elem_id="sw-run-options"):
        with gr.Row():
            comps += [dropdown("optimizer_impl"), dropdown("loss_impl"), number("grad_accum_steps")]
        with gr.Row():
            comps += [gr.Checkbox(False, label=field_label(name), elem_id=f"sw-f-{name}")
                      for name in ("torch_compile", "ddp_bucket_view")]
    return comps
