"""Where a task starts reading an input partition: Samza's offset policy.

Samza's keys, most specific first:

- ``streams.<id>.samza.offset.default`` / ``systems.<system>.default.stream.samza.offset.default``
  (and the older ``systems.<system>.samza.offset.default``): ``oldest`` (default) or
  ``upcoming`` — where a partition without a checkpoint starts;
- ``streams.<id>.samza.reset.offset`` / ``systems.<system>.default.stream.samza.reset.offset``:
  ``true`` ignores the checkpointed offset of the stream's partitions and starts from the
  default again. As in Samza it applies when a processor process starts: the first epoch of a
  task in this process starts from the default;
- an input deleted and made again since a task committed on it (a system that can tell: the
  embedded log; each checkpoint records the incarnations of its inputs) is read from the
  offset default, as a partition without a checkpoint, with a warning; one the task had read
  to its end raises :class:`CheckpointError` (its end of stream would stand for the new one);
- a checkpointed offset outside the partition's stored range (deleted by retention, or a
  recreated topic) follows ``systems.<system>.consumer.auto.offset.reset`` (``smallest`` /
  ``earliest``, ``largest`` / ``latest``, or ``none`` / ``error``: a :class:`CheckpointError`
  naming the topic, partition, offset and range); unset, it follows the offset default. The
  reset is logged with the topic, partition and both offsets.

Only inputs follow the policy: intermediate streams and side inputs start where their checkpoint
says (or at their oldest offset). Offsets are compared, never subtracted (Kafka's have gaps).

A stream made again behind the job (a broker that came back empty, a topic deleted and
created): a checkpointed offset past the stream's newest one. Looked at once per process for
every stream a task reads: an input follows ``auto.offset.reset`` as above; an intermediate
stream or side input is read from its start (what the job wrote to it since is all there is,
as in Samza, whose intermediate streams start at ``oldest``). Each such stream gets one warning
(:meth:`OffsetPolicy.report`) naming its partitions, the checkpointed offsets and the new ends;
changelogs are looked at by the epoch driver and their stores by runtime/task/stores.py.

Within a run, a read can find that retention deleted what it was about to read (a Kafka
topic's ``retention.ms`` overtaking a lagging job, ``delete_before`` on an input):
:func:`after_deletion` applies the same ``auto.offset.reset`` rule there, and the task's
epoch result names what was lost (``Job.metrics()["deleted_unread"]``, and a warning).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from samza_nb.errors import CheckpointError, ConfigError
from samza_nb.runtime.epoch import ssp_key
from samza_nb.runtime.plan_systems import system_of
from samza_nb.systems.base import MessageKind, StreamSystem

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["OffsetPolicy", "after_deletion", "past_end_warning"]

_log = logging.getLogger(__name__)

_OLDEST = frozenset({"oldest", "smallest", "earliest", "beginning"})
_UPCOMING = frozenset({"upcoming", "largest", "latest", "end"})
_FAIL = frozenset({"none", "error"})


class OffsetPolicy:
    """Start offsets of the input partitions of one job, as one processor process sees them."""

    def __init__(self, plan: ExecutionPlan):
        self.plan = plan
        #: Input SSP keys this process already started (reset and range checks happen once).
        self._started: set[str] = set()
        #: Input stream -> its incarnation as last looked at (:meth:`look_at_inputs`).
        self._incarnations: dict[str, str] = {}
        #: Streams found made again behind their checkpoints, not reported yet: stream ->
        #: (what the job reads from now, [(partition, checkpointed offset, newest offset)]).
        self._past_end: dict[str, tuple[str, list[tuple[int, int, int]]]] = {}

    def _system_name(self, stream_id: str) -> str:
        return str(self.plan.streams[stream_id].system.name)

    def _lookup(self, stream_id: str, suffix: str) -> tuple[str, str] | None:
        """The most specific key set for ``stream_id`` and its value."""
        system = self._system_name(stream_id)
        config = self.plan.config
        for key in (
            f"streams.{stream_id}.{suffix}",
            f"systems.{system}.streams.{stream_id}.{suffix}",
            f"systems.{system}.default.stream.{suffix}",
            f"systems.{system}.{suffix}",
        ):
            value = config.get_str(key)
            if value:
                return key, value.strip().lower()
        return None

    def default(self, stream_id: str) -> str:
        """``oldest`` or ``upcoming``: where a partition without a checkpoint starts."""
        found = self._lookup(stream_id, "samza.offset.default")
        if found is None:
            return "oldest"
        key, value = found
        if value not in ("oldest", "upcoming"):
            msg = f"{key}={value!r}: the offset default is 'oldest' or 'upcoming'"
            raise ConfigError(msg)
        return value

    def resets(self, stream_id: str) -> bool:
        found = self._lookup(stream_id, "samza.reset.offset")
        if found is None:
            return False
        key, value = found
        if value not in ("true", "false"):
            msg = f"{key}={value!r}: samza.reset.offset is 'true' or 'false'"
            raise ConfigError(msg)
        return value == "true"

    def out_of_range_rule(self, stream_id: str) -> tuple[str, str]:
        """The key that decides, and ``oldest``, ``upcoming`` or ``fail``: where a read goes on
        when its offset is no longer stored."""
        key = f"systems.{self._system_name(stream_id)}.consumer.auto.offset.reset"
        value = (self.plan.config.get_str(key) or "").strip().lower()
        if not value:
            return "the offset default", self.default(stream_id)
        if value in _OLDEST:
            return key, "oldest"
        if value in _UPCOMING:
            return key, "upcoming"
        if value in _FAIL:
            return key, "fail"
        msg = f"{key}={value!r}: use smallest/earliest, largest/latest or none"
        raise ConfigError(msg)

    def look_at_inputs(self) -> None:
        """Ask each input's system for its incarnation (once per epoch, before :meth:`start`,
        and when a processor looks whether it is idle): a system that can tell
        (:meth:`~samza_nb.systems.base.StreamSystem.incarnation`: the embedded log) gives a
        stream made again a new one."""
        for stream_id, info in self.plan.streams.items():
            if info.kind != "input":
                continue
            now = system_of(self.plan, stream_id).incarnation(stream_id)
            if now is None:  # cannot tell, or deleted and not made again yet
                self._incarnations.pop(stream_id, None)
            else:
                self._incarnations[stream_id] = now

    def incarnation(self, stream_id: str) -> str | None:
        """The input's incarnation as last looked at (None: its system cannot tell)."""
        return self._incarnations.get(stream_id)

    def made_again(self, stream_id: str, recorded: str | None) -> bool:
        """Whether a checkpoint committed on the input's incarnation ``recorded`` is of a
        stream deleted since (both known, and different)."""
        now = self._incarnations.get(stream_id)
        return recorded is not None and now is not None and recorded != now

    def start(
        self,
        stream_id: str,
        partition: int,
        checkpointed: int | None,
        newest: Mapping[str, int],
        *,
        task: str = "",
        recorded: str | None = None,
        ended: bool = False,
    ) -> tuple[int, bool]:
        """The offset an epoch starts at, and whether it differs from the checkpoint (a reset:
        a pending epoch plan made from the checkpoint no longer applies).

        ``recorded``: the incarnation of the input that ``task``'s checkpoint was committed
        on. When the input was deleted and made again since, the checkpoint is of another
        stream: the new one is read from the offset default (oldest: its start), with a
        warning, as a partition without a checkpoint; unless the checkpoint says the old one
        ``ended`` (its end of stream, and what the operators did at it, would stand for the
        new stream's): that raises :class:`CheckpointError`, naming the way to start over."""
        key = ssp_key(stream_id, partition)
        is_input = self.plan.streams[stream_id].kind == "input"
        first = key not in self._started
        self._started.add(key)
        if checkpointed is None:
            return self._policy_offset(stream_id, partition, self.default(stream_id), newest), False
        if is_input and self.made_again(stream_id, recorded) and not (first and self.resets(stream_id)):
            if ended:
                raise CheckpointError(_ended_then_made_again(task, stream_id, partition, self._system_name(stream_id)))
            start = self._policy_offset(stream_id, partition, self.default(stream_id), newest)
            _log.warning(
                "input %s[%d] was deleted and made again since task %r last committed there: it "
                "reads the new stream from offset %d (%s), not from its checkpointed offset %d of "
                "the old one",
                stream_id, partition, task, start, self.default(stream_id), checkpointed,
            )
            return start, True
        if not first:
            return checkpointed, False
        if not is_input:
            return self._within_end(stream_id, partition, checkpointed, newest)
        if self.resets(stream_id):
            start = self._policy_offset(stream_id, partition, self.default(stream_id), newest)
            _log.info(
                "%s[%d]: samza.reset.offset=true: starting at %d instead of the checkpointed %d",
                stream_id, partition, start, checkpointed,
            )
            return start, start != checkpointed
        return self._in_range(stream_id, partition, checkpointed, newest)

    def _end(self, stream_id: str, partition: int, newest: Mapping[str, int]) -> int:
        end = newest.get(ssp_key(stream_id, partition))
        if end is None:
            end = system_of(self.plan, stream_id).newest_offsets(stream_id).get(partition, 0)
        return end

    def _within_end(
        self, stream_id: str, partition: int, checkpointed: int, newest: Mapping[str, int]
    ) -> tuple[int, bool]:
        """An intermediate stream or side input: past its end, it was made again, and is read
        from its start."""
        end = self._end(stream_id, partition, newest)
        if checkpointed <= end:
            return checkpointed, False
        start = system_of(self.plan, stream_id).oldest_offsets(stream_id).get(partition, 0)
        self._note_past_end(stream_id, "its start", partition, checkpointed, end)
        return start, True

    def _note_past_end(self, stream_id: str, reads: str, partition: int, checkpointed: int, end: int) -> None:
        self._past_end.setdefault(stream_id, (reads, []))[1].append((partition, checkpointed, end))

    def report(self) -> None:
        """Log one warning per stream found made again since the last report (:meth:`start`)."""
        found, self._past_end = self._past_end, {}
        for stream_id, (reads, partitions) in sorted(found.items()):
            info = self.plan.streams[stream_id]
            _log.warning(
                "%s",
                past_end_warning(
                    f"{info.kind.replace('_', ' ')} {stream_id} (system {info.system.name!r})",
                    partitions,
                    f"the job reads it from {reads}",
                ),
            )

    def _in_range(
        self, stream_id: str, partition: int, checkpointed: int, newest: Mapping[str, int]
    ) -> tuple[int, bool]:
        system = system_of(self.plan, stream_id)
        oldest = system.oldest_offsets(stream_id).get(partition, 0)
        end = self._end(stream_id, partition, newest)
        if oldest <= checkpointed <= end:
            return checkpointed, False
        where = f"{stream_id}[{partition}]"
        rule_key, rule = self.out_of_range_rule(stream_id)
        if rule == "fail":
            msg = (
                f"input {where} (system {self._system_name(stream_id)!r}): the checkpointed offset "
                f"{checkpointed} is outside the stored offsets {oldest}..{end} (deleted by retention "
                f"or a recreated topic) and {rule_key}=none; set it to smallest or largest, or "
                f"reset the job's offsets"
            )
            raise CheckpointError(msg)
        start = oldest if rule == "oldest" else end
        if checkpointed > end:
            reads = "its start" if rule == "oldest" else "its newest offset"
            self._note_past_end(stream_id, f"{reads} ({rule_key})", partition, checkpointed, end)
            return start, True
        _log.warning(
            "input %s: the checkpointed offset %d is outside the stored offsets %d..%d; "
            "starting at the %s offset %d (%s)",
            where, checkpointed, oldest, end, rule, start, rule_key,
        )
        return start, True

    def _policy_offset(
        self, stream_id: str, partition: int, default: str, newest: Mapping[str, int]
    ) -> int:
        key = ssp_key(stream_id, partition)
        system = system_of(self.plan, stream_id)
        if default == "upcoming" and self.plan.streams[stream_id].kind == "input":
            end = newest[key] if key in newest else system.newest_offsets(stream_id).get(partition, 0)
            return _before_end_of_stream(system, stream_id, partition, end)
        return system.oldest_offsets(stream_id).get(partition, 0)


