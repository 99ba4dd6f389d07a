"""Config values are checked when they are set, against the kind of their key's default."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from samza_nb.config import KNOWN_KEYS, Config, properties_config
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


# -- ranges -----------------------------------------------------------------------------------

_NUMERIC = sorted(key.name for key in KNOWN_KEYS.values() if key.kind in ("int", "float"))


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("task.max.epoch.messages", "0", "an integer from 1 to 2147483647"),
        ("task.max.epoch.messages", "-5", "an integer from 1 to 2147483647"),
        ("job.container.count", "0", "an integer from 1 to 1024"),
        ("job.elasticity.factor", "0", "an integer from 1 to 2147483647"),
        ("job.intermediate.stream.partitions", "0", "an integer from 1 to 2147483647"),
        ("job.intermediate.stream.partitions", "many", "an integer from 1 to 2147483647"),
        ("task.window.ms", "0", "an integer from 1 to 3153600000000"),
        ("task.epoch.min.interval.ms", "-1", "an integer from 0 to 3153600000000"),
        ("task.watermark.idle.timeout.ms", "-2", "an integer from -1 to 3153600000000"),
        ("task.max.epoch.messages", "99999999999999999999", "an integer from 1 to 2147483647"),
        ("task.window.ms", "3153600000001", "an integer from 1 to 3153600000000"),
        ("task.watermark.quorum.size.percentage", "1.5", "a number from 0 to 1"),
        ("task.watermark.quorum.size.percentage", "nan", "a number from 0 to 1"),
        ("task.watermark.quorum.size.percentage", "-inf", "a number from 0 to 1"),
    ],
)
def test_a_value_out_of_range_is_one_line_naming_key_value_and_range(
    key: str, value: str, allowed: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        Config({key: value})
    message = str(raised.value)
    assert message.startswith(f"config {key}='{value}': expected {allowed} (")
    assert "\n" not in message
    with pytest.raises(ConfigError, match=allowed):
        Config().with_overrides({key: value})
    with pytest.raises(ConfigError, match=allowed):
        Config.from_properties(f"{key}={value}\n")


def test_every_numeric_key_has_a_range() -> None:
    for name in _NUMERIC:
        low, high = KNOWN_KEYS[name].bounds
        assert low is not None and high is not None, name
    assert "task.window.ms" in _NUMERIC and "job.intermediate.stream.partitions" in _NUMERIC


def test_a_thirty_day_window_fits() -> None:
    thirty_days = 30 * 24 * 3600 * 1000
    assert Config({"task.window.ms": thirty_days}).get_int("task.window.ms") == thirty_days


def test_ids_are_text() -> None:
    assert Config({"job.id": "prod-eu", "app.id": "blue"}).get_str("job.id") == "prod-eu"


@settings(max_examples=300, deadline=None)
@example({"azure.storage.retry.attempts": "0\x1f"})  # a blank str.isspace() takes, int() not
@given(
    st.dictionaries(
        st.one_of(st.sampled_from(sorted(KNOWN_KEYS)), st.text(max_size=30)),
        st.one_of(st.text(max_size=30), st.integers().map(str), st.floats().map(str)),
        max_size=6,
    )
)
def test_any_config_is_accepted_in_range_or_refused_with_a_config_error(
    entries: dict[str, str],
) -> None:
    try:
        config = Config(entries)
    except ConfigError as error:
        assert "\n" not in str(error)
        return
    for name in _NUMERIC:
        key = KNOWN_KEYS[name]
        if name not in config:
            continue
        value = config.get_int(name) if key.kind == "int" else config.get_float(name)
        low, high = key.bounds
        assert low is not None and high is not None and low <= value <= high


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_properties_text_parses_or_is_a_config_error(text: str) -> None:
    try:
        Config.from_properties(text + "\n=")
    except ConfigError:
        pass
    try:  # the text itself, never read as a file name
        properties_config(text)
    except ConfigError:
        pass


def test_one_line_of_properties_text_is_a_setting_and_a_bare_name_a_file(tmp_path: Path) -> None:
    assert Config.from_properties("job.container.count 2").get_int("job.container.count") == 2
    assert Config.from_properties("job.container.count: 3").get_int("job.container.count") == 3
    with pytest.raises(ConfigError, match="cannot read config file 'missing.properties'"):
        Config.from_properties("missing.properties")
    named = tmp_path / "job count.properties"  # a file whose name has a blank: still a file
    named.write_text("job.container.count=4\n")
    assert Config.from_properties(str(named)).get_int("job.container.count") == 4


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_NUMERIC), st.integers(min_value=-(2**70), max_value=2**70))
def test_numeric_keys_accept_exactly_their_range(name: str, number: int) -> None:
    low, high = KNOWN_KEYS[name].bounds
    assert low is not None and high is not None
    inside = low <= number <= high
    if inside:
        assert Config({name: str(number)})[name] == str(number)
    else:
        with pytest.raises(ConfigError, match=f"config {name}="):
            Config({name: str(number)})


def test_properties_errors_name_the_first_line_of_their_entry() -> None:
    from samza_nb.config import parse_properties, properties_config

    text = "# a job\ntask.max.epoch.messages=5\njob.contaner.count=\\\n    2\n"
    with pytest.raises(ConfigError, match=r"^job\.properties:3: unknown config key 'job\.contaner\.count'"):
        properties_config(text, source="job.properties")
    with pytest.raises(ConfigError, match=r"^job\.properties:2: expected 'key=value', got 'noseparator'"):
        properties_config("task.max.epoch.messages=1\nno\\\nseparator\n", source="job.properties")
    with pytest.raises(ConfigError, match=r"^cell:3: config task\.max\.epoch\.messages="):
        properties_config("\ntask.max.epoch.messages=-1", source="cell", first_line=2)
    # A continuation on the last line continues nothing: the entry is kept.
    assert parse_properties("a=1\nb = 2\\") == {"a": "1", "b": "2"}


def test_a_family_key_that_is_a_near_miss_of_a_known_key_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"unknown config key 'processor.location'; did you mean 'processor.locations'\?"):
        Config({"processor.location": "host-a"})
    with pytest.raises(ConfigError, match=r"did you mean 'spark.master'\?"):
        Config({"spark.mastr": "local[2]"})
    # A location-id provider's own key and Spark's keys stay accepted.
    config = Config({"processor.slot": "slice-3", "spark.executor.memory": "2g", "spark.app.id": "x"})
    assert config["processor.slot"] == "slice-3"


def test_a_json_config_takes_one_object_of_settings_and_names_only_its_source_when_wrong() -> None:
    from samza_nb.config import json_config

    config = json_config('{"job.container.count": 2, "task.errors.skip": true, "app.name": "a"}', source="s.json")
    assert config["job.container.count"] == "2" and config["task.errors.skip"] == "true"
    with pytest.raises(ConfigError, match=r"^s.json: not JSON") as raised:
        json_config('{"azure.storage.connect": "AccountKey=never-shown', source="s.json")
    assert "never-shown" not in str(raised.value)
    with pytest.raises(ConfigError, match="expected one JSON object of settings"):
        json_config('["job.container.count", 2]', source="s.json")
