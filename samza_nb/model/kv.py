"""KV: a message's key and value, as Samza's ``KV``: what partition_by produces, tables store,
and a system's ``write`` takes as a keyed message."""

from __future__ import annotations

from typing import Any, Generic, NamedTuple, TypeVar

__all__ = ["KV"]

K = TypeVar("K")
V = TypeVar("V")


class KV(NamedTuple, Generic[K, V]):
    """A key and a value, as Samza's ``KV``.

    >>> KV("page-1", 3).key
    'page-1'
    """

    key: K
    value: V

    @classmethod
    def of(cls, key: Any, value: Any) -> KV[Any, Any]:
        return cls(key, value)
