"""What the page's Simulate button measures and how its result is told: the recommended
configuration as recommended (the table's starred row, its checkpointing or bucket/fused variant
included), the expected wait said before it starts, and a result that names the answer it
belongs to when another answer has landed meanwhile.

The setup is read from the answer (``setup``, the starred ``sections.table`` row and its
``numbers`` keys); the simulator does the measuring, reached through the tool registry
(``bot.tools.simulation_config_for_setup``, ``run_simulation``). The wording, in both languages, is
the answer's message catalogs' ``page.simulation.*``: the notes (``note.*``), the variant parts it
cannot apply (``variant.*``), the measured setup (``setup_line``) and the cited result.
"""

from __future__ import annotations

import statistics
from typing import Any

from bot.answer import Answer, Citation, TableRow
from bot.answer.catalog import render, wording, words_in
from bot.strategies import TRAINING_STRATEGIES, label
from bot.tools import SimulationUnavailable, setup_arguments, simulated_params_b
from bot.tools import simulation_config_for_setup as registry_simulation_config

# What each part of a table row's variant ("bucket_fused+ckpt") changes in the simulated setup.
# ``ckpt`` flips activation checkpointing (on when the question had it off, off when on).
VARIANT_SETTINGS: dict[str, dict[str, Any]] = {
    "ckpt": {"flip": "activation_checkpointing"},
    "bucket_fused": {"ddp_bucket_view": True, "optimizer_impl": "fused"},
    "quantized_adam": {"optimizer": "adam8bit"},
}


def words(key: str, language: str, **values: Any) -> str:
    """A note of the button's (``page.simulation.note.<key>``), in the answer's language."""
    return wording(language, f"page.simulation.note.{key}", **values)


def chosen_row(answer: Answer) -> TableRow | None:
    return next((r for r in answer.sections.table if r.chosen), None)


def chosen_label(answer: Answer) -> str:
    row = chosen_row(answer)
    return row.label if row is not None else label(answer.recommendation.strategy, answer.language)


def simulated_setup(answer: Answer) -> tuple[dict[str, Any], list[str]]:
    """The answer's setup with the recommended row's variant applied, and the variant parts the
    simulator cannot apply (named in the result)."""
    data = setup_arguments(answer.setup)
    row = chosen_row(answer)
    skipped: list[str] = []
    for part in (row.variant.split("+") if row is not None and row.variant else []):
        settings = VARIANT_SETTINGS.get(part)
        if settings is None:  # the simulator cannot apply it: the result says it measures without it
            skipped.append(words_in(answer.language, "page.simulation.variant.").get(part, part))
            continue
        for name, value in settings.items():
            if name == "flip":
                data[value] = not bool(data.get(value))
            else:
                data[name] = value
    return data, skipped


def simulation_config(answer: Answer):
    """(SimConfig, None, skipped parts) for the recommended configuration, or (None, why not, [])."""
    lang = answer.language
    strategy = answer.recommendation.strategy
    if strategy not in TRAINING_STRATEGIES:
        return None, words("no_strategy", lang), []
    data, skipped = simulated_setup(answer)
    try:
        return registry_simulation_config(data, strategy), None, skipped
    except SimulationUnavailable as err:
        if err.incomplete:
            return None, words("incomplete", lang), []
        return None, words("unavailable", lang, err=str(err)), []


def setup_line(cfg, language: str = "en") -> str:
    """The setup a simulation measures, in words."""
    on = wording(language, "page.simulation.on" if cfg.activation_checkpointing else "page.simulation.off")
    return wording(language, "page.simulation.setup_line", model=cfg.model, gpu_count=cfg.gpu_count,
                   per_node=cfg.gpus_per_node, precision=cfg.precision, optimizer=cfg.optimizer,
                   seq_len=cfg.seq_len, micro_batch=cfg.micro_batch, checkpointing=on)


def expected_seconds(cfg, store) -> tuple[float, float] | None:
    """A range for how long simulating ``cfg`` takes here: the stored simulations' seconds per
    billion parameters (their spread, quartiles), times this model's size. ``None`` when the
    store has none to go by."""
    size = simulated_params_b(cfg)
    rates = []
    for run in store.list(kind="simulate", limit=200):
        if run.status != "ok" or not run.started_at or not run.finished_at:
            continue
        params = simulated_params_b(run.config)
        if params:
            rates.append((run.finished_at - run.started_at) / params)
    if not rates or not size:
        return None
    if len(rates) == 1:
        low = high = rates[0]
    else:
        quartiles = statistics.quantiles(rates, n=4)
        low, high = quartiles[0], quartiles[2]
    low, high = max(1.0, low * size), max(2.0, high * size)
    if high >= 60:  # minutes away: tens of seconds are precise enough
        low, high = 10 * (low // 10), 10 * -(-high // 10)
    return low, high


def wait_note(answer: Answer, cfg, skipped: list[str], store) -> str:
    """What the button will measure and how long it should take, shown before it is pressed."""
    lang = answer.language
    parts = [words("measures", lang, name=chosen_label(answer), setup=setup_line(cfg, lang))]
    if skipped:
        parts.append(words("not_simulated", lang, parts=", ".join(skipped)))
    # (Whether it is stored is looked up on the press: the lookup imports torch, which the
    # page's process should not load for every answer.)
    if (span := expected_seconds(cfg, store)) is not None:
        parts.append(words("wait_estimate", lang, low=f"{span[0]:.0f}", high=f"{max(span[1], span[0] + 1):.0f}"))
    else:
        parts.append(words("wait_unknown", lang))
    return " ".join(parts)


def formula_total(answer: Answer) -> float | None:
    """The estimate of the configuration simulated: the starred row's total (its variant's)."""
    row = chosen_row(answer)
    if row is not None and row.total_gib is not None:
        return float(row.total_gib)
    value = answer.numbers.get(f"memory.{answer.recommendation.strategy}.total_gib")
    return None if value is None else float(value)


def simulation_message(answer: Answer, strategy: str, run_id: str, result, n: int, *,
                       cached: bool = False, elapsed: float | None = None, setup: str = "",
                       question: str | None = None) -> tuple[str, Citation]:
    """The chat entry for a finished simulation and the ``bench`` citation behind its figures.
    ``answer`` is the answer the simulation was started from; ``question`` is set when another
    answer has landed since (the result then says which question it belongs to)."""
    lang = "zh" if answer.language == "zh" else "en"

    def say(key: str, **values: Any) -> str:
        return render(lang, f"page.simulation.{key}", values)

    name = chosen_label(answer)
    calc_total = formula_total(answer)
    detail = say("list_sep").join(f"{say('parts.' + key)} {getattr(result, key):.2f}" for key in
                                  ("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib")
                                  if hasattr(result, key))
    when = (say("stored", seconds=f"{result.seconds:.0f}") if cached
            else say("fresh", seconds=f"{(elapsed or result.seconds):.0f}"))
    text = say("result", name=name, peak=f"{result.peak_gib:.2f}", n=n, detail=detail, when=when)
    if calc_total is not None:
        text += say("formula", total=f"{calc_total:.2f}")
    if setup:
        text += "\n\n" + say("measured", setup=setup)
    if question:
        shown = question if len(question) <= 120 else question[:117] + "…"
        text = words("belongs_to", lang, question=shown) + "\n\n" + text
    citation = Citation(
        n=n, id=run_id, kind="bench",
        title=say("run_title", run_id=run_id),
        quote=f"FakeTensorMode + FSDP2/DDP + MemTracker, strategy={strategy}, setup: {setup}",
    )
    return text, citation

