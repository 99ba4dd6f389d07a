"""KV (samza_nb/model/kv.py) as a store keeps it: a tagged map, since msgpack has no named
tuples, wherever it sits in a stored value (a list, or a dict's value).

A user's dict whose only key is the tag (or the escape) is stored escaped, so it reads back
as it was. A tuple is stored as msgpack keeps it (an array, read back as a list) and is not
searched for KVs: a window or join key that is a tuple keeps the bytes it always had.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from samza_nb.model.kv import KV

__all__ = ["KV", "from_storable", "may_hold_tags", "to_storable", "unpack_storable"]

# Types msgpack keeps as they are: a dict or list holding only these is stored as it is (the
# check runs in C, so a join's flat dict message costs one pass and no copy).
_PLAIN: Final = frozenset({str, int, float, bool, type(None), bytes})
_TAG: Final = "__kv__"
_ESCAPE: Final = "__kv_escaped__"
#: What the tag and the escape begin with, as msgpack writes it (a string's UTF-8 bytes as they
#: are, after its length).
_TAG_BYTES: Final = b"__kv_"
_unpack = msgspec.msgpack.Decoder().decode


def to_storable(value: Any) -> Any:
    """``value`` with every KV in it, in lists and dicts at any depth, as a tagged map, so
    that it comes back from a store as a KV (msgpack has no named tuples).

    >>> to_storable({"last": KV("page-1", 3), "n": 2})
    {'last': {'__kv__': ['page-1', 3]}, 'n': 2}
    >>> from_storable(to_storable({"last": KV("page-1", 3), "n": 2}))
    {'last': KV(key='page-1', value=3), 'n': 2}
    >>> from_storable(to_storable({"__kv__": 5}))  # a user's dict that looks like a tag
    {'__kv__': 5}
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if isinstance(value, KV):
        return {_TAG: [to_storable(value.key), to_storable(value.value)]}
    if isinstance(value, dict):
        if len(value) == 1 and (_TAG in value or _ESCAPE in value):
            return {_ESCAPE: {key: to_storable(item) for key, item in value.items()}}
        if _PLAIN.issuperset(map(type, value.values())):
            return value
        return {key: to_storable(item) for key, item in value.items()}
    if isinstance(value, list):
        if _PLAIN.issuperset(map(type, value)):
            return value
        return [to_storable(item) for item in value]
    return value


def may_hold_tags(data: bytes) -> bool:
    """Whether msgpack ``data`` may hold a tagged or escaped map. When it cannot, what it
    decodes to is already what :func:`from_storable` would give: a window pane of thousands
    of plain messages is read back without a walk over them (one scan of its bytes, in C).

    >>> import msgspec
    >>> may_hold_tags(msgspec.msgpack.encode(to_storable([{"page": "a"}, 2])))
    False
    >>> may_hold_tags(msgspec.msgpack.encode(to_storable([KV("page", 1)])))
    True
    """
    return _TAG_BYTES in data


def unpack_storable(data: bytes) -> Any:
    """Msgpack ``data`` a store holds, read back with its KVs (:func:`from_storable`, walked
    only when :func:`may_hold_tags`)."""
    value = _unpack(data)
    return from_storable(value) if may_hold_tags(data) else value


def from_storable(value: Any) -> Any:
    """What :func:`to_storable` kept, read back from msgpack: tagged maps become KVs again."""
    kind = type(value)
    if kind is dict:
        if len(value) == 1:
            if _TAG in value:
                key, inner = value[_TAG]
                return KV(from_storable(key), from_storable(inner))
            if _ESCAPE in value:
                return {key: from_storable(item) for key, item in value[_ESCAPE].items()}
        if _PLAIN.issuperset(map(type, value.values())):
            return value
        return {key: from_storable(item) for key, item in value.items()}
    if kind is list:
        if _PLAIN.issuperset(map(type, value)):
            return value
        return [from_storable(item) for item in value]
    return value
