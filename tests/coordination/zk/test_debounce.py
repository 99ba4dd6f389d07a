"""The debounce scheduler (SAMZA.md §8.3); no ZooKeeper needed."""

from __future__ import annotations

import threading
import time

from samza_nb.coordination.zk.debounce import DebounceScheduler


def test_a_burst_collapses_into_one_run_after_the_last_event() -> None:
    runs: list[float] = []
    done = threading.Event()
    scheduler = DebounceScheduler("test-debounce", lambda name, error: None)
    try:
        started = time.monotonic()
        for _ in range(5):
            scheduler.schedule("change", 0.3, lambda: (runs.append(time.monotonic()), done.set()))
            time.sleep(0.05)
        assert done.wait(3)
        time.sleep(0.4)
        assert len(runs) == 1
        assert runs[0] - started >= 0.2 + 0.3 - 0.05  # counted from the last event
    finally:
        scheduler.stop()


def test_actions_run_in_due_order_on_one_thread_and_failures_are_reported() -> None:
    seen: list[tuple[str, str]] = []
    errors: list[tuple[str, str]] = []
    finished = threading.Event()
    scheduler = DebounceScheduler("test-debounce", lambda name, error: errors.append((name, str(error))))

    def record(name: str) -> None:
        seen.append((name, threading.current_thread().name))

    def fail() -> None:
        msg = "boom"
        raise RuntimeError(msg)

    try:
        scheduler.schedule("late", 0.2, lambda: (record("late"), finished.set()))
        scheduler.schedule("early", 0.0, lambda: record("early"))
        scheduler.schedule("bad", 0.05, fail)
        assert finished.wait(3)
        assert seen == [("early", "test-debounce"), ("late", "test-debounce")]
        assert errors == [("bad", "boom")]
    finally:
        scheduler.stop()


def test_nothing_runs_after_stop_or_cancel() -> None:
    ran: list[str] = []
    scheduler = DebounceScheduler("test-debounce", lambda name, error: None)
    scheduler.schedule("cancelled", 0.1, lambda: ran.append("cancelled"))
    scheduler.cancel("cancelled")
    scheduler.schedule("pending", 0.1, lambda: ran.append("pending"))
    scheduler.stop()
    scheduler.schedule("after", 0.0, lambda: ran.append("after"))
    time.sleep(0.3)
    assert ran == []
    assert scheduler.pending() == []
