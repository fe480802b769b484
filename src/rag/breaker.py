"""A circuit breaker per model provider: stop calling a provider that keeps failing, for a cool-down.

closed -> (`failures` calls in a row fail) -> open -> (`cooldown` seconds pass) -> half_open:
one trial call goes through; its success closes the breaker, its failure opens it again.
While open, `allow()` is False at once, so callers take their fallback without waiting out
a timeout. A "call" is one logical request with all its retries: the breaker counts outcomes,
not attempts. Thread-safe; the clock is injectable for tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

BreakerState = Literal["closed", "open", "half_open"]

# Failed calls in a row that open the breaker, and the seconds it stays open before a trial call.
DEFAULT_FAILURES = 3
DEFAULT_COOLDOWN = 30.0


class CircuitBreaker:
    """Counts consecutive failed calls to one provider and short-circuits while it is open."""

    def __init__(
        self,
        name: str,
        *,
        failures: int = DEFAULT_FAILURES,
        cooldown: float = DEFAULT_COOLDOWN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failures < 1 or cooldown < 0:
            raise ValueError(f"breaker {name!r}: failures must be >= 1 and cooldown >= 0")
        self.name = name
        self.failures = failures
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._state: BreakerState = "closed"
        self._in_a_row = 0
        self._opened_at = 0.0
        self._trial_running = False
        self._rejected = 0
        self._failed = 0
        self._last_error = ""

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._current()

    def _current(self) -> BreakerState:
        if self._state == "open" and self._clock() - self._opened_at >= self.cooldown:
            self._state = "half_open"
            self._trial_running = False
        return self._state

    def allow(self) -> bool:
        """True when a call may go out now; False while open (or while a half-open trial is running)."""
        with self._lock:
            state = self._current()
            if state == "closed":
                return True
            if state == "half_open" and not self._trial_running:
                self._trial_running = True
                return True
            self._rejected += 1
            return False

    def record_success(self) -> None:
        with self._lock:
            self._state = "closed"
            self._in_a_row = 0
            self._trial_running = False

    def record_failure(self, error: str = "") -> None:
        with self._lock:
            self._failed += 1
            self._last_error = error
            self._in_a_row += 1
            if self._current() == "half_open" or self._in_a_row >= self.failures:
                self._state = "open"
                self._opened_at = self._clock()
                self._trial_running = False

    def retry_in(self) -> float:
        """Seconds until an open breaker lets a trial call through (0 when not open)."""
        with self._lock:
            if self._current() != "open":
                return 0.0
            return max(0.0, self.cooldown - (self._clock() - self._opened_at))

    def snapshot(self) -> dict[str, object]:
        """State for `/readyz`: state, failures in a row, calls failed and short-circuited, last error."""
        retry_in = self.retry_in()
        with self._lock:
            return {
                "state": self._current(),
                "failures_in_a_row": self._in_a_row,
                "failed_calls": self._failed,
                "short_circuited": self._rejected,
                "retry_in": round(retry_in, 1),
                "last_error": self._last_error,
            }


_REGISTRY: dict[str, CircuitBreaker] = {}
_REGISTRY_LOCK = threading.Lock()


def breaker_for(
    name: str, *, failures: int = DEFAULT_FAILURES, cooldown: float = DEFAULT_COOLDOWN
) -> CircuitBreaker:
    """The process-wide breaker called `name` (created on first use with these limits)."""
    with _REGISTRY_LOCK:
        breaker = _REGISTRY.get(name)
        if breaker is None or (breaker.failures, breaker.cooldown) != (failures, cooldown):
            breaker = _REGISTRY[name] = CircuitBreaker(name, failures=failures, cooldown=cooldown)
        return breaker


def breaker_states() -> dict[str, dict[str, object]]:
    """Every registered breaker's snapshot, by name."""
    with _REGISTRY_LOCK:
        breakers = sorted(_REGISTRY.items())
    return {name: breaker.snapshot() for name, breaker in breakers}


def reset_breakers() -> None:
    """Forget every registered breaker (tests; a fresh process starts empty anyway)."""
    with _REGISTRY_LOCK:
        _REGISTRY.clear()
