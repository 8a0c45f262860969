"""One browser tab's conversation, kept on the server so no message is lost.

Every submitted message (a question, a panel edit, a simulation) becomes an ``Exchange`` appended
under the tab's lock at once; a single worker per tab answers the pending exchanges oldest first
and each answer is filled into its own exchange. The chat shown is always rendered from this
list, so a message sent while another is being answered keeps its place, gets its own answer,
and the answer of the first cannot overwrite it (Gradio's per-event state copies would).
"""

from __future__ import annotations

import html
import itertools
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

MAX_TABS = 2000  # conversations kept; the least recently used beyond this are dropped
DOUBLE_SUBMIT_SECONDS = 1.5  # the same text again within this is a double click, not a question

_ids = itertools.count(1)


@dataclass
class Exchange:
    kind: str  # "ask" | "edit" | "share" | "simulate"
    user_html: str
    payload: Any  # the question text, or the setup dict
    answer_html: str | None = None
    id: str = field(default_factory=lambda: f"x{next(_ids)}")
    at: float = field(default_factory=time.monotonic)
    raw: str = ""  # the text as typed (for double-submit detection)
    taken: bool = False  # a worker is answering it


@dataclass
class Conversation:
    exchanges: list[Exchange] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)  # answered user questions (history for follow-ups)
    answer: dict | None = None  # the last answer (model_dump)
    answer_id: str | None = None  # the exchange that answer belongs to (download links name it)
    key: str | None = None  # the tab's session hash
    stated: dict = field(default_factory=dict)  # fields the user gave (chat or panel), field -> value
    shown: dict = field(default_factory=dict)  # panel field -> value the panel last showed
    framework: str | None = None  # the framework the user's run uses ("llamafactory"): edits keep its defaults
    worker: object | None = None  # the token of the worker answering this tab's exchanges
    simulating: bool = False
    previous: dict | None = None  # the answer before the last one (to compare two setups)
    previous_id: str | None = None
    carried: list = field(default_factory=list)  # fields the last answer took from earlier messages
    painted: dict = field(default_factory=dict)  # page step ("chart", "panel", "details") -> answer id it last showed
    howto_open: bool = False  # the page's how-to section is open (its code is filled only then)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, exchange: Exchange) -> bool:
        """Append unless it repeats the previous message within the double-click window."""
        with self.lock:
            last = self.exchanges[-1] if self.exchanges else None
            if (last is not None and exchange.raw and last.raw == exchange.raw
                    and exchange.at - last.at < DOUBLE_SUBMIT_SECONDS):
                return False
            self.exchanges.append(exchange)
            return True

    def claim(self) -> object | None:
        """Become this tab's worker (returns its token); None when one is already working (it
        will take the caller's exchange too)."""
        with self.lock:
            if self.worker is not None:
                return None
            self.worker = object()
            return self.worker

    def next_pending(self, token: object) -> Exchange | None:
        """The oldest unanswered exchange, marked taken; when none is left the worker stops (under
        the lock, so an exchange added right now is either seen here or finds no worker and
        starts one)."""
        with self.lock:
            for ex in self.exchanges:
                if ex.answer_html is None and not ex.taken and ex.kind != "simulate":
                    ex.taken = True
                    return ex
            if self.worker is token:
                self.worker = None
            return None

    def release(self, token: object) -> None:
        """The worker stops early (the tab closed mid-answer): untake what it did not answer."""
        with self.lock:
            for ex in self.exchanges:
                if ex.taken and ex.answer_html is None:
                    ex.taken = False
            if self.worker is token:
                self.worker = None

    def question_of(self, exchange_id: str | None) -> str:
        """The words of the message an answer replied to (a question as typed, an edit as shown)."""
        for ex in self.exchanges:
            if ex.id == exchange_id:
                if ex.raw and ex.kind == "ask":
                    return ex.raw
                return html.unescape(re.sub(r"<[^>]+>", " ", ex.user_html)).strip()
        return ""

    def messages(self) -> list[dict]:
        """The chat, in order: each message followed by its own answer once it has one."""
        with self.lock:
            out = []
            for ex in self.exchanges:
                out.append({"role": "user", "content": ex.user_html})
                if ex.answer_html is not None:
                    out.append({"role": "assistant", "content": ex.answer_html})
            return out


class Store:
    """Conversations by Gradio session hash (one per tab), least recently used dropped first."""

    def __init__(self, limit: int = MAX_TABS):
        self._items: OrderedDict[str, Conversation] = OrderedDict()
        self._lock = threading.Lock()
        self.limit = limit

    def get(self, key: str | None) -> Conversation:
        key = key or "anonymous"
        with self._lock:
            conv = self._items.get(key)
            if conv is None:
                conv = self._items[key] = Conversation(key=key)
                while len(self._items) > self.limit:
                    self._items.popitem(last=False)
            else:
                self._items.move_to_end(key)
            return conv

    def find(self, key: str) -> Conversation | None:
        """The tab's conversation if there is one (a download link must not create one)."""
        with self._lock:
            return self._items.get(key)

    def reset(self, key: str | None) -> Conversation:
        with self._lock:
            conv = self._items[key or "anonymous"] = Conversation(key=key or "anonymous")
            return conv

    def drop(self, key: str | None) -> None:
        with self._lock:
            self._items.pop(key or "anonymous", None)


# The server's conversations (one per tab), shared by the page's event handlers.
store = Store()
