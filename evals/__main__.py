"""``python -m evals run [--cases FILE] [--json] [--out DIR] [--min-pass X] [--baselines/--no-baselines]``."""

from evals.cli import main

if __name__ == "__main__":
    main()
