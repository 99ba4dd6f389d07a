"""What part of its message a user function can read, from its bytecode.

A combining partition_by (runtime/task/combining.py) hands the window's functions what the window
would have read: the key, and the value encoded with the stream's serde and decoded again.
The decode is a sixth of a task epoch's time in the quickstart, whose window functions are
``lambda kv: kv.key`` and ``lambda kv, n: n + 1``: neither can see the value, so any value
gives them the same results, and the decode is skipped.

The answer is :attr:`MessageReads.ALL` unless the function is known to read less, and it is
known only for functions that call nothing: a plain Python function taking exactly the
arguments it is given, whose code does nothing but load its parameters, constants and its own
locals, apply Python's operators to them, branch, and read ``message.key``. It looks up no
global, builtin or closure variable, calls nothing, defines no nested function, handles no
exception, and uses its message parameter only as ``message.key``. Such a function has no way
to the value (no frame to inspect, no helper to hand the message to), provided what it
applies operators to are Python's own types. On a combining path they are: the key is a str
or an int, and an aggregate is a scalar or what a store reads back (msgpack's dicts, lists
and scalars), as a new pane's is (runtime/task/combining.py).

Replacing a function's ``__code__`` while its job runs is not covered.
"""

from __future__ import annotations

import dis
import enum
import functools
import inspect
import types
from collections.abc import Callable
from typing import Any, Final

__all__ = ["MessageReads", "message_reads"]

# Instructions that only move values between the stack, constants and locals, apply an
# operator, format, or branch (the names of Python 3.11 to 3.13). Anything else (a call, an
# attribute other than the message's key, a global, a closure cell, an import, an exception
# handler, a nested function, iteration) makes the answer ALL.
_PLAIN: Final = frozenset(
    {
        "RESUME", "NOP", "CACHE", "RETURN_VALUE", "RETURN_CONST", "POP_TOP", "COPY", "SWAP",
        "LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST",
        "STORE_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST",
        "BINARY_OP", "BINARY_SUBSCR", "BINARY_SLICE", "COMPARE_OP", "IS_OP", "CONTAINS_OP",
        "UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "UNARY_POSITIVE", "TO_BOOL",
        "FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE", "BUILD_STRING",
        "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_IF_FALSE_OR_POP",
        "JUMP_IF_TRUE_OR_POP", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE",
        "POP_JUMP_IF_NOT_NONE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE",
        "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_FALSE",
        "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE",
    }
)  # fmt: skip
_OPTIONAL_ARGUMENTS: Final = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


class MessageReads(enum.Enum):
    """How much of its message (a KV) a function can read."""

    NOTHING = "nothing"
    KEY = "key"
    ALL = "all"


def message_reads(fn: Callable[..., Any] | None, arity: int = 1) -> MessageReads:
    """How much of its message ``fn`` can read when called with the message and
    ``arity - 1`` more positional arguments (a window's key function takes 1, a fold 2).

    >>> message_reads(lambda kv, n: n + 1, arity=2).name
    'NOTHING'
    >>> message_reads(lambda kv: kv.key).name
    'KEY'
    >>> message_reads(lambda kv: kv.value["page"]).name
    'ALL'
    >>> message_reads(lambda kv: len(kv.key)).name  # a call: ALL
    'ALL'
    """
    if fn is None:
        return MessageReads.NOTHING
    if type(fn) is not types.FunctionType:
        return MessageReads.ALL  # a builtin, a partial, a method, a callable object: unknown
    return _code_reads(fn.__code__, arity)


@functools.lru_cache(maxsize=64)
def _code_reads(code: types.CodeType, arity: int) -> MessageReads:
    """:func:`message_reads` of a function's code (the same for every function made from it:
    a plan's functions are analysed once per process, not once per task epoch)."""
    if code.co_argcount != arity or code.co_kwonlyargcount or code.co_flags & _OPTIONAL_ARGUMENTS:
        return MessageReads.ALL  # defaults or extra parameters could carry anything
    if code.co_freevars or code.co_cellvars:
        return MessageReads.ALL
    message = code.co_varnames[0]
    reads = MessageReads.NOTHING
    instructions = list(dis.get_instructions(code))
    for index, instruction in enumerate(instructions):
        if instruction.opname == "LOAD_ATTR" and index > 0:
            before = instructions[index - 1]
            if before.opname == "LOAD_FAST" and before.argval == message and instruction.argval == "key":
                continue  # message.key, counted at the load
        if instruction.opname not in _PLAIN:
            return MessageReads.ALL
        argval = instruction.argval
        if message not in (argval if isinstance(argval, tuple) else (argval,)) or "FAST" not in instruction.opname:
            continue
        following = instructions[index + 1] if index + 1 < len(instructions) else None
        if instruction.opname != "LOAD_FAST" or following is None or following.opname != "LOAD_ATTR":
            return MessageReads.ALL
        if following.argval != "key":
            return MessageReads.ALL
        reads = MessageReads.KEY
    return reads
