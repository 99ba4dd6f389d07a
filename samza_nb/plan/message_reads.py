"""What part of its message a user function can read, from its bytecode.

A combining partition_by (runtime/combining.py) hands the window's functions what the window
would have read: the key, and the value encoded with the stream's serde and decoded again.
The decode is a sixth of a task epoch's time in the quickstart, whose window functions are
``lambda kv: kv.key`` and ``lambda kv, n: n + 1``: neither can see the value, so any value
gives them the same results, and the decode is skipped.

The answer errs towards :attr:`MessageReads.ALL`. A function is known to read less only when
it is a plain Python function whose message parameter is named in its own code in no way but
``message.key`` (or not at all): not captured by a nested function or a lambda, not passed
on, not reassigned, and the function names no frame introspection (``locals``, ``vars``,
``eval``, ``exec``, ``sys._getframe``, ``inspect.currentframe``, ``f_locals``). A function
that reaches into its caller's frame from a function it calls is not covered.
"""

from __future__ import annotations

import dis
import enum
import functools
import types
from collections.abc import Callable
from typing import Any, Final

__all__ = ["MessageReads", "message_reads"]

# Names through which a function could read its own frame's locals.
_INTROSPECTION: Final = frozenset(
    {"locals", "vars", "eval", "exec", "_getframe", "currentframe", "f_locals", "stack", "getframeinfo"}
)


class MessageReads(enum.Enum):
    """How much of its message (a KV) a function can read."""

    NOTHING = "nothing"
    KEY = "key"
    ALL = "all"


def message_reads(fn: Callable[..., Any] | None, position: int = 0) -> MessageReads:
    """How much of the message passed as positional argument ``position`` ``fn`` can read.

    >>> message_reads(lambda kv, n: n + 1).name
    'NOTHING'
    >>> message_reads(lambda kv: kv.key).name
    'KEY'
    >>> message_reads(lambda kv: kv.value["page"]).name
    'ALL'
    """
    if fn is None:
        return MessageReads.NOTHING
    if type(fn) is not types.FunctionType:
        return MessageReads.ALL  # a builtin, a partial, a method, a callable object: unknown
    return _code_reads(fn.__code__, position)


@functools.lru_cache(maxsize=256)
def _code_reads(code: types.CodeType, position: int) -> MessageReads:
    """:func:`message_reads` of a function's code (the same for every function made from it:
    a plan's functions are analysed once per process, not once per task epoch)."""
    if position >= code.co_argcount:
        return MessageReads.ALL  # the message lands in *args (or the call fails)
    name = code.co_varnames[position]
    if name in code.co_cellvars or _INTROSPECTION & set(code.co_names):
        return MessageReads.ALL
    reads = MessageReads.NOTHING
    instructions = list(dis.get_instructions(code))
    for index, instruction in enumerate(instructions):
        argval = instruction.argval
        names = argval if isinstance(argval, tuple) else (argval,)
        if "FAST" not in instruction.opname or name not in names:
            continue
        following = instructions[index + 1] if index + 1 < len(instructions) else None
        if (
            instruction.opname == "LOAD_FAST"
            and following is not None
            and following.opname == "LOAD_ATTR"
            and following.argval == "key"
        ):
            reads = MessageReads.KEY
            continue
        return MessageReads.ALL
    return reads
