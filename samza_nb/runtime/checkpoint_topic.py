"""Samza's Kafka checkpoint topic: its name, its records, and reading it once per process.

**Name** (Samza's ``KafkaUtil.getCheckpointTopic``): ``__samza_checkpoint_ver_1_for_<job
name>_<job id>``, with every underscore of the job name and id replaced by a dash (so the name
splits unambiguously at the last underscore). Characters Kafka refuses in a topic name become
dashes as well (Samza would fail to create such a topic).

**Key** (Samza's ``KafkaCheckpointLogKeySerde``): compact JSON, in this field order,
``{"systemstreampartition-grouper-factory": <grouper class>, "taskName": <task>, "type":
"checkpoint"}``; the grouper class is Samza's name of ``job.systemstreampartition.grouper.factory``
(``org.apache.samza.container.grouper.stream.GroupByPartitionFactory`` by default).

**Value** (Samza's ``CheckpointV1Serde``): a JSON object with one entry per system stream
partition, keyed by the SSP's ``toString`` (``SystemStreamPartition [<system>, <stream>,
<partition>]``) and holding strings ``system``, ``stream``, ``partition``, ``keyBucket`` (``-1``)
and ``offset``. As in Samza, ``offset`` is the offset of the last message processed (a restart
reads from the one after it), null when nothing was processed yet; the task's input partitions
and its stores' changelog partitions are there. samza_nb's own task state — the number of
committed epochs, the control state (end-of-stream, watermarks, drain, operator state) and the
readers' dedup state — rides in one more entry of the same shape: system ``samza-nb``, stream
``__samza_nb_task_state``, partition ``0``, its JSON as the ``offset`` string. Samza's reader
decodes every record (it sees that entry as one more SSP).

**Reading**: :func:`read_topic_checkpoints` keeps, per process, the newest checkpoint of every
task and the offset it read to; each call reads only the records appended since (a status
call, a standby's step or a new producer costs the new records, not the topic's history). The
topic is read afresh when a job starts (another process may have deleted and made it again:
``samza-nb reset``), when this process deleted it or its end moved below that offset, and
before a task's epoch is taken as committed by another attempt.

**Before this format** samza_nb kept the job name's underscores in the topic name and wrote keys
``{"taskName", "type"}`` with values ``{"seq", "offsets", "control"}``. Such records are still
read; a job whose checkpoints sit only under the old topic name carries them over into the new
topic once, when its checkpoint store is opened (:func:`carry_over_legacy_topic`), so it goes on
where it stopped instead of starting from scratch.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from samza_nb.errors import CheckpointError
from samza_nb.runtime.checkpoints import Checkpoint
from samza_nb.systems.base import MessageKind, Record

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan
    from samza_nb.systems.kafka import KafkaSystem

__all__ = [
    "CheckpointRecords",
    "TopicTail",
    "carry_over_legacy_topic",
    "checkpoint_topic",
    "decode_checkpoint",
    "legacy_checkpoint_topic",
    "read_topic_checkpoints",
    "topic_tail",
]

_log = logging.getLogger(__name__)

#: Samza's names of samza_nb's SSP groupers (``job.systemstreampartition.grouper.factory``).
SAMZA_GROUPER_FACTORIES = {
    "group-by-partition": "org.apache.samza.container.grouper.stream.GroupByPartitionFactory",
    "group-by-system-stream-partition":
        "org.apache.samza.container.grouper.stream.GroupBySystemStreamPartitionFactory",
    "all-ssp-to-single-task": "org.apache.samza.container.grouper.stream.AllSspToSingleTaskGrouperFactory",
}
GROUPER_FIELD = "systemstreampartition-grouper-factory"
STATE_SYSTEM = "samza-nb"
STATE_STREAM = "__samza_nb_task_state"
_CHUNK = 10_000


def _topic_safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", text)


def checkpoint_topic(plan: ExecutionPlan) -> str:
    """Samza's checkpoint topic of the job: ``__samza_checkpoint_ver_1_for_<name>_<id>`` with
    underscores of the job name and id replaced by dashes."""
    name = _topic_safe(plan.app_name.replace("_", "-"))
    job_id = _topic_safe(plan.job_id.replace("_", "-"))
    return f"__samza_checkpoint_ver_1_for_{name}_{job_id}"


def legacy_checkpoint_topic(plan: ExecutionPlan) -> str:
    """The topic samza_nb used before it followed Samza's name (underscores kept)."""
    return f"__samza_checkpoint_ver_1_for_{_topic_safe(f'{plan.app_name}_{plan.job_id}')}"


def _ssp_name(system: str, stream: str, partition: str) -> str:
    return f"SystemStreamPartition [{system}, {stream}, {partition}]"