def past_end_warning(what: str, partitions: list[tuple[int, int, int]], then: str) -> str:
    """The one line that says ``what`` (a stream) was made again behind the job's checkpoints:
    per partition, the checkpointed offset and the newest offset now."""
    where = ", ".join(
        f"partition {partition} checkpointed at {checkpointed}, now ends at {end}"
        for partition, checkpointed, end in sorted(partitions)
    )
    return (
        f"{what} was made again since the job last committed (broker data lost, or the topic "
        f"deleted and created): {where}; {then}"
    )


def _ended_then_made_again(task: str, stream_id: str, partition: int, system: str) -> str:
    return (
        f"task {task!r}: input {stream_id}[{partition}] (system {system!r}) was deleted and made "
        f"again after the job read it to its end: the job's checkpoints and state belong to the "
        f"old stream, and reading on from them would take the new one as ended; start the job "
        f"over with `samza-nb reset MODULE:APP --yes` (reset_job(app.plan()) in Python), or run "
        f"it under a new job id"
    )


def _before_end_of_stream(system: StreamSystem, stream_id: str, partition: int, end: int) -> int:
    """``end``, or the offset of the partition's end-of-stream marker when the stream was ended
    (``EmbeddedSystem.end_stream``: the marker is each partition's last record): a job
    starting at the upcoming messages of a stream that has ended reads the end (and
    finishes) instead of waiting after it for messages that never come. A Kafka topic has no
    end of stream."""
    is_ended = getattr(system, "is_ended", None)
    if end <= 0 or is_ended is None or not is_ended(stream_id):
        return end
    last = system.fetch(stream_id, partition, end - 1, end, 1)
    kinds = [record[0] for _first, records in last.batches for record in records]
    return end - 1 if kinds == [MessageKind.END_OF_STREAM] else end


