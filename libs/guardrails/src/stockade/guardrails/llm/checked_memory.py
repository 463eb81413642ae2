"""Which messages LLMRails already checked, per session: a bounded memory of message digests.

A conversation is resent with every call; remembering the messages that passed their check lets the next call
check only what was added. An entry is a digest of (session, role, context source, content): everything that
decides which check a message gets and what it says, so a remembered verdict is the verdict the check would
give again. A message that was masked is remembered with its masked text, which is sent in its place on later
calls. The memory is least-recently-used, bounded by entries and by the characters of masked text it holds;
a message that fell out of it is simply checked again.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from stockade.guardrails.messages import ChatMessage


@dataclass(frozen=True, slots=True)
class Remembered:
    """A message that passed its check; ``masked`` is the text sent in its place when a check masked it."""

    masked: str | None


_PASSED = Remembered(None)  # shared by every message that passed unchanged


class CheckedMessages:
    """Bounded LRU memory of checked messages, keyed by session (any string: a session or run id)."""

    def __init__(self, max_entries: int = 65_536, max_masked_chars: int = 1_000_000) -> None:
        if max_entries < 0 or max_masked_chars < 0:
            raise ValueError("max_entries and max_masked_chars must not be negative")
        self.max_entries, self.max_masked_chars = max_entries, max_masked_chars
        self._entries: OrderedDict[bytes, Remembered] = OrderedDict()
        self._masked_chars = 0
        self._lock = threading.Lock()  # generate() may run on several threads, each with its own loop

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _digest(session: str, message: ChatMessage) -> bytes:
        h = hashlib.blake2b(digest_size=16)
        for part in (session, message.role, message.context_source or "", message.content):
            data = part.encode("utf-8", "surrogatepass")
            h.update(len(data).to_bytes(8, "big"))
            h.update(data)
        return h.digest()

    def get(self, session: str | None, message: ChatMessage) -> Remembered | None:
        """The remembered check of ``message`` in ``session``; None when it was not checked (or forgotten)."""
        if session is None:
            return None
        key = self._digest(session, message)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def remember(self, session: str | None, message: ChatMessage, masked: str | None) -> None:
        """Record that ``message`` passed its check in ``session`` (``masked``: the text to send instead)."""
        if session is None or self.max_entries == 0:
            return
        key = self._digest(session, message)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._masked_chars -= len(old.masked or "")
            if masked is not None and len(masked) > self.max_masked_chars:
                return  # too large to keep: it will be checked (and masked) again next time
            self._entries[key] = _PASSED if masked is None else Remembered(masked)
            self._masked_chars += len(masked or "")
            while len(self._entries) > self.max_entries or self._masked_chars > self.max_masked_chars:
                _, dropped = self._entries.popitem(last=False)
                self._masked_chars -= len(dropped.masked or "")