class CheckpointRecords:
    """Samza's checkpoint key and CheckpointV1 value of one job's tasks.

    ``systems``: stream id -> the name of the system it lives in (the SSP's system);
    ``default_system``: for a stream it does not name."""

    def __init__(self, grouper_factory: str, systems: Mapping[str, str], default_system: str):
        self.grouper_factory = grouper_factory
        self.systems = dict(systems)
        self.default_system = default_system

    @classmethod
    def for_plan(cls, plan: ExecutionPlan, default_system: str) -> CheckpointRecords:
        grouper = (plan.config.get_str("job.systemstreampartition.grouper.factory") or "group-by-partition").strip()
        systems = {stream_id: info.system.name for stream_id, info in plan.streams.items()}
        return cls(SAMZA_GROUPER_FACTORIES.get(grouper, grouper), systems, default_system)

    def key(self, task: str) -> bytes:
        # Jackson writes an ImmutableMap in insertion order, without spaces, in UTF-8 with
        # non-ASCII characters unescaped: the same bytes, so compaction keys match Samza's.
        fields = {GROUPER_FIELD: self.grouper_factory, "taskName": task, "type": "checkpoint"}
        return json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode()

    def value(self, checkpoint: Checkpoint) -> bytes:
        entries: dict[str, dict[str, str | None]] = {}
        for ssp, next_offset in sorted(checkpoint.offsets.items()):
            stream, _, number = ssp.rpartition("#")
            partition = str(int(number))
            system = self.systems.get(stream, self.default_system)
            entries[_ssp_name(system, stream, partition)] = {
                "system": system,
                "stream": stream,
                "partition": partition,
                "keyBucket": "-1",
                "offset": str(int(next_offset) - 1) if int(next_offset) > 0 else None,
            }
        state = json.dumps({"seq": checkpoint.seq, "control": checkpoint.control}, sort_keys=True)
        entries[_ssp_name(STATE_SYSTEM, STATE_STREAM, "0")] = {
            "system": STATE_SYSTEM,
            "stream": STATE_STREAM,
            "partition": "0",
            "keyBucket": "-1",
            "offset": state,
        }
        return json.dumps(entries, separators=(",", ":"), ensure_ascii=False).encode()

    def record(self, task: str, checkpoint: Checkpoint) -> Record:
        return Record(MessageKind.USER, self.key(task), self.value(checkpoint), None)


def decode_checkpoint(key: bytes, value: bytes, *, where: str = "") -> tuple[str, Checkpoint, str | None]:
    """(task, checkpoint, grouper factory) of one record of a checkpoint topic: Samza's
    format, or samza_nb's before it (grouper None). Raises CheckpointError naming ``where``."""
    try:
        fields = json.loads(key)
        task = fields["taskName"]
        if fields.get("type") != "checkpoint" or not isinstance(task, str):
            msg = f"not a checkpoint key: {fields!r}"
            raise ValueError(msg)
        body = json.loads(value)
        if GROUPER_FIELD not in fields:  # samza_nb's records before Samza's format
            return task, Checkpoint.from_json(value), None
        offsets: dict[str, int] = {}
        seq, control = 0, {}
        for entry in body.values():
            if entry["system"] == STATE_SYSTEM and entry["stream"] == STATE_STREAM:
                state = json.loads(entry["offset"])
                seq, control = int(state["seq"]), dict(state.get("control", {}))
                continue
            last = entry.get("offset")
            offsets[f"{entry['stream']}#{int(entry['partition'])}"] = 0 if last is None else int(last) + 1
        return task, Checkpoint(seq, offsets, control), str(fields[GROUPER_FIELD])
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        msg = f"checkpoint record {where} does not decode: {error}"
        raise CheckpointError(msg) from error


@dataclass
class TopicTail:
    """What this process read of one checkpoint topic: the newest checkpoint per task, the
    offset it read to, and how many records it fetched in all."""

    position: int = 0
    checkpoints: dict[str, Checkpoint] = field(default_factory=dict)
    records_read: int = 0
    deletions: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    warned_groupers: set[str] = field(default_factory=set)
    #: Tasks whose newest checkpoint is a record of samza_nb's format before Samza's.
    legacy: set[str] = field(default_factory=set)

    def take(self, task: str, checkpoint: Checkpoint, *, legacy: bool = False) -> None:
        # Highest seq wins: on a broker that shows aborted records a replayed epoch's record
        # repeats, never regresses.
        known = self.checkpoints.get(task)
        if known is None or checkpoint.seq >= known.seq:
            self.checkpoints[task] = checkpoint
            if legacy:
                self.legacy.add(task)
            else:
                self.legacy.discard(task)


_TAILS: dict[tuple[str, str], TopicTail] = {}
_TAILS_LOCK = threading.Lock()


def topic_tail(system: KafkaSystem, topic: str) -> TopicTail:
    """This process's tail of ``topic`` on ``system``'s cluster."""
    key = (system.settings.fingerprint(), topic)
    with _TAILS_LOCK:
        tail = _TAILS.get(key)
        if tail is None:
            tail = _TAILS[key] = TopicTail()
        return tail


