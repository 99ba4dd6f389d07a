"""Drain notifications and the DrainMonitor (Drain SEP; SAMZA.md §6.1–6.4).

A drain is requested out of band: a :class:`DrainNotification` for the job's run id is written
to the job's metadata store (namespace ``samza-drain-v1``, key = the notification's UUID, value
= Samza's JSON). Every processor runs a :class:`DrainMonitor` that polls the store and calls
back once a notification for its run id appears.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid as uuid_module
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from samza_nb.errors import DrainError, SamzaNbError
from samza_nb.metadata import MetadataStore, NamespacedMetadataStore

__all__ = [
    "CONFIG_NAMESPACE",
    "DRAIN_NAMESPACE",
    "RUN_DRAINED_KEY",
    "RUN_ENDED_KEY",
    "RUN_ID_KEY",
    "DrainMode",
    "DrainMonitor",
    "DrainMonitorState",
    "DrainNotification",
    "carried_run_id",
    "cleanup",
    "cleanup_all",
    "read_drain_notifications",
    "read_current_run_id",
    "read_run_id",
    "should_drain",
    "write_drain_notification",
]

DRAIN_NAMESPACE = "samza-drain-v1"
CONFIG_NAMESPACE = "set-config"
#: Keys (namespace ``set-config``) of the run id of the current or last deployment, and of
#: the run id whose deployment ended (drained or finished).
RUN_ID_KEY = "app.run.id"
RUN_ENDED_KEY = "samza-nb.run.ended"
#: The last run id that ended drained (a drained deployment does not run again).
RUN_DRAINED_KEY = "samza-nb.run.drained"
_log = logging.getLogger(__name__)
#: Polls in a row that failed before the drain monitor warns (the job's own calls to the
#: store end it with one line long before, when the store is away).
_LOUD_AFTER_FAILURES = 5


class DrainMode(StrEnum):
    """Only DEFAULT: drain intermediate streams and Samza-managed state, then stop."""

    DEFAULT = "DEFAULT"


@dataclass(frozen=True)
class DrainNotification:
    """An out-of-band request to drain the deployment ``run_id``."""

    uuid: str
    run_id: str
    mode: DrainMode = DrainMode.DEFAULT

    def __post_init__(self) -> None:
        try:
            canonical = str(uuid_module.UUID(str(self.uuid)))
        except ValueError as error:
            msg = f"drain notification uuid {self.uuid!r} is not a UUID"
            raise DrainError(msg) from error
        if not isinstance(self.run_id, str) or not self.run_id:
            msg = f"drain notification needs a non-empty run id, got {self.run_id!r}"
            raise DrainError(msg)
        object.__setattr__(self, "uuid", canonical)
        object.__setattr__(self, "mode", DrainMode(self.mode))

    def to_json(self) -> str:
        """Samza's form, fields in its emission order: drainMode, runId, uuid."""
        return json.dumps(
            {"drainMode": self.mode.value, "runId": self.run_id, "uuid": self.uuid},
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> DrainNotification:
        try:
            fields = json.loads(text)
            return cls(
                str(fields["uuid"]), str(fields["runId"]), DrainMode(str(fields["drainMode"]).upper())
            )
        except (ValueError, KeyError, TypeError) as error:
            msg = f"cannot read drain notification {text!r:.120}: {error}"
            raise DrainError(msg) from error


def _namespace(store: MetadataStore) -> NamespacedMetadataStore:
    if store is None:
        msg = "a metadata store is required"
        raise DrainError(msg)
    return NamespacedMetadataStore(store, DRAIN_NAMESPACE)


def read_run_id(store: MetadataStore) -> str | None:
    """The run id the job persisted (namespace ``set-config``, key ``app.run.id``)."""
    raw = NamespacedMetadataStore(store, CONFIG_NAMESPACE).get(RUN_ID_KEY)
    return raw.decode() if raw else None


def read_current_run_id(store: MetadataStore) -> str | None:
    """The run id of the deployment that runs or will resume: the stored one unless it has
    ended (drained or finished). None also while a job that just started has not recorded its
    new run id yet."""
    config = NamespacedMetadataStore(store, CONFIG_NAMESPACE)
    raw = config.get(RUN_ID_KEY)
    if not raw or raw == config.get(RUN_ENDED_KEY):
        return None
    return raw.decode()


def carried_run_id(store: MetadataStore, carried: frozenset[str]) -> str | None:
    """The run id of a ZooKeeper or Azure job's running deployment: the one its live processors
    carry (``carried``, from its coordination state). The stored run id alone is not enough:
    after a crash or a stop it stays, and a new deployment's processors register a moment
    before the first of them stores the next one. None while no live processor carries one,
    or while two deployments' processors are live (one ending, one starting)."""
    stored = read_current_run_id(store)
    # "": a processor of an older samza_nb, which does not say its run id: the stored one.
    if stored is not None and (stored in carried or "" in carried):
        return stored
    said = carried - {""}
    return next(iter(said)) if len(said) == 1 else None


def write_drain_notification(store: MetadataStore, run_id: str | None = None) -> str:
    """Write a DEFAULT drain notification for ``run_id`` (else the current run id persisted in
    the store: see :func:`read_current_run_id`); returns its UUID."""
    run_id = run_id or read_current_run_id(store)
    if not run_id:
        msg = (
            "unable to find the run id: the job has not started, or its last run ended (drained "
            "or finished); pass run_id or start the job first (app.run.id)"
        )
        raise DrainError(msg)
    notification = DrainNotification(str(uuid_module.uuid4()), run_id)
    namespace = _namespace(store)
    namespace.put(notification.uuid, notification.to_json().encode())
    namespace.flush()
    return notification.uuid


def read_drain_notifications(store: MetadataStore) -> list[DrainNotification]:
    """Every notification in the store (any run id), ordered by UUID."""
    return [DrainNotification.from_json(raw) for _key, raw in sorted(_namespace(store).all().items())]


def should_drain(store: MetadataStore, run_id: str) -> bool:
    """True iff a notification for ``run_id`` exists."""
    return any(n.run_id == run_id for n in read_drain_notifications(store))


def cleanup(store: MetadataStore, run_id: str) -> int:
    """Delete the notifications of ``run_id`` only; returns how many were deleted."""
    namespace = _namespace(store)
    removed = 0
    for key, raw in namespace.all().items():
        if DrainNotification.from_json(raw).run_id == run_id:
            namespace.delete(key)
            removed += 1
    namespace.flush()
    return removed


def cleanup_all(store: MetadataStore) -> int:
    """Delete every drain notification; returns how many were deleted."""
    namespace = _namespace(store)
    keys = list(namespace.all())
    for key in keys:
        namespace.delete(key)
    namespace.flush()
    return len(keys)


class DrainMonitorState(StrEnum):
    INIT = "INIT"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"


class DrainMonitor:
    """Polls the metadata store for a drain notification of ``run_id`` (SAMZA.md §6.4)."""

    def __init__(self, store: MetadataStore, run_id: str, poll_interval_ms: int = 60000):
        if store is None:
            msg = "DrainMonitor needs a metadata store"
            raise DrainError(msg)
        if not run_id:
            msg = "DrainMonitor needs the job's run id (app.run.id)"
            raise DrainError(msg)
        if not isinstance(poll_interval_ms, int) or poll_interval_ms <= 0:
            msg = f"poll interval is {poll_interval_ms!r} ms; it must be greater than 0"
            raise DrainError(msg)
        self._store = store
        self.run_id = run_id
        self.poll_interval_ms = poll_interval_ms
        self._callback: Callable[[], None] | None = None
        self._state = DrainMonitorState.INIT
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        #: Set to look before the poll interval ends (check_now, stop).
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> DrainMonitorState:
        return self._state

    def register_callback(self, callback: Callable[[], None]) -> bool:
        """Register the drain callback: only once, and only before start()."""
        with self._lock:
            if self._state is not DrainMonitorState.INIT or self._callback is not None:
                return False
            self._callback = callback
            return True

    def start(self) -> None:
        with self._lock:
            if self._callback is None:
                msg = "register a drain callback with register_callback(fn) before start()"
                raise DrainError(msg)
            if self._state is not DrainMonitorState.INIT:
                _log.info("DrainMonitor already %s; start() ignored", self._state.value)
                return
            if should_drain(self._store, self.run_id):
                # Restarted during a drain: drain at once, on the caller's thread; no polling.
                callback = self._callback
            else:
                callback = None
                self._state = DrainMonitorState.RUNNING
                self._thread = threading.Thread(
                    target=self._poll, name=f"drain-monitor-{self.run_id}", daemon=True
                )
                self._thread.start()
        if callback is not None:
            callback()

    def _poll(self) -> None:
        failed = 0
        while not self._stopped.is_set():
            # Cleared before the look: a check_now() during it makes the wait below return.
            self._wake.clear()
            try:
                found = should_drain(self._store, self.run_id)
                failed = 0
            except SamzaNbError as error:  # a store away: say so in a line, the next poll retries
                # The job's own calls to the store fail the same way and end it with the one
                # line that matters (a ZooKeeper outage past its bound, each call up to its
                # retries' bound): failures are logged quietly until they outlast that by far.
                failed += 1
                level = logging.WARNING if failed >= _LOUD_AFTER_FAILURES else logging.INFO
                _log.log(level, "DrainMonitor poll failed: %s", error)
                found = False
            except Exception:  # a flaky store must not kill the monitor; the next poll retries
                _log.exception("DrainMonitor poll failed")
                found = False
            if found:
                self.stop()
                if self._callback is not None:
                    self._callback()
                return
            self._wake.wait(self.poll_interval_ms / 1000)

    def check_now(self) -> None:
        """Look for a drain notification now rather than at the next poll (this process wrote
        one: a drain requested from its notebook or handle starts at the next epoch, not up to a
        poll interval later). Other processes still find it by polling."""
        self._wake.set()

    def stop(self) -> None:
        with self._lock:
            if self._state is not DrainMonitorState.RUNNING:
                _log.info("DrainMonitor is %s; stop() ignored", self._state.value)
                return
            self._state = DrainMonitorState.STOPPED
            self._stopped.set()
            self._wake.set()
