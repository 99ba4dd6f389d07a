"""A window with ``merge=`` reading a partition_by's stream alone: each task folds what it
shuffles and sends partial aggregates (plan/combining.py, runtime/task/combining.py). The panes
must be exactly those of the same job sending every message; failures name the window's
operator and the message's place; a stream written before ``merge=`` still reads. In-process
(the Spark path runs the quickstart, which combines, in test_executors.py's parity test and
the crash matrix)."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, StreamApplication, Windows, serdes
from samza_nb.errors import TaskError
from samza_nb.examples.page_views import expected_counts, generate_page_views, write_page_views
from samza_nb.runtime.task import combining
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local

_HOUR = timedelta(hours=1)
_CONFIG = {"task.max.epoch.messages": "150"}


def _add(a: int, b: int) -> int:
    return a + b


def _app(
    system: EmbeddedSystem,
    name: str,
    *,
    merge: Any = _add,
    key: Any = lambda view: view["page"],
    window_key: Any = lambda kv: kv.key,
    fold: Any = lambda kv, n: n + 1,
) -> StreamApplication:
    app = StreamApplication(name, job_id="1")
    views = app.input(system.input("page-views", partitions=4, serde="json"))
    out = app.output(system.output(f"{name}-out", partitions=2, serde="json"))
    options = {} if merge is None else {"merge": merge}
    (
        views.filter(lambda view: view["country"] == "US")
        .partition_by(key, op_id="by-page")
        .window(
            Windows.keyed_tumbling(window_key, _HOUR, initial=lambda: 0, fold=fold, **options),
            op_id="count",
        )
        .map(lambda pane: KV(repr(pane.key.key), pane.message))
        .send_to(out)
    )
    return app


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


@pytest.fixture
def events(system: EmbeddedSystem) -> list[dict[str, Any]]:
    views = generate_page_views(3_000, pages=20, seed=5)
    write_page_views(system, views)
    return views


def _panes(job: Any, name: str) -> dict[str, int]:
    frame = job.collect(f"{name}-out")
    return dict(zip(frame["key"], frame["value"], strict=True))


def _shuffled_records(system: EmbeddedSystem, job: Any) -> int:
    (stream,) = [info for info in job.plan.streams.values() if info.kind == "intermediate"]
    return sum(system.newest_offsets(stream.physical_name).values())


def test_the_panes_are_those_of_the_job_shuffling_every_message_with_far_fewer_records(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    combined = run_local(_app(system, "combined"), _CONFIG, processors=2, clock=StepClock())
    plain = run_local(_app(system, "plain", merge=None), _CONFIG, processors=2, clock=StepClock())
    expected = {repr(page): count for page, count in expected_counts(events).items()}
    assert _panes(combined, "combined") == _panes(plain, "plain") == expected
    us_views = sum(expected.values())
    # Every US view crosses the plain shuffle (plus control messages); at most one record per
    # page and task epoch crosses the combined one.
    assert _shuffled_records(system, plain) >= us_views
    assert _shuffled_records(system, combined) < us_views / 4
    # The window counts the messages its partial aggregates folded.
    assert combined.metrics()["operators"]["combined-1-window-count"] == us_views


def test_keys_that_are_not_str_int_or_bytes_cross_as_plain_messages_and_count_the_same(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    # Page keys as floats for half the pages, and a window key that is a tuple: those
    # messages are not grouped before the shuffle, the rest are.
    def key(view: dict[str, Any]) -> Any:
        number = int(view["page"].split("-")[1])
        return number + 0.5 if number % 2 else view["page"]

    def window_key(kv: KV[Any, Any]) -> Any:
        return (kv.key, "views") if isinstance(kv.key, float) and kv.key > 10 else kv.key

    combined = run_local(_app(system, "mixed", key=key, window_key=window_key), _CONFIG, clock=StepClock())
    plain = run_local(
        _app(system, "mixed-plain", merge=None, key=key, window_key=window_key), _CONFIG, clock=StepClock()
    )
    assert _panes(combined, "mixed") == _panes(plain, "mixed-plain")
    assert sum(_panes(combined, "mixed").values()) == sum(expected_counts(events).values())


def test_a_failing_fold_names_the_window_and_the_message_s_place_or_is_skipped(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    poisoned = next(i for i, view in enumerate(events) if view["country"] == "US" and i > 500)
    bad_user = events[poisoned]["user"]
    bad_page = events[poisoned]["page"]

    def fold(kv: KV[Any, Any], n: int) -> int:
        if kv.value["user"] == bad_user and kv.value["page"] == bad_page:
            msg = "refused"
            raise ValueError(msg)
        return n + 1

    app = _app(system, "failing", fold=fold)
    with pytest.raises(TaskError) as failure:
        run_local(app, _CONFIG, clock=StepClock())
    error = failure.value
    assert error.op_id == "failing-1-window-count"
    assert error.ssp is not None and error.ssp.startswith("page-views#")
    assert isinstance(error.__cause__, ValueError)
    refused = sum(
        1 for view in events
        if view["country"] == "US" and (view["user"], view["page"]) == (bad_user, bad_page)
    )  # fmt: skip
    skipped = run_local(_app(system, "skipping", fold=fold), {**_CONFIG, "task.errors.skip": "true"}, clock=StepClock())
    counts = Counter(expected_counts(events))
    counts[bad_page] -= refused
    assert _panes(skipped, "skipping") == {repr(page): n for page, n in counts.items()}
    metrics = skipped.metrics()["tasks"]
    assert sum(task["skipped"] for task in metrics.values()) == refused


def test_a_stream_shuffled_before_merge_was_given_still_counts_every_message(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    # One epoch without merge= leaves plain messages in the shuffled stream; the same job
    # with merge= reads them among its partial aggregates.
    first = run_local(_app(system, "upgrade", merge=None), _CONFIG, until=1, clock=StepClock())
    assert _shuffled_records(system, first) > 0
    upgraded = run_local(_app(system, "upgrade"), _CONFIG, clock=StepClock())
    assert _panes(upgraded, "upgrade") == {repr(page): n for page, n in expected_counts(events).items()}


@dataclass
class _View:
    user: str
    page: str


def test_the_window_s_functions_see_the_value_as_the_window_would_read_it(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    # The value function returns a dataclass, which the JSON serde writes as a dict: the fold
    # reads it as a dict with or without merge=, and never gets the upstream object.
    def build(name: str, merge: Any) -> StreamApplication:
        app = StreamApplication(name, job_id="1")
        out = app.output(system.output(f"{name}-out", partitions=2, serde="json"))
        options = {} if merge is None else {"merge": merge}
        (
            app.input(system.input("page-views", partitions=4, serde="json"))
            .filter(lambda view: view["country"] == "US")
            .partition_by(lambda view: view["page"], lambda view: _View(view["user"], view["page"]), op_id="by-page")
            .window(
                Windows.keyed_tumbling(
                    lambda kv: kv.key, _HOUR, initial=lambda: 0,
                    fold=lambda kv, n: n + len(kv.value["user"]), **options,
                ),
                op_id="count",
            )  # fmt: skip
            .map(lambda pane: KV(repr(pane.key.key), pane.message))
            .send_to(out)
        )
        return app

    combined = run_local(build("dataclass", _add), _CONFIG, clock=StepClock())
    plain = run_local(build("dataclass-plain", None), _CONFIG, clock=StepClock())
    assert _panes(combined, "dataclass") == _panes(plain, "dataclass-plain")
    assert len(_panes(combined, "dataclass")) == len(expected_counts(events))


def test_the_value_is_decoded_only_for_window_functions_that_can_read_it(
    system: EmbeddedSystem, events: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The quickstart's functions (kv.key, n + 1) cannot see the value: it is not decoded, and
    # the panes are the same. A fold that reads the value gets it decoded, message by message.
    decoded: list[bytes] = []
    decode = combining._json_decode

    def counted(data: bytes) -> Any:
        decoded.append(data)
        return decode(data)

    monkeypatch.setattr(combining, "_json_decode", counted)
    unread = run_local(_app(system, "unread"), _CONFIG, clock=StepClock())
    assert decoded == []
    read = run_local(
        _app(system, "read", fold=lambda kv, n: n + (kv.value["country"] == "US")), _CONFIG, clock=StepClock()
    )
    expected = {repr(page): count for page, count in expected_counts(events).items()}
    assert _panes(unread, "unread") == _panes(read, "read") == expected
    assert len(decoded) == sum(expected.values())


def _peeks_through_a_nested_function(kv: Any, n: int) -> int:
    return n + (lambda: len(sys._getframe(1).f_locals["kv"].value["user"]))()


def _peeks_through_a_traceback(kv: Any, n: int) -> int:
    try:
        raise LookupError
    except LookupError as error:
        frame = error.__traceback__.tb_frame  # type: ignore[union-attr]
    return n + len(frame.f_locals["kv"].value["user"])


def _window_key_peeking_at_the_value(kv: Any) -> str:
    def peek() -> Any:
        return sys._getframe(1).f_locals["kv"].value

    return f"{kv.key}-{int(peek()['user'][5:]) % 2}"


@pytest.mark.parametrize(
    ("window_key", "fold"),
    [
        (lambda kv: kv.key, lambda kv, n: n + 1),
        (lambda kv: f"{kv.key}-all", lambda kv, n: n + 2 if kv.key == "page-1" else n + 1),
        (lambda kv: kv.key, _peeks_through_a_nested_function),
        (lambda kv: kv.key, _peeks_through_a_traceback),
        (_window_key_peeking_at_the_value, lambda kv, n: n + 1),
    ],
    ids=["count", "key-only", "nested-peek", "traceback-peek", "window-key-peek"],
)
def test_window_functions_that_skip_the_decode_or_reach_the_value_count_as_without_merge(
    system: EmbeddedSystem, events: list[dict[str, Any]], window_key: Any, fold: Any
) -> None:
    # Whether the value is decoded is decided from the functions' code: those that cannot
    # see it skip the decode, and those that reach it however they can still get it.
    combined = run_local(_app(system, "c", window_key=window_key, fold=fold), _CONFIG, clock=StepClock())
    plain = run_local(_app(system, "p", window_key=window_key, fold=fold, merge=None), _CONFIG, clock=StepClock())
    assert _panes(combined, "c") == _panes(plain, "p")
    assert len(_panes(combined, "c")) >= len(expected_counts(events))


def test_a_skipped_partial_aggregate_counts_every_message_it_folded(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    def merge(pane: int, partial: int) -> int:
        raise ArithmeticError

    app = _app(system, "merge-fails", merge=merge)
    with pytest.raises(TaskError) as failure:
        run_local(app, _CONFIG, clock=StepClock())
    assert failure.value.op_id == "merge-fails-1-window-count"
    skipped = run_local(_app(system, "merge-skips", merge=merge), {**_CONFIG, "task.errors.skip": "true"}, clock=StepClock())
    us_views = sum(expected_counts(events).values())
    metrics = skipped.metrics()
    # The first partial aggregate of each pane starts it (merge is not called); each later
    # one fails, and all its messages are skipped.
    assert sum(task["skipped"] for task in metrics["tasks"].values()) == us_views - sum(
        _panes(skipped, "merge-skips").values()
    )
    assert metrics["operator_counters"]["merge-skips-1-window-count"]["skipped"] > 0


def test_a_window_fold_failure_before_the_shuffle_counts_on_the_window(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    def fold(kv: KV[Any, Any], n: int) -> int:
        if kv.value["user"].endswith("7"):
            msg = "refused"
            raise ValueError(msg)
        return n + 1

    config = {**_CONFIG, "task.errors.skip": "true"}
    counters = {}
    for name, merge in (("skips", _add), ("skips-plain", None)):
        job = run_local(_app(system, name, merge=merge, fold=fold), config, clock=StepClock())
        window = job.metrics()["operator_counters"][f"{name}-1-window-count"]
        counters[name] = (job.metrics()["operators"][f"{name}-1-window-count"], window["skipped"])
    refused = sum(1 for view in events if view["country"] == "US" and view["user"].endswith("7"))
    assert counters["skips"] == counters["skips-plain"] == (sum(expected_counts(events).values()), refused)


def test_a_job_whose_window_stops_combining_names_the_partial_aggregates_left_in_its_stream(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    first = run_local(_app(system, "rollback"), _CONFIG, until=1, clock=StepClock())
    left = _shuffled_records(system, first)
    assert left > 0
    with pytest.raises(TaskError, match="a partial aggregate of [0-9]+ messages, written by a partition_by"):
        run_local(_app(system, "rollback", merge=None), _CONFIG, clock=StepClock())
    skipped = run_local(_app(system, "rollback", merge=None), {**_CONFIG, "task.errors.skip": "true"}, clock=StepClock())
    counted = sum(_panes(skipped, "rollback").values())
    lost = sum(task["skipped"] for task in skipped.metrics()["tasks"].values())
    assert counted + lost == sum(expected_counts(events).values())


def test_combining_can_be_turned_off(system: EmbeddedSystem, events: list[dict[str, Any]]) -> None:
    job = run_local(_app(system, "off"), {**_CONFIG, "job.shuffle.combine.enabled": "false"}, clock=StepClock())
    assert _shuffled_records(system, job) >= sum(expected_counts(events).values())
    assert _panes(job, "off") == {repr(page): n for page, n in expected_counts(events).items()}


def _by_number(system: EmbeddedSystem, name: str, window_key: Any, config: dict[str, str]) -> Any:
    """Keys that are ints, which a string key serde refuses: every message fails at its key,
    before the window's functions run, with or without combining."""
    app = StreamApplication(name, job_id="1")
    out = app.output(system.output(f"{name}-out", partitions=2, serde="json"))
    (
        app.input(system.input("page-views", partitions=4, serde="json"))
        .partition_by(
            lambda view: int(view["page"].split("-")[1]) if view["country"] == "DE" else view["page"],
            op_id="by-page",
            serde=serdes.kv(serdes.string(), serdes.json()),
        )
        .window(
            Windows.keyed_tumbling(window_key, _HOUR, initial=lambda: 0, fold=lambda kv, n: n + 1, merge=_add),
            op_id="count",
        )
        .map(lambda pane: KV(repr(pane.key.key), pane.message))
        .send_to(out)
    )
    return run_local(app, {**_CONFIG, "task.errors.skip": "true", **config}, clock=StepClock())


