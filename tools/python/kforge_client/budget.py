"""One request's time budget, shared by ``Client`` and ``AsyncClient``.

A call's ``timeout`` is a wall-clock bound on the whole call: every attempt, every reconnect backoff
and every sleep after a ``busy`` reply fit in it. ``busy_timeout`` bounds the time spent retrying
``busy`` replies (then the ``busy`` error is raised, with what was tried in its message).
"""
import time

from .errors import IDEMPOTENT, KforgeError, ServerUnavailable

# The shortest wait for one attempt of an idempotent request (shorter ones would only add resends).
MIN_ATTEMPT_S = 0.25
# Time kept back after a busy sleep for the retry itself: a retry with no time left would only fail.
RETRY_MARGIN_S = 0.05


class CallBudget:
    """Deadlines and counters of one call; ``lost()`` and ``busy()`` return how long to sleep or raise."""

    def __init__(self, client, method, timeout, busy_timeout) -> None:
        self.client = client
        self.method = method
        self.timeout = client.timeout if timeout is None else float(timeout)
        self.busy_timeout = client.busy_timeout if busy_timeout is None else float(busy_timeout)
        self.start = time.monotonic()
        self.deadline = self.start + self.timeout
        self.busy_deadline = self.start + self.busy_timeout
        self.idempotent = method in IDEMPOTENT
        self.attempts = 0
        self.busy_replies = 0
        self.delay = client.backoff

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def attempt_timeout(self) -> float:
        """How long the next attempt waits for its reply: what is left, shared among the resends an
        idempotent request may still make."""
        self.attempts += 1
        left = self.left()
        if not self.idempotent:
            return left
        resends_left = max(0, self.client.retries - (self.attempts - 1))
        return min(left, max(MIN_ATTEMPT_S, left / (resends_left + 1)))

    def lost(self) -> float:
        """No reply to the last attempt: the backoff before resending, or ``ServerUnavailable``."""
        left = self.left()
        if not self.idempotent or self.attempts > self.client.retries or left <= 0:
            why = "" if self.idempotent else f" ({self.method} is not resent: it may have been acted on)"
            raise ServerUnavailable(
                f"no reply to {self.method} from {self.client.endpoint} within {time.monotonic() - self.start:.1f} s "
                f"(timeout {self.timeout:g} s, {self.attempts} attempt(s)){why}; is `kforge serve` running "
                f"and bound to this endpoint?")
        sleep = min(self.delay, left)
        self.delay = min(self.delay * 2, self.client.max_backoff)
        return sleep

    def busy(self, err) -> float:
        """A ``busy`` reply: the sleep before retrying, or the error itself once busy_timeout, busy_retries
        or the call's timeout is spent."""
        self.busy_replies += 1
        now = time.monotonic()
        wait = min(err.retry_after or self.client.backoff, max(0.0, self.busy_deadline - now))
        cap = self.client.busy_retries
        if (cap is not None and self.busy_replies > cap) or now >= self.busy_deadline \
                or now + wait + RETRY_MARGIN_S >= self.deadline:
            raise KforgeError(err.kind, f"{err.message} (still busy after {self.busy_replies} reply(ies) over "
                                        f"{now - self.start:.1f} s; busy_timeout {self.busy_timeout:g} s, "
                                        f"timeout {self.timeout:g} s)",
                              err.field, err.retry_after, err.payload)
        return wait