def after_deletion(
    plan: ExecutionPlan, task_name: str, stream_id: str, partition: int, offset: int, oldest: int
) -> tuple[bool, str]:
    """Retention deleted offsets ``offset..oldest - 1`` of a partition before ``task_name`` read
    them: whether to read on from ``oldest`` (else the epoch skips to the partition's end), and
    the note that says what was lost (the processor logs it when the epoch commits).
    ``auto.offset.reset=none`` raises :class:`CheckpointError`. An intermediate stream reads on
    (only its own job deletes it, below committed offsets)."""
    info = plan.streams[stream_id]
    where = f"{info.kind} {stream_id}[{partition}] (system {info.system.name!r})"
    rule_key, rule = ("", "oldest")
    if info.kind == "input":
        rule_key, rule = OffsetPolicy(plan).out_of_range_rule(stream_id)
    lost = f"{where}: offsets {offset}..{oldest - 1} were deleted by retention before task {task_name} read them"
    if rule == "fail":
        msg = f"{lost}, and {rule_key}=none; set it to smallest or largest, or reset the job's offsets"
        raise CheckpointError(msg)
    note = f"{lost}; reading on from {oldest}" if rule == "oldest" else f"{lost}; skipping to the newest ({rule_key})"
    return rule == "oldest", note
