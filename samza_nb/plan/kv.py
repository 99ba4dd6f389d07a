"""KV (samza_nb/model/kv.py) as a store keeps it: a tagged map, since msgpack has no named
tuples."""

from __future__ import annotations

from typing import Any

from samza_nb.model.kv import KV

__all__ = ["KV", "from_storable", "to_storable"]


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
