"""The knowledge the bot cites: the forum and docs corpus (``corpus.py``) and the search over it."""
