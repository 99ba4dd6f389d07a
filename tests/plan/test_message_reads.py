"""Which part of its message a window function can read (plan/message_reads.py): the answer
decides whether a combining partition_by decodes each value, so anything in doubt is ALL."""

from __future__ import annotations

import functools
import operator
from typing import Any

import pytest

from samza_nb.plan.message_reads import MessageReads, message_reads


def _key_length(kv: Any, n: int) -> int:
    return n + len(kv.key)


def _captured(kv: Any, n: int) -> Any:
    return (lambda: kv)()


def _in_a_comprehension(kv: Any, n: int) -> Any:
    return [kv for _ in range(n)]


def _through_locals(kv: Any, n: int) -> Any:
    return locals()["kv"]


def _reassigned(kv: Any, n: int) -> int:
    kv = n
    return kv


def _passed_on(kv: Any, n: int) -> int:
    return _key_length(kv, n)


def _by_index(kv: Any) -> Any:
    return kv[0]


def _varargs(*args: Any) -> int:
    return len(args)


class _Counter:
    def fold(self, kv: Any, n: int) -> int:
        return n + 1


@pytest.mark.parametrize(
    ("fn", "position", "expected"),
    [
        (None, 0, MessageReads.NOTHING),
        (lambda kv, n: n + 1, 0, MessageReads.NOTHING),
        (lambda kv: kv.key, 0, MessageReads.KEY),
        (lambda kv: kv.key.lower(), 0, MessageReads.KEY),
        (_key_length, 0, MessageReads.KEY),
        (_key_length, 1, MessageReads.ALL),
        (lambda kv: kv.value["page"], 0, MessageReads.ALL),
        (lambda kv: (kv.key, kv.value), 0, MessageReads.ALL),
        (_by_index, 0, MessageReads.ALL),
        (_captured, 0, MessageReads.ALL),
        (_in_a_comprehension, 0, MessageReads.ALL),
        (_through_locals, 0, MessageReads.ALL),
        (_reassigned, 0, MessageReads.ALL),
        (_passed_on, 0, MessageReads.ALL),
        (_varargs, 0, MessageReads.ALL),
        (_Counter().fold, 0, MessageReads.ALL),
        (operator.itemgetter(0), 0, MessageReads.ALL),
        (functools.partial(_key_length), 0, MessageReads.ALL),
    ],
)
def test_what_a_function_can_read_of_its_message(fn: Any, position: int, expected: MessageReads) -> None:
    assert message_reads(fn, position) is expected


def test_functions_made_from_the_same_code_get_the_same_answer() -> None:
    made = [(lambda kv, n, i=i: n + i) for i in range(3)]
    assert {message_reads(fn) for fn in made} == {MessageReads.NOTHING}
