"""The configuration keys samza_nb knows: name, default, meaning and allowed values.

:data:`KNOWN_KEYS` is the registry docs/configuration.md documents (a test compares the two);
templated families (``streams.<id>.samza.system`` …) take keys of other tools too, except near
misses of known ones. :class:`~samza_nb.config.Config` checks every key it is given here.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass

from samza_nb.errors import ConfigError
from samza_nb.secrecy import looks_like_a_value, mask_value

__all__ = ["FALSE_WORDS", "KNOWN_KEYS", "TRUE_WORDS", "ConfigKey", "check_key"]


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
            ok = value.strip().lower() in (*TRUE_WORDS, *FALSE_WORDS)
        elif kind == "int":
            ok = _INTEGER.fullmatch(value) is not None and self._in_range(int(value))
        elif kind == "float":
            number = _finite_float(value)
            ok = number is not None and self._in_range(number)
        else:
            ok = True
        if not ok:
            shown = mask_value(self.name, value)
            allowed = _BOOL_WORDS if self.kind == "bool" else self.allowed
            msg = f"config {self.name}={shown!r}: expected {allowed} ({self.doc})"
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


TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off", "")
_EXPECTED = {"bool": "true or false", "int": "an integer", "float": "a number"}
_BOOL_WORDS = "true or false (yes/no, on/off and 1/0 are read too)"
_INT_MAX = 2**31 - 1  # Java's Integer.MAX_VALUE: Samza reads counts as ints.
#: An integer setting: ASCII digits and blanks only (int() refuses other characters that
#: str.isspace() takes, such as "\x1f", and reads other digits, such as "\u0663").
_INTEGER = re.compile(r"[ \t\n\r\f\v]*-?[0-9]+[ \t\n\r\f\v]*")
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
        maximum=1024,
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
        "job.shuffle.combine.enabled",
        "true",
        "Fold before a shuffle for a window with merge= that alone reads it (docs/api.md).",
    ),
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
        "How often the ZooKeeper leader reads the inputs' partition counts from their system; a change regenerates the job model with the new partitions' tasks (jobs without durable stores).",
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
        "Processor ids of this process (a comma list for the embedded coordinator); when unset 0..N-1 (embedded), or <hostname>-<pid> for a ZooKeeper or Azure processor process.",
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


def check_key(key: str) -> None:
    """Refuse an unknown key (ConfigError), with the known key it may mean."""
    if key in KNOWN_KEYS:
        return
    if looks_like_a_value(key):
        msg = (
            f"unknown config key of {len(key)} characters, not shown: it looks like a value, "
            "maybe a secret (a value continued on the next line needs a backslash at the end "
            "of its first line)"
        )
        raise ConfigError(msg)
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
