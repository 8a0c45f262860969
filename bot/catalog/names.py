"""Name matching shared by the model and accelerator catalogs: the error for an unknown name and
the close-name suggestions it carries."""

from __future__ import annotations

import difflib


class UnknownNameError(LookupError):
    """An unknown model or GPU name; ``suggestions`` holds the closest catalog names."""

    def __init__(self, kind: str, name: str, suggestions: list[str], hint: str = ""):
        self.kind, self.name, self.suggestions = kind, name, suggestions
        did_you_mean = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown {kind} {name!r}.{did_you_mean}{(' ' + hint) if hint else ''}")


def suggest(key: str, index: dict, names_of, limit: int = 3) -> list[str]:
    """Catalog names whose normalised keys are close to ``key`` (difflib ratio >= 0.6)."""
    close = difflib.get_close_matches(key, list(index), n=8, cutoff=0.6)
    return list(dict.fromkeys(names_of(index[c]) for c in close))[:limit]
