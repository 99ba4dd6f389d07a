"""Partition and window keys: the bytes the runtime always wrote, and a clear refusal of keys
whose bytes are not stable (dict, set, NaN and infinity, also nested)."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samza_nb.errors import SerdeError
from samza_nb.model.keys import check_partition_key, encode_partition_key
from samza_nb.plan import serdes
from samza_nb.plan.kv import KV


def _today(key: Any) -> bytes:
    """What the runtime wrote before this module (runtime/task/operators.py ``_json_key`` and the
    default JSON key serde of partition_by): plain msgspec JSON."""
    return msgspec.json.encode(key)


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.binary(max_size=10),
)
_KEYS = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.lists(children, max_size=4).map(tuple)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(_KEYS)
def test_accepted_keys_keep_the_bytes_the_runtime_wrote(key: Any) -> None:
    assert encode_partition_key(key, "by-key") == _today(key)
    assert encode_partition_key(key, "by-key") == serdes.json().to_bytes(key)


def _rebuilt(key: Any) -> Any:
    """An equal key made of fresh objects."""
    if isinstance(key, bool) or key is None:
        return key
    if isinstance(key, int):
        return int(str(key))
    if isinstance(key, float):
        return float(repr(key))
    if isinstance(key, str):
        return "".join(list(key))
    if isinstance(key, bytes):
        return bytes(bytearray(key))
    if isinstance(key, list):
        return [_rebuilt(item) for item in key]
    return tuple(_rebuilt(item) for item in key)


@settings(max_examples=300, deadline=None)
@given(_KEYS)
def test_equal_keys_give_equal_bytes(key: Any) -> None:
    copy = _rebuilt(key)
    assert copy == key
    assert encode_partition_key(copy, "by-key") == encode_partition_key(key, "by-key")


_DICTS = st.dictionaries(st.text(max_size=5), _SCALARS, min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(_DICTS, st.lists(_KEYS, max_size=2), st.booleans())
def test_dict_keys_are_refused_even_nested(key: dict[str, Any], around: list[Any], as_tuple: bool) -> None:
    reordered = dict(reversed(list(key.items())))
    # The defect: equal dicts, different bytes (so 50 + 50 instead of 100).
    if len(key) > 1:
        assert reordered == key and _today(reordered) != _today(key)
    nested: Any = [*around, key]
    if as_tuple:
        nested = tuple(nested)
    for wrapped in (key, nested):
        with pytest.raises(SerdeError) as refused:
            encode_partition_key(wrapped, "by-user")
        message = str(refused.value)
        assert message.startswith("operator 'by-user': key ")
        assert "is a dict" in message and "tuple(sorted(d.items()))" in message


@settings(max_examples=200, deadline=None)
@given(st.frozensets(_SCALARS, min_size=1, max_size=5), st.booleans())
def test_set_keys_are_refused_even_nested(key: frozenset[Any], mutable: bool) -> None:
    value: Any = set(key) if mutable else key
    for wrapped in (value, ("x", value), [1, [value]]):
        with pytest.raises(SerdeError, match=r"operator 'by-tags': .*is a set.*tuple\(sorted\(s\)\)"):
            encode_partition_key(wrapped, "by-tags")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("wrap", [lambda k: k, lambda k: (1, k), lambda k: [["a", k]]])
def test_nan_and_infinite_keys_are_refused_even_nested(bad: float, wrap: Any) -> None:
    key = wrap(bad)
    # The defect: they encode as null, merged with None.
    assert _today(key) == _today(wrap(None))
    with pytest.raises(SerdeError, match=r"operator 'by-score': key .*merges with None"):
        encode_partition_key(key, "by-score")
    with pytest.raises(SerdeError):
        check_partition_key(key, "by-score")


def test_a_key_that_is_not_json_names_the_operator_and_type() -> None:
    with pytest.raises(SerdeError, match=r"operator 'by-obj': key .* of type object cannot be encoded"):
        encode_partition_key(object(), "by-obj")


def test_check_partition_key_accepts_what_encode_accepts() -> None:
    check_partition_key(("a", 1, 2.5, None, [True, b"x"]), "by-key")


def test_tuple_subclasses_are_checked_like_tuples() -> None:
    assert encode_partition_key(KV("a", 1), "by-kv") == _today(KV("a", 1))
    with pytest.raises(SerdeError, match="is a dict"):
        encode_partition_key(KV("a", {"x": 1}), "by-kv")
