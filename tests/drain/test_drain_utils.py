"""Drain notifications and the DrainMonitor (SAMZA.md §6.1–6.4)."""

from __future__ import annotations

import threading
import uuid

import pytest

from samza_nb.drain import (
    DRAIN_NAMESPACE,
    DrainMode,
    DrainMonitor,
    DrainMonitorState,
    DrainNotification,
    carried_run_id,
    cleanup,
    cleanup_all,
    read_current_run_id,
    read_drain_notifications,
    read_run_id,
    should_drain,
    write_drain_notification,
)
from samza_nb.errors import DrainError
from samza_nb.job.home import mark_run_ended, resolve_run_id
from samza_nb.metadata import InMemoryMetadataStore, NamespacedMetadataStore


def test_notification_json_is_samzas_format() -> None:
    note = DrainNotification("0f8c3c2e-7f8e-4a51-9d47-2d5c1f1e3a10", "run-42")
    assert note.to_json() == (
        '{"drainMode":"DEFAULT","runId":"run-42","uuid":"0f8c3c2e-7f8e-4a51-9d47-2d5c1f1e3a10"}'
    )
    assert DrainNotification.from_json(note.to_json()) == note
    lower = '{"drainMode":"default","runId":"r","uuid":"0f8c3c2e-7f8e-4a51-9d47-2d5c1f1e3a10"}'
    assert DrainNotification.from_json(lower).mode is DrainMode.DEFAULT
    with pytest.raises(DrainError, match="uuid"):
        DrainNotification("not-a-uuid", "run")
    with pytest.raises(DrainError, match="run id"):
        DrainNotification(str(uuid.uuid4()), "")
    with pytest.raises(DrainError):
        DrainNotification.from_json('{"runId": "r"}')


def test_write_read_should_drain_and_cleanup_by_run_id() -> None:
    store = InMemoryMetadataStore()
    first = write_drain_notification(store, "run-1")
    write_drain_notification(store, "run-1")
    write_drain_notification(store, "run-2")
    assert uuid.UUID(first)
    raw = NamespacedMetadataStore(store, DRAIN_NAMESPACE).get(first)
    assert raw is not None and b'"runId":"run-1"' in raw
    assert should_drain(store, "run-1") and should_drain(store, "run-2")
    assert not should_drain(store, "run-3")
    assert cleanup(store, "run-1") == 2
    assert [n.run_id for n in read_drain_notifications(store)] == ["run-2"]
    assert cleanup_all(store) == 1
    assert read_drain_notifications(store) == []


def test_write_without_run_id_uses_the_persisted_one_or_fails() -> None:
    store = InMemoryMetadataStore()
    with pytest.raises(DrainError, match="run id"):
        write_drain_notification(store)
    NamespacedMetadataStore(store, "set-config").put("app.run.id", b"persisted-run")
    write_drain_notification(store)
    assert should_drain(store, "persisted-run")


def test_a_run_that_ended_is_not_the_current_run() -> None:
    # A drained or finished run stays stored until the next run records its own; a drain in
    # between must not name the ended run (the new run would never see the notification).
    store = InMemoryMetadataStore()
    assert read_current_run_id(store) is None
    mark_run_ended(store, resolve_run_id(store, "run-1"))
    assert read_run_id(store) == "run-1" and read_current_run_id(store) is None
    with pytest.raises(DrainError, match="its last run ended"):
        write_drain_notification(store)
    second = resolve_run_id(store, None)  # the next run: a new deployment
    assert second not in ("", "run-1") and read_current_run_id(store) == second
    write_drain_notification(store)
    assert should_drain(store, second) and not should_drain(store, "run-1")


def test_monitor_arguments_are_checked() -> None:
    store = InMemoryMetadataStore()
    with pytest.raises(DrainError, match="greater than 0"):
        DrainMonitor(store, "run", poll_interval_ms=0)
    with pytest.raises(DrainError, match="metadata store"):
        DrainMonitor(None, "run")  # type: ignore[arg-type]
    monitor = DrainMonitor(store, "run", poll_interval_ms=10)
    with pytest.raises(DrainError, match="register a drain callback"):
        monitor.start()


def test_monitor_callback_registers_once_and_only_in_init() -> None:
    monitor = DrainMonitor(InMemoryMetadataStore(), "run", poll_interval_ms=10)
    assert monitor.register_callback(lambda: None)
    assert not monitor.register_callback(lambda: None)
    monitor.start()
    assert monitor.state is DrainMonitorState.RUNNING
    monitor.stop()
    assert monitor.state is DrainMonitorState.STOPPED
    monitor.start()  # no-op once stopped
    assert monitor.state is DrainMonitorState.STOPPED


def test_monitor_polls_and_calls_back_for_its_run_only() -> None:
    store = InMemoryMetadataStore()
    called = threading.Event()
    monitor = DrainMonitor(store, "mine", poll_interval_ms=10)
    monitor.register_callback(called.set)
    monitor.start()
    write_drain_notification(store, "someone-else")
    assert not called.wait(0.2)
    assert monitor.state is DrainMonitorState.RUNNING
    write_drain_notification(store, "mine")
    assert called.wait(5)
    assert monitor.state is DrainMonitorState.STOPPED


def test_notification_present_at_start_drains_synchronously_and_stays_init() -> None:
    store = InMemoryMetadataStore()
    write_drain_notification(store, "mine")
    calls: list[str] = []
    monitor = DrainMonitor(store, "mine", poll_interval_ms=10)
    monitor.register_callback(lambda: calls.append(threading.current_thread().name))
    monitor.start()
    assert calls == [threading.current_thread().name]
    assert monitor.state is DrainMonitorState.INIT


def test_a_configured_run_id_that_ended_before_is_current_again_when_it_runs() -> None:
    store = InMemoryMetadataStore()
    mark_run_ended(store, resolve_run_id(store, "nightly"))
    assert read_current_run_id(store) is None
    assert resolve_run_id(store, "nightly") == "nightly"  # app.run.id=nightly, run again
    assert read_current_run_id(store) == "nightly"
    write_drain_notification(store)
    assert should_drain(store, "nightly")


def test_a_distributed_job_s_run_id_is_the_one_its_live_processors_carry() -> None:
    store = InMemoryMetadataStore()
    NamespacedMetadataStore(store, "set-config").put("app.run.id", b"run-6")  # a crashed run's
    assert carried_run_id(store, frozenset()) is None  # registered, no run id agreed yet
    assert carried_run_id(store, frozenset({"run-7"})) == "run-7"
    assert carried_run_id(store, frozenset({"run-6"})) == "run-6"
    assert carried_run_id(store, frozenset({"run-6", "run-7"})) == "run-6"  # the stored one still runs
    assert carried_run_id(store, frozenset({""})) == "run-6"  # an older processor: says none
    NamespacedMetadataStore(store, "set-config").put("app.run.id", b"run-8")
    assert carried_run_id(store, frozenset({"run-6", "run-7"})) is None  # which one: unknown
