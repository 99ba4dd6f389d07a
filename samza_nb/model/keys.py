"""Partition and window keys as stable bytes.

A key decides the partition a message goes to (murmur2 of its bytes) and the store entry it
updates, so equal keys must give equal bytes in every process and every run. The bytes are
JSON (msgspec), exactly as the runtime has written them so far: stored state and changelogs
depend on them, so no key that worked changes its bytes here. Keys whose JSON is not stable are
refused instead of silently splitting or merging:

* a ``dict`` encodes in insertion order, so equal dicts can give different bytes;
* a ``set``/``frozenset`` encodes in hash order, which differs between processes;
* NaN and ±infinity encode as ``null`` and merge with ``None`` (and with each other);

also when nested in a list or tuple. As before, ``1``, ``1.0`` and ``True`` are different keys
(their JSON differs), and so are ``0.0`` and ``-0.0``.

>>> encode_partition_key(("page-1", 3), "by-page")
b'["page-1",3]'
>>> encode_partition_key({"page": 1}, "by-page")
Traceback (most recent call last):
...
samza_nb.errors.SerdeError: operator 'by-page': key {'page': 1} is a dict, whose bytes depend on insertion order; use a tuple of its values in a fixed order, e.g. (d['a'], d['b']), or tuple(sorted(d.items()))
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

import msgspec

from samza_nb.errors import SerdeError

__all__ = ["check_partition_key", "check_table_key", "check_written_key", "encode_partition_key"]

_encode = msgspec.json.Encoder().encode

_INSTEAD = {
    "dict": (
        "is a dict, whose bytes depend on insertion order; use a tuple of its values in a "
        "fixed order, e.g. (d['a'], d['b']), or tuple(sorted(d.items()))"
    ),
    "set": (
        "is a set, whose bytes depend on hash order (different in every process); use "
        "tuple(sorted(s))"
    ),
    "nan": (
        "is NaN: it encodes as null and merges with None; map it to an explicit key first, "
        "e.g. None or the string 'nan'"
    ),
    "inf": (
        "is an infinite float: it encodes as null and merges with None; map it to an "
        "explicit key first, e.g. the string 'inf'"
    ),
}


# Types whose JSON is stable whatever their value: the common keys skip every other check.
_STABLE_TYPES = frozenset({str, int, bool, bytes, type(None)})


def _unstable(key: Any, *, dicts: bool = False) -> tuple[str, Any] | None:
    """(reason, offending part) for the first part of ``key`` without stable bytes, or None;
    ``dicts``: a dict is taken as its bytes are (insertion order included)."""
    kind = type(key)
    if kind in _STABLE_TYPES:
        return None
    if kind is tuple or kind is list:
        for item in key:
            if type(item) not in _STABLE_TYPES:
                found = _unstable(item, dicts=dicts)
                if found is not None:
                    return found
        return None
    if isinstance(key, float):
        if math.isnan(key):
            return "nan", key
        return ("inf", key) if math.isinf(key) else None
    if isinstance(key, dict):
        if not dicts:
            return "dict", key
        for item in key.values():
            found = _unstable(item, dicts=True)
            if found is not None:
                return found
        return None
    if isinstance(key, set | frozenset):
        return "set", key
    if isinstance(key, list | tuple):  # subclasses (named tuples, KV)
        for item in key:
            found = _unstable(item, dicts=dicts)
            if found is not None:
                return found
    return None


def _describe(key: Any) -> str:
    return f"{key!r:.120}"


def check_partition_key(key: Any, op_id: str) -> None:
    """Raise :class:`~samza_nb.errors.SerdeError` naming the operator and the key when ``key``
    has no stable bytes (a dict, a set, NaN or infinity, also inside a list or tuple)."""
    found = _unstable(key)
    if found is not None:
        _refuse(key, f"operator {op_id!r}", *found)


def check_table_key(key: Any, table_id: str) -> None:
    """Like :func:`check_partition_key` for a table's key, except that a dict is taken as its
    JSON bytes are: a compacted topic's JSON object keys (Kafka Connect, Debezium) keep their
    order from record to record, and a lookup matches an entry only with the same key order."""
    check_written_key(key, f"table {table_id!r}")


def check_written_key(key: Any, where: str) -> None:
    """:func:`check_table_key`'s rule for the key of a message a user writes (``where`` names
    the write, e.g. ``"write to stream 'clicks'"``): it places the message and may be a
    table's key, so a dict goes as its JSON bytes are, and a set, NaN or infinity is refused."""
    if type(key) in _STABLE_TYPES:
        return
    found = _unstable(key, dicts=True)
    if found is not None:
        _refuse(key, where, *found)


def _refuse(key: Any, where: str, reason: str, part: Any) -> NoReturn:
    subject = f"key {_describe(key)}"
    if part is not key:
        subject += f" holds {_describe(part)}, which"
    msg = f"{where}: {subject} {_INSTEAD[reason]}"
    raise SerdeError(msg)


def encode_partition_key(key: Any, op_id: str) -> bytes:
    """The stable bytes of a partition_by or window key (JSON, as the runtime always wrote).

    Raises :class:`~samza_nb.errors.SerdeError` naming ``op_id`` and the key when the key has
    no stable bytes (see the module docs) or is not JSON-encodable at all.
    """
    # The hot path: one call per message of a partition_by or window; common keys are cheap.
    if type(key) not in _STABLE_TYPES:
        found = _unstable(key)
        if found is not None:
            _refuse(key, f"operator {op_id!r}", *found)
    try:
        return _encode(key)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as error:
        msg = (
            f"operator {op_id!r}: key {_describe(key)} of type {type(key).__name__} cannot be "
            f"encoded as JSON ({error}); use str, int, float, bool, None or a tuple of them"
        )
        raise SerdeError(msg) from error
