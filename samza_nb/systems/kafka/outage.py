"""Broker outages: a broker call that fails for a transient reason is tried again until the
outage bound (``outage_wait=``, ``systems.<name>.outage.wait.ms``) has passed, with one warning
once the process has waited a second and one info line when the brokers answer again. A call
that fails and succeeds on its next try within that second (a topic just made whose offsets
are not known yet, a leader moving) says nothing.

Only brokers this system (or another of the same cluster in this process) reached before are
waited for: a bootstrap address that never answered is a mistake to report at once, after
``retries`` attempts, not an outage.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, TypeVar

from samza_nb.errors import StreamSystemError

__all__ = ["OutageWatch", "RetryPolicy", "call_with_retries", "is_transient"]

#: The Kafka system's logger: what a user configures for KafkaSystem covers outages too.
_log = logging.getLogger("samza_nb.systems.kafka")
_T = TypeVar("_T")
#: The longest pause between two tries of a call during an outage.
_LONGEST_PAUSE = 1.0
#: How long calls fail before the outage is worth a warning.
_WARN_AFTER_S = 1.0


class OutageWatch:
    """Whether this process reached a cluster's brokers, and the outage it waits out now (one
    per process and cluster, shared by every call: one warning per outage, not per call)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reached = False
        #: When calls started to fail (None: they answer).
        self._since: float | None = None
        self._warned = False

    def answered(self, where: str) -> None:
        """A call succeeded: the outage, if any, is over."""
        with self._lock:
            self.reached = True
            since, warned = self._since, self._warned
            self._since, self._warned = None, False
        if since is not None and warned:
            _log.info("%s: the brokers answer again after %.1fs", where, time.monotonic() - since)

    def waiting(self, where: str, operation: str, reason: str, bound: float) -> None:
        """A call failed for a transient reason and will be tried again: one warning per outage,
        once it has lasted :data:`_WARN_AFTER_S`."""
        now = time.monotonic()
        with self._lock:
            if self._since is None:
                self._since = now
            if self._warned or now - self._since < _WARN_AFTER_S:
                return
            self._warned = True
        _log.warning(
            "%s: the brokers do not answer (%s: %s); waiting up to %gs for them "
            "(systems.<name>.outage.wait.ms)",
            where, operation, reason, bound,
        )


@dataclass(frozen=True)
class RetryPolicy:
    """How a broker call is bounded: ``timeout`` seconds per try, at least ``retries`` tries,
    and tries until ``outage_wait`` seconds have passed when the brokers were reached before."""

    timeout: float
    retries: int
    outage_wait: float


def call_with_retries(
    call: Callable[[float], _T],
    *,
    operation: str,
    where: str,
    policy: RetryPolicy,
    watch: OutageWatch,
    scrub: Callable[[str], str],
    diagnose: Callable[[], str],
) -> _T:
    """``call(timeout)``, tried again on transient errors (see the module docstring); one
    StreamSystemError naming the brokers and the operation when it gives up."""
    from confluent_kafka import KafkaException

    waits = watch.reached and policy.outage_wait > 0
    started = time.monotonic()
    attempts = 0
    while True:
        try:
            result = call(policy.timeout)
        except KafkaException as error:
            if not is_transient(error):
                msg = scrub(f"{where}: {operation} failed: {error}")
                raise StreamSystemError(msg) from None
            last: BaseException = error
        except FutureTimeout as error:
            last = error
        else:
            watch.answered(where)
            return result
        attempts += 1
        elapsed = time.monotonic() - started
        reason = scrub(_describe(last))
        if attempts >= policy.retries and (not waits or elapsed >= policy.outage_wait):
            break
        if waits:
            watch.waiting(where, operation, reason, policy.outage_wait)
            pause = min(0.2 * 2 ** (attempts - 1), _LONGEST_PAUSE, max(0.0, policy.outage_wait - elapsed))
        else:
            pause = min(0.2 * 2 ** (attempts - 1), 2.0)
        time.sleep(pause)
    diagnosis = diagnose()
    waited = f", waiting out an outage for up to {policy.outage_wait:g}s" if waits else ""
    msg = (
        f"{where}: {operation} failed after {attempts} attempts in {elapsed:.1f}s{waited}: "
        f"{reason}; {diagnosis or 'is the broker reachable?'}"
    )
    raise StreamSystemError(msg) from None


def _describe(error: BaseException) -> str:
    kafka_error: Any = error.args[0] if error.args else None
    text = kafka_error.str() if hasattr(kafka_error, "str") else str(error)
    return str(text) or type(error).__name__


def is_transient(error: Any) -> bool:
    """Whether a KafkaException is worth another try (broker unreachable, timed out, no leader:
    what a broker outage looks like)."""
    from confluent_kafka import KafkaError

    kafka_error = error.args[0] if getattr(error, "args", None) else None
    if not isinstance(kafka_error, KafkaError):
        return True
    if kafka_error.code() == KafkaError._NOENT and "leader" in kafka_error.str().lower():
        # The admin client's "Failed to query partition leaders: No leaders found": the
        # metadata of a topic that exists (checked first) came back without the brokers.
        return True
    return kafka_error.retriable() or kafka_error.code() in (
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_CONTROLLER,
    )