def read_topic_checkpoints(
    system: KafkaSystem, topic: str, *, grouper_factory: str | None = None, afresh: bool = False
) -> dict[str, Checkpoint]:
    """The newest checkpoint of every task in the checkpoint topic; reads only what was
    appended since this process last read it, or, ``afresh``, the whole topic again (a job's
    start: another process may have deleted and made it again since). ``grouper_factory``:
    the job's (Samza's class name); records of another grouper are used, with one warning (as
    Samza does when it does not validate checkpoints)."""
    tail = topic_tail(system, topic)
    with tail.lock:
        if afresh:
            system.forget_cached_offsets(topic)
            tail.position, tail.checkpoints = 0, {}
            tail.legacy.clear()
        deletions = system.deletions(topic)
        if system.partition_count(topic) is None:
            tail.position, tail.checkpoints, tail.deletions = 0, {}, deletions
            return {}
        newest = system.newest_offsets(topic).get(0, 0)
        if newest < tail.position or deletions != tail.deletions:  # made again since
            tail.position, tail.checkpoints, tail.deletions = 0, {}, deletions
            tail.legacy.clear()
        offset = max(tail.position, system.oldest_offsets(topic).get(0, 0)) if tail.position < newest else tail.position
        while offset < newest:
            fetched = system.fetch(topic, 0, offset, newest, _CHUNK)
            for first, records in fetched.batches:
                tail.records_read += len(records)
                for index, (kind, key, value, _ts) in enumerate(records):
                    if kind != MessageKind.USER or key is None or value is None:
                        continue
                    task, checkpoint, grouper = decode_checkpoint(key, value, where=f"{topic}[0]@{first + index}")
                    if grouper is not None and grouper_factory is not None and grouper != grouper_factory:
                        if grouper not in tail.warned_groupers:
                            tail.warned_groupers.add(grouper)
                            _log.warning(
                                "checkpoint topic %s holds checkpoints of grouper %s; the job's is %s",
                                topic, grouper, grouper_factory,
                            )
                    tail.take(task, checkpoint, legacy=grouper is None)
            if fetched.next_offset <= offset:
                break
            offset = fetched.next_offset
        tail.position = max(tail.position, offset)
        return dict(tail.checkpoints)


def carry_over_legacy_topic(plan: ExecutionPlan, system: KafkaSystem, records: CheckpointRecords) -> int:
    """Copy the checkpoints of the job's topic under samza_nb's old name into the topic of
    Samza's name, once: when the old topic exists and the new one holds no checkpoint yet.
    Returns how many task checkpoints were carried over (the old topic is left for the user to
    delete; ``samza-nb reset`` deletes both)."""
    topic, legacy = checkpoint_topic(plan), legacy_checkpoint_topic(plan)
    # Read afresh at the job's start: a topic deleted and made again by another process since
    # this one last read it (``samza-nb reset``) must not pass for the old one.
    current = read_topic_checkpoints(system, topic, afresh=True)
    if legacy == topic:
        return _rewrite_legacy_records(system, topic, records)
    if current or system.partition_count(legacy) is None:
        return 0
    old = read_topic_checkpoints(system, legacy)
    if not old:
        return 0
    system.append(topic, 0, [records.record(task, checkpoint) for task, checkpoint in sorted(old.items())])
    _log.warning(
        "carried the checkpoints of %d tasks over from %s (samza_nb's old name) into %s "
        "(Samza's name); the old topic is no longer read and can be deleted",
        len(old), legacy, topic,
    )
    return len(old)


def _rewrite_legacy_records(system: KafkaSystem, topic: str, records: CheckpointRecords) -> int:
    """Where the old and the new name are one topic (no underscore in the job name or id):
    write each task's newest checkpoint that is still a record of the old format again in
    Samza's format, and a tombstone for its old key, so compaction leaves only Samza's
    records. Returns how many tasks' checkpoints were rewritten."""
    checkpoints = read_topic_checkpoints(system, topic)
    tail = topic_tail(system, topic)
    with tail.lock:
        tasks = sorted(tail.legacy)
    if not tasks:
        return 0
    rewritten = [records.record(task, checkpoints[task]) for task in tasks]
    # A Kafka tombstone is a record without a value (Record types its value as bytes; Kafka
    # reads hand tombstones over with None, as here).
    tombstones = [Record(MessageKind.USER, _legacy_key(task), None, None) for task in tasks]  # type: ignore[arg-type]
    system.append(topic, 0, rewritten + tombstones)
    _log.info("rewrote the checkpoints of %d tasks in %s in Samza's record format", len(tasks), topic)
    return len(tasks)


def _legacy_key(task: str) -> bytes:
    return json.dumps({"taskName": task, "type": "checkpoint"}, sort_keys=True).encode()
