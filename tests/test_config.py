"""Config values are checked when they are set, against the kind of their key's default."""

from __future__ import annotations

import pytest

from samza_nb.config import KNOWN_KEYS, Config
from samza_nb.errors import ConfigError


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("task.max.epoch.messages", "abc", "expected an integer"),
        ("job.drain-monitor.enabled", "maybe", "expected true or false"),
        ("task.watermark.quorum.size.percentage", "half", "expected a number"),
    ],
)
def test_a_value_of_the_wrong_kind_names_the_key(key: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=f"config {key}='{value}': {expected}"):
        Config({key: value})
    with pytest.raises(ConfigError, match=expected):
        Config().with_overrides({key: value})


def test_values_of_the_right_kind_and_free_text_pass() -> None:
    config = Config(
        {
            "task.max.epoch.messages": " 500 ",
            "job.drain-monitor.enabled": "yes",
            "task.watermark.quorum.size.percentage": "0.75",
            "spark.master": "spark://127.0.0.1:7077",
        }
    )
    assert config.get_int("task.max.epoch.messages") == 500
    assert config.get_bool("job.drain-monitor.enabled") is True
    assert config.get_float("task.watermark.quorum.size.percentage") == 0.75


def test_every_default_is_of_its_own_kind() -> None:
    for key in KNOWN_KEYS.values():
        if key.default is not None:
            key.check(key.default)
