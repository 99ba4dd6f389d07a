"""Default user functions the API fills in when the user gives none.

They live in plan/ (not api/) because the runtime calls them inside tasks, and module-level
functions travel to Spark executors by reference. The runtime may recognise them by identity
(``spec.value_fn is identity``) to skip a call on the hot path.
"""

from __future__ import annotations

from typing import Any

__all__ = ["identity", "kv_key"]


def identity(message: Any) -> Any:
    """The message itself: partition_by's default ``value_fn``.

    >>> identity({"page": "a"})
    {'page': 'a'}
    """
    return message


def kv_key(message: Any) -> Any:
    """``message.key``: the default key of joins (messages after partition_by are KVs).

    >>> from samza_nb.plan.kv import KV
    >>> kv_key(KV("page-1", 3))
    'page-1'

    A message without a ``key`` has nothing to join on: a TypeError that says what to pass.
    """
    try:
        return message.key
    except AttributeError:
        pass
    msg = (
        f"a join keys messages by message.key (KV messages, as after partition_by), but this "
        f"message is a {type(message).__name__}: pass key_fn= / other_key_fn= to join (key_fn= "
        f"to join_table), key the stream with partition_by, or read the input with "
        f"serde=serdes.kv(...)"
    )
    raise TypeError(msg)
