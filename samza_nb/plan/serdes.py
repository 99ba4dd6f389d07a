"""Serdes: how messages become bytes on streams, in stores and on changelogs.

A serde is any object with ``to_bytes(value) -> bytes`` and ``from_bytes(data) -> value``.
Built-ins: :func:`json`, :func:`string`, :func:`bytes_` and :func:`kv` (a pair of serdes, one
for keys and one for values). The strings ``"json"``, ``"string"`` and ``"bytes"`` are accepted
wherever a serde is. Nothing is ever pickled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import msgspec

from samza_nb.errors import PlanError, SerdeError

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


@runtime_checkable
class Serde(Protocol):
    """The two-method interface every serde implements."""

    def to_bytes(self, value: Any) -> bytes: ...

    def from_bytes(self, data: bytes) -> Any: ...


_json_encoder = msgspec.json.Encoder()
_json_decoder = msgspec.json.Decoder()


@dataclass(frozen=True)
class JsonSerde:
    """JSON (UTF-8). Tuples come back as lists, as with any JSON."""

    name: str = "json"

    def to_bytes(self, value: Any) -> bytes:
        try:
            return _json_encoder.encode(value)
        except (TypeError, msgspec.EncodeError) as error:
            msg = f"json serde cannot encode {type(value).__name__} value {value!r:.80}: {error}"
            raise SerdeError(msg) from error

    def from_bytes(self, data: bytes) -> Any:
        try:
            return _json_decoder.decode(data)
        except msgspec.DecodeError as error:
            msg = f"json serde cannot decode {bytes(data)[:60]!r}: {error}"
            raise SerdeError(msg) from error


@dataclass(frozen=True)
class StringSerde:
    """UTF-8 text."""

    name: str = "string"
    encoding: str = "utf-8"

    def to_bytes(self, value: Any) -> bytes:
        if not isinstance(value, str):
            msg = f"string serde expects str, got {type(value).__name__} {value!r:.80}"
            raise SerdeError(msg)
        return value.encode(self.encoding)

    def from_bytes(self, data: bytes) -> Any:
        try:
            return bytes(data).decode(self.encoding)
        except UnicodeDecodeError as error:
            msg = f"string serde cannot decode {bytes(data)[:60]!r} as {self.encoding}"
            raise SerdeError(msg) from error


@dataclass(frozen=True)
class BytesSerde:
    """Raw bytes, passed through."""

    name: str = "bytes"

    def to_bytes(self, value: Any) -> bytes:
        if not isinstance(value, bytes | bytearray | memoryview):
            msg = f"bytes serde expects bytes, got {type(value).__name__} {value!r:.80}"
            raise SerdeError(msg)
        return bytes(value)

    def from_bytes(self, data: bytes) -> Any:
        return bytes(data)


@dataclass(frozen=True)
class KVSerde:
    """A key serde and a value serde: messages are written as (key bytes, value bytes)."""

    key_serde: Serde
    value_serde: Serde

    @property
    def name(self) -> str:
        return f"kv({_name(self.key_serde)}, {_name(self.value_serde)})"


def json() -> JsonSerde:
    """The JSON serde (fast: msgspec)."""
    return JsonSerde()


def string(encoding: str = "utf-8") -> StringSerde:
    """The UTF-8 string serde."""
    return StringSerde(encoding=encoding)


def bytes_() -> BytesSerde:
    """The raw-bytes serde."""
    return BytesSerde()


def kv(key_serde: Serde | str | None = None, value_serde: Serde | str | None = None) -> KVSerde:
    """A key-value serde; both default to JSON."""
    return KVSerde(resolve_serde(key_serde or "json"), resolve_serde(value_serde or "json"))


_SHORTHANDS: dict[str, Callable[[], Serde]] = {"json": json, "string": string, "bytes": bytes_}


def resolve_serde(serde: Any, *, where: str = "") -> Serde:
    """Turn a shorthand string or serde object into a serde, or raise PlanError naming ``where``."""
    place = f" for {where}" if where else ""
    if isinstance(serde, str):
        factory = _SHORTHANDS.get(serde)
        if factory is None:
            msg = f"unknown serde {serde!r}{place}; use one of {sorted(_SHORTHANDS)} or a serde object"
            raise PlanError(msg)
        return factory()
    if isinstance(serde, KVSerde):
        return serde  # type: ignore[return-value]
    if isinstance(serde, Serde):
        return serde
    msg = (
        f"{serde!r} is not a serde{place}: it needs to_bytes(value) and from_bytes(data) methods, "
        f"or use one of {sorted(_SHORTHANDS)}"
    )
    raise PlanError(msg)


def resolve_kv_serde(serde: Any, *, where: str = "") -> KVSerde:
    """A KVSerde from ``serde`` (None → kv(json, json)); anything else is a PlanError."""
    if serde is None:
        return kv()
    if isinstance(serde, KVSerde):
        return serde
    msg = f"{where or 'this operator'} needs a KV serde (serdes.kv(key, value)), got {serde!r}"
    raise PlanError(msg)


def _name(serde: Any) -> str:
    return str(getattr(serde, "name", type(serde).__name__))
