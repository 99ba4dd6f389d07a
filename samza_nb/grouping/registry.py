"""Task and SSP groupers by name (``task.name.grouper.factory``,
``job.systemstreampartition.grouper.factory``); an unknown name lists the known ones."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.grouping.base import TaskNameGrouper
from samza_nb.grouping.group_by_container_count import GroupByContainerCount
from samza_nb.grouping.group_by_container_ids import GroupByContainerIds
from samza_nb.grouping.host_affinity import HostAffinityGrouper
from samza_nb.grouping.single_container import SingleContainerGrouper
from samza_nb.grouping.ssp_groupers import (
    AllSspToSingleTask,
    GroupByPartition,
    GroupBySystemStreamPartition,
    SspGrouper,
)

__all__ = [
    "check_grouper_name",
    "get_grouper",
    "grouper_for_processors",
    "get_ssp_grouper",
    "grouper_from_config",
    "grouper_names",
    "register_grouper",
    "register_ssp_grouper",
    "ssp_grouper_from_config",
    "ssp_grouper_names",
]

_GROUPERS: dict[str, Callable[..., TaskNameGrouper]] = {
    GroupByContainerCount.name: GroupByContainerCount,
    GroupByContainerIds.name: GroupByContainerIds,
    HostAffinityGrouper.name: HostAffinityGrouper,
    SingleContainerGrouper.name: SingleContainerGrouper,
}

_SSP_GROUPERS: dict[str, Callable[..., SspGrouper]] = {
    GroupByPartition.name: GroupByPartition,
    GroupBySystemStreamPartition.name: GroupBySystemStreamPartition,
    AllSspToSingleTask.name: AllSspToSingleTask,
}


def _unknown(kind: str, name: str, known: Mapping[str, Any]) -> ConfigError:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    msg = f"unknown {kind} {name!r}; {hint}known: {', '.join(sorted(known))}"
    return ConfigError(msg)


def _build(kind: str, name: str, factory: Callable[..., Any], options: dict[str, Any]) -> Any:
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as error:
        try:
            accepted = ", ".join(inspect.signature(factory).parameters) or "none"
        except (TypeError, ValueError):
            accepted = "see its documentation"
        msg = f"{kind} {name!r}: bad options {sorted(options)} ({error}); accepted: {accepted}"
        raise ConfigError(msg) from error
    return factory(**options)


def grouper_names() -> list[str]:
    """The registered task grouper names."""
    return sorted(_GROUPERS)


def register_grouper(name: str, factory: Callable[..., TaskNameGrouper]) -> None:
    """Register a custom task grouper; ``factory(**options)`` builds it."""
    if not name or not isinstance(name, str):
        msg = f"grouper name must be a non-empty string, got {name!r}"
        raise ConfigError(msg)
    _GROUPERS[name] = factory


def get_grouper(name: str, **options: Any) -> TaskNameGrouper:
    """A task grouper by name, built with ``options``.

    >>> get_grouper("group-by-container-count", container_count=2)
    GroupByContainerCount(2)
    >>> get_grouper("host-afinity")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    samza_nb.errors.ConfigError: unknown task grouper 'host-afinity'; did you mean 'host-affinity'? known: ...
    """
    check_grouper_name(name)
    result: TaskNameGrouper = _build("task grouper", name, _GROUPERS[name], options)
    return result


def check_grouper_name(name: str) -> None:
    """Raise ConfigError (with the nearest registered name) unless ``name`` is a task grouper."""
    if name not in _GROUPERS:
        kind = "task grouper"
        raise _unknown(kind, name, _GROUPERS)


def grouper_for_processors(
    name: str, processor_ids: Iterable[str], options: Mapping[str, Any] | None = None
) -> TaskNameGrouper:
    """The task grouper ``name`` for these processors: the options a grouper needs and
    ``options`` leave out come from the processors (count, ids, the first id), as ``run()``
    and the grouper explorer both need them.

    >>> grouper_for_processors("group-by-container-count", ["0", "1", "2"])
    GroupByContainerCount(3)
    """
    filled = dict(options or {})
    ids = sorted(processor_ids)
    if name == "group-by-container-count":
        filled.setdefault("container_count", len(ids))
    elif name == "single-container":
        filled.setdefault("processor_id", ids[0])
    elif name == "group-by-container-ids":
        filled.setdefault("processor_ids", ids)
    return get_grouper(name, **filled)


def grouper_from_config(config: Config | Mapping[str, Any]) -> TaskNameGrouper:
    """The task grouper named by ``task.name.grouper.factory``, configured from the job config.

    ``job.container.count`` feeds the count groupers, ``job.host-affinity.enabled`` the
    location-aware variant of group-by-container-ids, ``processor.id`` the single-container one.
    """
    config = Config.of(config)
    name = config.get_str("task.name.grouper.factory") or "group-by-container-count"
    count = config.get_int("job.container.count")
    if name == GroupByContainerCount.name:
        return get_grouper(name, container_count=count)
    if name == GroupByContainerIds.name:
        return get_grouper(
            name,
            container_count=count,
            host_affinity=config.get_bool("job.host-affinity.enabled"),
        )
    if name == SingleContainerGrouper.name:
        return get_grouper(name, processor_id=config.get_str("processor.id", "0") or "0")
    return get_grouper(name)


def ssp_grouper_names() -> list[str]:
    """The registered SSP grouper names."""
    return sorted(_SSP_GROUPERS)


def register_ssp_grouper(name: str, factory: Callable[..., SspGrouper]) -> None:
    """Register a custom SSP grouper; ``factory(**options)`` builds it."""
    if not name or not isinstance(name, str):
        msg = f"SSP grouper name must be a non-empty string, got {name!r}"
        raise ConfigError(msg)
    _SSP_GROUPERS[name] = factory


def get_ssp_grouper(name: str, **options: Any) -> SspGrouper:
    """An SSP grouper by name, built with ``options``."""
    factory = _SSP_GROUPERS.get(name)
    if factory is None:
        kind = "SSP grouper"
        raise _unknown(kind, name, _SSP_GROUPERS)
    result: SspGrouper = _build("SSP grouper", name, factory, options)
    return result


def ssp_grouper_from_config(
    config: Config | Mapping[str, Any], processor_ids: list[str] | None = None
) -> SspGrouper:
    """The SSP grouper named by ``job.systemstreampartition.grouper.factory``.

    ``task.broadcast.inputs`` and ``job.elasticity.factor`` configure the partition groupers;
    ``processor_ids`` (Samza's injected ``processor.list``) the all-to-single-task grouper.
    """
    config = Config.of(config)
    name = config.get_str("job.systemstreampartition.grouper.factory") or "group-by-partition"
    if name == AllSspToSingleTask.name:
        if config.get_str("task.broadcast.inputs"):
            msg = "all-ssp-to-single-task does not support task.broadcast.inputs; remove it"
            raise ConfigError(msg)
        return get_ssp_grouper(name, processor_ids=processor_ids or [])
    if name in (GroupByPartition.name, GroupBySystemStreamPartition.name):
        return get_ssp_grouper(
            name,
            broadcast_inputs=config.get_str("task.broadcast.inputs") or "",
            elasticity_factor=config.get_int("job.elasticity.factor"),
        )
    return get_ssp_grouper(name)
