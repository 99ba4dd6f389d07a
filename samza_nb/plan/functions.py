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
    """
    return message.key
