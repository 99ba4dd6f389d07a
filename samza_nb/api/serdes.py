"""Serdes for streams, tables and intermediate streams (re-exported from samza_nb.plan.serdes).

A serde is any object with ``to_bytes(value) -> bytes`` and ``from_bytes(data) -> value``; the
strings ``"json"``, ``"string"`` and ``"bytes"`` are accepted wherever a serde is.

>>> from samza_nb.api import serdes
>>> serdes.kv(serdes.string(), serdes.json()).name
'kv(string, json)'
"""

from samza_nb.plan.serdes import (
    BytesSerde,
    JsonSerde,
    KVSerde,
    Serde,
    StringSerde,
    bytes_,
    json,
    kv,
    resolve_kv_serde,
    resolve_serde,
    string,
)

__all__ = [
    "BytesSerde",
    "JsonSerde",
    "KVSerde",
    "Serde",
    "StringSerde",
    "bytes_",
    "json",
    "kv",
    "resolve_kv_serde",
    "resolve_serde",
    "string",
]