def test_a_key_that_does_not_encode_fails_at_the_partition_by_before_the_window_s_functions_run(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    def window_key(kv: KV[Any, Any]) -> Any:
        if kv.value["country"] == "DE":
            msg = "a DE view reached the window"
            raise AssertionError(msg)
        return kv.key

    counters = {}
    for name, config in (("keyed", {}), ("keyed-plain", {"job.shuffle.combine.enabled": "false"})):
        job = _by_number(system, name, window_key, config)
        skipped = job.metrics()["operator_counters"]
        counters[name] = (
            skipped[f"{name}-1-partition_by-by-page"]["skipped"],
            skipped.get(f"{name}-1-window-count", {}).get("skipped", 0),
            _panes(job, name),
        )
    assert counters["keyed"] == counters["keyed-plain"]
    assert counters["keyed"][0] == sum(1 for view in events if view["country"] == "DE")


def test_a_flush_at_the_group_limit_that_fails_names_the_window_and_the_key(
    system: EmbeddedSystem, events: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(combining, "GROUP_LIMIT", 3)

    def fold(kv: KV[Any, Any], n: Any) -> Any:
        return object() if kv.key == "page-3" else n + 1

    with pytest.raises(TaskError, match="window operator limit-1-window-count: key 'page-3': a partial aggregate"):
        run_local(_app(system, "limit", fold=fold), _CONFIG, clock=StepClock())


def test_key_only_windows_count_the_same_across_group_limit_flushes(
    system: EmbeddedSystem, events: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The window's functions read only the key: a key's later messages find its group with
    # one lookup, which must start again after every flush at the group limit.
    monkeypatch.setattr(combining, "GROUP_LIMIT", 3)
    combined = run_local(_app(system, "flushing"), _CONFIG, clock=StepClock())
    expected = {repr(page): count for page, count in expected_counts(events).items()}
    assert _panes(combined, "flushing") == expected


def test_a_value_that_does_not_encode_after_its_key_s_group_started_fails_or_skips_as_without_merge(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    # Views of users ending in 7 carry a value JSON cannot write, among views of the same
    # pages that started their groups: each still fails at the partition_by.
    def key(view: dict[str, Any]) -> Any:
        if view["user"].endswith("7"):
            view["unwritable"] = object()
        return view["page"]

    with pytest.raises(TaskError) as failure:
        run_local(_app(system, "unwritable-fails", key=key), _CONFIG, clock=StepClock())
    assert failure.value.op_id == "unwritable-fails-1-partition_by-by-page"
    assert failure.value.ssp is not None and failure.value.ssp.startswith("page-views#")
    config = {**_CONFIG, "task.errors.skip": "true"}
    results = {}
    for name, merge in (("unwritable", _add), ("unwritable-plain", None)):
        job = run_local(_app(system, name, key=key, merge=merge), config, clock=StepClock())
        skipped = job.metrics()["operator_counters"][f"{name}-1-partition_by-by-page"]["skipped"]
        results[name] = (skipped, _panes(job, name))
    refused = sum(1 for view in events if view["country"] == "US" and view["user"].endswith("7"))
    assert results["unwritable"] == results["unwritable-plain"]
    assert results["unwritable"][0] == refused


def test_a_key_only_fold_failing_on_a_later_message_of_its_group_names_the_window_or_skips_it(
    system: EmbeddedSystem, events: list[dict[str, Any]]
) -> None:
    # The fold reads only the key, and fails once a page-3 group has counted 5 views: the
    # failing messages are those that found their group with one lookup.
    def fold(kv: KV[Any, Any], n: int) -> int:
        return n // (n - n) if kv.key == "page-3" and n >= 5 else n + 1

    with pytest.raises(TaskError) as failure:
        run_local(_app(system, "later-fails", fold=fold), _CONFIG, clock=StepClock())
    assert failure.value.op_id == "later-fails-1-window-count"
    assert isinstance(failure.value.__cause__, ZeroDivisionError)
    assert failure.value.ssp is not None and failure.value.ssp.startswith("page-views#")
    job = run_local(_app(system, "later-skips", fold=fold), {**_CONFIG, "task.errors.skip": "true"}, clock=StepClock())
    skipped = sum(task["skipped"] for task in job.metrics()["tasks"].values())
    panes = _panes(job, "later-skips")
    us_views = sum(expected_counts(events).values())
    assert skipped > 0
    assert sum(panes.values()) + skipped == us_views
    assert {page: n for page, n in panes.items() if page != repr("page-3")} == {
        repr(page): n for page, n in expected_counts(events).items() if page != "page-3"
    }
