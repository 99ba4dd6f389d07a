"""JobModel: the whole job — config and processor → container of tasks (§3.1–§3.4)."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from samza_nb.errors import ModelError
from samza_nb.model.container import ContainerModel
from samza_nb.model.names import java_sorted
from samza_nb.model.system_stream import SystemStreamPartition
from samza_nb.model.task import TaskMode, TaskModel
from samza_nb.secrecy import mask_config

__all__ = ["JobModel"]


class JobModel:
    """An immutable job model: ``config`` and ``containers`` (processor id → ContainerModel).

    ``containers`` may also be given as an iterable of ContainerModels (what task groupers
    return). JSON uses Samza's field names (§3.2) and reads Samza's older forms (§3.3).

    >>> from samza_nb.model import ContainerModel, SystemStreamPartition, TaskModel
    >>> ssp = SystemStreamPartition("kafka", "PVE", 3)
    >>> model = JobModel({"job.name": "x"}, [ContainerModel("0", [TaskModel("Partition 3", [ssp], 3)])])
    >>> model.max_changelog_partitions
    4
    >>> JobModel.from_json(model.to_json()) == model
    True
    >>> model.container_of("Partition 3").processor_id
    '0'
    """

    __slots__ = ("_by_task", "_config", "_containers", "_hash")

    _config: Mapping[str, str]
    _containers: Mapping[str, ContainerModel]
    _by_task: dict[str, ContainerModel] | None
    _hash: int | None

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        containers: Mapping[str, ContainerModel] | Iterable[ContainerModel] = (),
    ) -> None:
        entries = {str(key): str(value) for key, value in (config or {}).items()}
        by_id: dict[str, ContainerModel] = {}
        if isinstance(containers, Mapping):
            for key, container in containers.items():
                if not isinstance(container, ContainerModel):
                    msg = f"JobModel: expected ContainerModel values, got {container!r}"
                    raise ModelError(msg)
                if key != container.processor_id:
                    msg = (
                        f"JobModel: container key {key!r} does not match its processor id "
                        f"{container.processor_id!r}"
                    )
                    raise ModelError(msg)
                by_id[key] = container
        else:
            for container in containers:
                if not isinstance(container, ContainerModel):
                    msg = f"JobModel: expected ContainerModels, got {container!r}"
                    raise ModelError(msg)
                if container.processor_id in by_id:
                    msg = f"JobModel: processor {container.processor_id!r} appears twice"
                    raise ModelError(msg)
                by_id[container.processor_id] = container
        object.__setattr__(self, "_config", MappingProxyType(entries))
        ordered = {pid: by_id[pid] for pid in java_sorted(by_id)}
        object.__setattr__(self, "_containers", MappingProxyType(ordered))
        object.__setattr__(self, "_by_task", None)
        object.__setattr__(self, "_hash", None)

    @property
    def config(self) -> Mapping[str, str]:
        """The job's config (empty in models published by a ZooKeeper leader, as in Samza)."""
        return self._config

    @property
    def containers(self) -> Mapping[str, ContainerModel]:
        """Processor id → ContainerModel, in processor-id order (read-only)."""
        return self._containers

    @property
    def processor_ids(self) -> list[str]:
        return list(self._containers)

    @property
    def max_changelog_partitions(self) -> int:
        """1 + the largest changelog partition of any task (0 without tasks), as in Samza."""
        largest = -1
        for container in self._containers.values():
            for task in container.tasks.values():
                if task.changelog_partition > largest:
                    largest = task.changelog_partition
        return largest + 1

    def _index(self) -> dict[str, ContainerModel]:
        if self._by_task is None:
            index: dict[str, ContainerModel] = {}
            for container in self._containers.values():
                for name in container.tasks:
                    if name in index:
                        msg = (
                            f"JobModel: task {name!r} is in two containers "
                            f"({index[name].processor_id!r} and {container.processor_id!r})"
                        )
                        raise ModelError(msg)
                    index[name] = container
            object.__setattr__(self, "_by_task", index)
            return index
        return self._by_task

    def task_models(self) -> dict[str, TaskModel]:
        """Every task of every container (active and standby), by name."""
        return {name: container.tasks[name] for name, container in self._index().items()}

    def active_tasks(self) -> dict[str, TaskModel]:
        """The active tasks of the job, by name."""
        return {
            name: container.tasks[name]
            for name, container in self._index().items()
            if container.tasks[name].mode is TaskMode.ACTIVE
        }

    def standby_tasks(self) -> dict[str, TaskModel]:
        """The standby tasks of the job, by name."""
        return {
            name: container.tasks[name]
            for name, container in self._index().items()
            if container.tasks[name].mode is TaskMode.STANDBY
        }

    def container_of(self, task_name: str) -> ContainerModel | None:
        """The container running ``task_name``, or None."""
        return self._index().get(task_name)

    def processor_of(self, task_name: str) -> str | None:
        """The processor id running ``task_name``, or None."""
        container = self._index().get(task_name)
        return None if container is None else container.processor_id

    def task_to_processor(self, *, mode: TaskMode | None = None) -> dict[str, str]:
        """Task name → processor id, for every task or only those of ``mode``."""
        return {
            name: container.processor_id
            for name, container in self._index().items()
            if mode is None or container.tasks[name].mode is mode
        }

    def tasks_of(self, processor_id: str) -> frozenset[str]:
        """The task names of a processor (empty if the processor has no container)."""
        container = self._containers.get(processor_id)
        return frozenset() if container is None else frozenset(container.tasks)

    def task_to_ssps(self) -> dict[str, frozenset[SystemStreamPartition]]:
        """Active task name → its SSPs (Samza's JobModelUtil uses active tasks only)."""
        return {name: task.ssps for name, task in self.active_tasks().items()}

    def replace(
        self,
        *,
        config: Mapping[str, Any] | None = None,
        containers: Mapping[str, ContainerModel] | Iterable[ContainerModel] | None = None,
    ) -> JobModel:
        """A copy with the config or the containers replaced."""
        return JobModel(
            self._config if config is None else config,
            self._containers if containers is None else containers,
        )

    def __setattr__(self, name: str, value: Any) -> None:
        msg = f"JobModel is immutable; use replace() instead of setting {name!r}"
        raise AttributeError(msg)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobModel):
            return NotImplemented
        return self._config == other._config and self._containers == other._containers

    def __hash__(self) -> int:
        if self._hash is None:
            value = hash((frozenset(self._config.items()), frozenset(self._containers.values())))
            object.__setattr__(self, "_hash", value)
            return value
        return self._hash

    def __repr__(self) -> str:
        tasks = sum(len(container) for container in self._containers.values())
        return (
            f"JobModel({len(self._containers)} containers, {tasks} tasks, "
            f"{len(self._config)} config entries)"
        )

    def _repr_html_(self) -> str:
        rows = []
        for container in self._containers.values():
            active = ", ".join(html.escape(name) for name in container.active_tasks())
            standby = ", ".join(html.escape(name) for name in container.standby_tasks())
            rows.append(
                "<tr>"
                f"<td>{html.escape(container.processor_id)}</td>"
                f"<td>{html.escape(container.location_id or '')}</td>"
                f"<td>{active}</td><td>{standby}</td>"
                "</tr>"
            )
        return (
            "<table><thead><tr><th>processor</th><th>location</th><th>active tasks</th>"
            f"<th>standby tasks</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready object, with Samza's field names and field order.

        Secrets in the config are masked (:func:`samza_nb.secrecy.mask_config`): a stored or
        printed job model never carries a password, key or connection string, and reads back
        with the mask in their place. Processors take their config from the job, not from it.
        """
        return {
            "config": mask_config(self._config),
            "containers": {pid: c.to_json() for pid, c in self._containers.items()},
            "max-change-log-stream-partitions": self.max_changelog_partitions,
        }

    def to_json(self, *, indent: int | None = None) -> str:
        """Samza-compatible JSON text (compact unless ``indent`` is given)."""
        separators = (",", ":") if indent is None else (",", ": ")
        return json.dumps(self.to_dict(), indent=indent, separators=separators, ensure_ascii=False)

    @classmethod
    def from_dict(cls, value: Any) -> JobModel:
        """Read the object form; unknown fields (``task-partition-mappings``,
        ``all-container-locality``, ``max-change-log-stream-partitions`` …) are ignored."""
        if not isinstance(value, dict):
            msg = f"JobModel JSON must be an object, got {type(value).__name__}"
            raise ModelError(msg)
        config = value.get("config") or {}
        if not isinstance(config, dict):
            msg = "JobModel JSON: 'config' must be an object of strings"
            raise ModelError(msg)
        raw_containers = value.get("containers") or {}
        if not isinstance(raw_containers, dict):
            msg = "JobModel JSON: 'containers' must be an object keyed by processor id"
            raise ModelError(msg)
        containers = {}
        for key, raw in raw_containers.items():
            container = ContainerModel.from_json(raw, key=key)
            if container.processor_id != key:
                msg = (
                    f"JobModel JSON: container stored under {key!r} has processor id "
                    f"{container.processor_id!r}"
                )
                raise ModelError(msg)
            containers[key] = container
        return cls({str(k): "" if v is None else str(v) for k, v in config.items()}, containers)

    @classmethod
    def from_json(cls, text: str | bytes | bytearray) -> JobModel:
        """Read Samza-compatible JSON text (or UTF-8 bytes)."""
        try:
            value = json.loads(text)
        except (ValueError, UnicodeDecodeError) as error:
            msg = f"JobModel JSON does not parse: {error}"
            raise ModelError(msg) from error
        return cls.from_dict(value)
