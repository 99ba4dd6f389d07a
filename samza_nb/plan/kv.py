"""KV: the key-value pair that partition_by produces and tables store."""

from __future__ import annotations

from typing import Any, Generic, NamedTuple, TypeVar

__all__ = ["KV", "from_storable", "to_storable"]

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


def to_storable(value: Any) -> Any:
    """KV is kept as a tagged map so it comes back as a KV from a store (msgpack has no
    named tuples)."""
    if isinstance(value, KV):
        return {"__kv__": [to_storable(value.key), to_storable(value.value)]}
    if isinstance(value, list):
        return [to_storable(item) for item in value]
    return value


def from_storable(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1 and "__kv__" in value:
        key, inner = value["__kv__"]
        return KV(from_storable(key), from_storable(inner))
    if isinstance(value, list):
        return [from_storable(item) for item in value]
    return value
