"""Login rate limit: too many failed logins for one account, or from one address, in a sliding window lock it
out for a while, even for the right password. A success clears the account's count. State lives in the review
app's process (a restart clears it)."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ThrottlePolicy:
    """Failures allowed per account and per address within `window_s`, and how long a lockout lasts."""

    account_failures: int = 5
    address_failures: int = 20
    window_s: float = 900.0
    lockout_s: float = 900.0


class LoginThrottle:
    """Counts failed logins per account and per address; thread-safe (Gradio runs `auth` in worker threads)."""

    def __init__(self, policy: ThrottlePolicy | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy or ThrottlePolicy()
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, deque[float]] = {}
        self._locked_until: dict[str, float] = {}

    def locked_for(self, name: str, address: str | None) -> float:
        """Seconds until the account or the address may try again; 0 when neither is locked."""
        now = self._clock()
        with self._lock:
            keys = [_account(name)] + ([_address(address)] if address else [])
            remaining = [self._locked_until.get(key, 0.0) - now for key in keys]
        return max(0.0, *remaining)

    def record_failure(self, name: str, address: str | None) -> None:
        """Count a failed login (logged at WARNING); lock the account or address when it passes its limit."""
        now = self._clock()
        logger.warning("failed login for account %r from %s", name, address or "an unknown address")
        with self._lock:
            self._count(_account(name), self.policy.account_failures, now)
            if address:
                self._count(_address(address), self.policy.address_failures, now)

    def record_success(self, name: str) -> None:
        """A right password for an unlocked account: its failures are forgiven (the address's are not)."""
        with self._lock:
            self._failures.pop(_account(name), None)

    def _count(self, key: str, limit: int, now: float) -> None:
        window = self._failures.setdefault(key, deque())
        window.append(now)
        while window and window[0] <= now - self.policy.window_s:
            window.popleft()
        if len(window) >= limit:
            self._locked_until[key] = now + self.policy.lockout_s
            window.clear()
            logger.warning("%s locked out for %.0f s after %d failed logins", key, self.policy.lockout_s, limit)
        if len(self._failures) > 100_000:  # bound memory under a spray of made-up names
            self._failures.clear()
            self._locked_until = {k: t for k, t in self._locked_until.items() if t > now}


def _account(name: str) -> str:
    return f"account {name[:64]!r}"


def _address(address: str) -> str:
    return f"address {address}"
