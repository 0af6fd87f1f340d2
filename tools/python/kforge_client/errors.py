"""Errors the server sends back as data (rollout/PROTOCOL.md, Errors)."""
from typing import Self


class KforgeError(Exception):
    """An error reply: ``kind`` is what to branch on, ``message`` is for people."""

    def __init__(self, kind, message, field=None, retry_after=None, payload=None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.field = field
        self.retry_after = retry_after
        self.payload = payload or {}

    @classmethod
    def from_payload(cls, payload) -> Self:
        return cls(payload.get("kind", "internal"), payload.get("message", ""), payload.get("field"),
                   payload.get("retry_after"), payload)


class ServerUnavailable(ConnectionError):
    """No reply within the timeout after every retry (the server is down or unreachable)."""


# Methods a client may safely send again when a reply was lost: they change nothing twice.
IDEMPOTENT = frozenset({"health", "tools", "tasks", "cancel"})
