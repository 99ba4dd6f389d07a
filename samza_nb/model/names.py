"""Ordering of task names, processor ids and other identifiers.

Samza orders task names with Java's ``String.compareTo``: lexicographic by UTF-16 code unit, so
``"Partition 10"`` sorts before ``"Partition 2"`` and ``"testTasKId1"`` before ``"testTaskId2"``.
Python compares code points, which agrees with Java except when a character outside the Basic
Multilingual Plane meets one in U+E000–U+FFFF. :func:`java_sorted` gives Java's order exactly and
stays as fast as :func:`sorted` for the usual ASCII names.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["java_sort_key", "java_sorted"]


def java_sort_key(name: str) -> bytes:
    """A key that orders strings as Java's ``String.compareTo`` does.

    Big-endian UTF-16 bytes compare exactly as UTF-16 code units do.

    >>> sorted(["\\U0001F600", "\\uFF01"], key=java_sort_key) == ["\\U0001F600", "\\uFF01"]
    True
    """
    return name.encode("utf-16-be", "surrogatepass")


def java_sorted(names: Iterable[str]) -> list[str]:
    """``names`` sorted as Java sorts strings.

    >>> java_sorted(["Partition 2", "Partition 10", "Partition 1"])
    ['Partition 1', 'Partition 10', 'Partition 2']
    """
    items = list(names)
    # str.isascii() is O(1) in CPython; ASCII strings order identically in both languages.
    if all(item.isascii() for item in items):
        items.sort()
    else:
        items.sort(key=java_sort_key)
    return items
