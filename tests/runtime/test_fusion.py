"""Chains of stateless operators compiled into one function (runtime/task/fusion.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from samza_nb.runtime.task.fusion import chain_from, compile_chain


class _Step:
    """An operator as fusion sees it: its step, its user function and its neighbours."""

    def __init__(self, step: str, fn: Callable[[Any], Any], *, skip: bool = True) -> None:
        self.step: str | None = step
        self.fn = fn
        self.skip = skip
        self.next_ops: list[Any] = []
        self.prev_ops: list[Any] = []
        self.dropped = 0
        self.tapped = False
        self.failures: list[Exception] = []

    def step_function(self) -> Callable[[Any], Any]:
        return self.fn

    def failed(self, error: Exception) -> None:
        self.failures.append(error)
        if not self.skip:
            msg = f"step {self.step} failed"
            raise RuntimeError(msg) from error


def _linked(*ops: _Step) -> list[_Step]:
    for upstream, downstream in zip(ops, ops[1:], strict=False):
        upstream.next_ops.append(downstream)
        downstream.prev_ops.append(upstream)
    return list(ops)


def _pipeline(*, skip: bool = True) -> list[_Step]:
    def halve(n: int) -> int | None:
        if n == 7:
            msg = "seven"
            raise ValueError(msg)
        return None if n % 5 == 0 else n // 2

    return _linked(
        _Step("map", halve, skip=skip),
        _Step("flat_map", lambda n: None if n == 1 else [n, n + 100]),
        _Step("filter", lambda n: n % 3 != 0),
        _Step("map", lambda n: n * 10),
    )


def _reference(numbers: list[int]) -> list[int]:
    out = []
    for n in numbers:
        if n == 7 or n % 5 == 0 or n // 2 == 1:
            continue
        out += [m * 10 for m in (n // 2, n // 2 + 100) if m % 3 != 0]
    return out


def test_a_chain_runs_each_message_through_every_step_in_order() -> None:
    numbers = list(range(40))
    for entry in ("receive", "run"):
        ops = _pipeline()
        received: list[int] = []
        chain = compile_chain(chain_from(ops[0]), received.append)
        if entry == "receive":
            for n in numbers:
                chain.receive(n)
        else:
            chain.run(numbers)
        assert received == _reference(numbers), entry
        counts = [chain.counter(position)() for position in range(4)]
        # 40 in; 8 dropped by halve (multiples of 5), 1 skipped (7); 2 dropped by flat_map.
        assert counts[0] == 40
        assert counts[1] == 40 - 8 - 1
        assert counts[2] == 2 * (counts[1] - 2)
        assert counts[3] == len(received)
        assert (ops[0].dropped, ops[1].dropped) == (8, 2)
        assert [str(error) for error in ops[0].failures] == ["seven"]


def test_a_failure_in_a_batch_says_how_many_messages_entered() -> None:
    ops = _pipeline(skip=False)
    received: list[int] = []
    chain = compile_chain(chain_from(ops[0]), received.append)
    with pytest.raises(RuntimeError, match="step map failed"):
        chain.run([2, 3, 4, 7, 8])
    assert chain.entered() == 4  # the failing message is the fourth of the batch
    assert chain.counter(0)() == 4
    assert received == _reference([2, 3, 4])


def test_a_chain_stops_at_a_fan_out_a_merge_and_a_sink() -> None:
    head, middle, left, right = (_Step("map", abs) for _ in range(4))
    _linked(head, middle)
    middle.next_ops += [left, right]
    assert chain_from(head) == [head, middle]

    other, merged = _Step("map", abs), _Step("filter", bool)
    _linked(head := _Step("map", abs), merged)
    other.next_ops.append(merged)
    merged.prev_ops.append(other)
    assert chain_from(head) == [head]

    ops = _linked(_Step("map", abs), _Step("sink", print), _Step("map", abs))
    assert chain_from(ops[0]) == ops[:2]


def test_an_operator_sampled_by_show_starts_a_chain_of_its_own() -> None:
    ops = _pipeline()
    ops[2].tapped = True
    assert chain_from(ops[0]) == ops[:2]
    assert chain_from(ops[2]) == ops[2:]


def test_a_sink_ends_the_chain_and_receives_every_message() -> None:
    seen: list[int] = []
    ops = _linked(_Step("filter", lambda n: n > 1), _Step("sink", seen.append))
    chain = compile_chain(chain_from(ops[0]), None)
    chain.run([1, 2, 3])
    chain.receive(4)
    assert seen == [2, 3, 4]
    assert (chain.counter(0)(), chain.counter(1)()) == (4, 3)


def test_chains_of_the_same_shape_share_one_compiled_function() -> None:
    first = compile_chain(chain_from(_pipeline()[0]), print)
    second = compile_chain(chain_from(_pipeline()[0]), print)
    assert first.receive is not second.receive
    assert first.receive.__code__ is second.receive.__code__


def test_an_unknown_step_is_refused() -> None:
    with pytest.raises(ValueError, match="known steps are"):
        compile_chain([_Step("window", abs)], None)
