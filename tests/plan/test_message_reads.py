"""Which part of its message a window function can read (plan/message_reads.py): the answer
decides whether a combining partition_by decodes each value, so anything in doubt is ALL,
and only functions that call nothing are known to read less."""

from __future__ import annotations

import functools
import inspect
import operator
import sys
from typing import Any

import pytest

from samza_nb.plan.message_reads import MessageReads, message_reads

_peek_locals = locals  # an alias: no name to look for
_peek_frame = sys._getframe


def _key_length(kv: Any, n: int) -> int:
    return n + len(kv.key)


def _captured(kv: Any, n: int) -> Any:
    return (lambda: kv)()


def _nested_peeks_at_its_caller(kv: Any, n: int) -> Any:
    return n + (lambda: len(sys._getframe(1).f_locals["kv"].value["user"]))()


def _through_an_alias(kv: Any, n: int) -> Any:
    return n + len(_peek_locals()["kv"].value)


def _through_a_traceback(kv: Any, n: int) -> Any:
    try:
        raise LookupError
    except LookupError as error:
        frame = error.__traceback__.tb_frame  # type: ignore[union-attr]
    return n + len(inspect.getargvalues(frame)[3]["kv"].value)


def _in_a_comprehension(kv: Any, n: int) -> Any:
    return [kv for _ in range(n)]


def _reassigned(kv: Any, n: int) -> int:
    kv = n
    return kv


def _by_index(kv: Any) -> Any:
    return kv[0]


def _varargs(*args: Any) -> int:
    return len(args)


def _plain_branches(kv: Any, n: int) -> int:
    bonus = 2 if kv.key == "page-1" else 1
    return n + bonus


class _Counter:
    def fold(self, kv: Any, n: int) -> int:
        return n + 1


_OFFSET = 1


@pytest.mark.parametrize(
    ("fn", "arity", "expected"),
    [
        (None, 1, MessageReads.NOTHING),
        (lambda kv, n: n + 1, 2, MessageReads.NOTHING),
        (lambda kv, n: (n := n + 1), 2, MessageReads.NOTHING),
        (lambda kv: kv.key, 1, MessageReads.KEY),
        (lambda kv: f"{kv.key}-x", 1, MessageReads.KEY),
        (_plain_branches, 2, MessageReads.KEY),
        # Anything that calls, looks a name up, nests code or handles an exception: ALL.
        (lambda kv: kv.key.lower(), 1, MessageReads.ALL),
        (_key_length, 2, MessageReads.ALL),
        (lambda kv, n: n + _OFFSET, 2, MessageReads.ALL),
        (_nested_peeks_at_its_caller, 2, MessageReads.ALL),
        (_through_an_alias, 2, MessageReads.ALL),
        (lambda kv, n: n + len(inspect.getargvalues(_peek_frame())[3]["kv"].value), 2, MessageReads.ALL),
        (_through_a_traceback, 2, MessageReads.ALL),
        (_captured, 2, MessageReads.ALL),
        (_in_a_comprehension, 2, MessageReads.ALL),
        # The message other than as message.key: ALL.
        (lambda kv: kv.value["page"], 1, MessageReads.ALL),
        (lambda kv: (kv.key, kv.value), 1, MessageReads.ALL),
        (_by_index, 1, MessageReads.ALL),
        (_reassigned, 2, MessageReads.ALL),
        # Arguments it is not given, or that default to the user's objects: ALL.
        (lambda kv, n: n + 1, 1, MessageReads.ALL),
        (lambda kv, n, extra=_OFFSET: n + extra, 2, MessageReads.ALL),
        (_varargs, 2, MessageReads.ALL),
        (_Counter().fold, 2, MessageReads.ALL),
        (operator.itemgetter(0), 1, MessageReads.ALL),
        (functools.partial(_key_length), 2, MessageReads.ALL),
    ],
)
def test_what_a_function_can_read_of_its_message(fn: Any, arity: int, expected: MessageReads) -> None:
    assert message_reads(fn, arity) is expected
