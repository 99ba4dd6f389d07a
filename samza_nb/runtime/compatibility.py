"""Combinations of settings the engine cannot run, refused when the job is planned.

Each rule names the keys involved and the supported alternative in one line, so that a job
that would fail at its first commit (or, worse, run without doing what its settings promise)
never starts. The rules:

- A ZooKeeper or Azure coordinator fences its processors' commits through its own service: a
  commit to another metadata store could not be fenced (a processor the leader dropped could
  still write checkpoints), so ``metadata.store.factory`` must name the coordinator's service.
- Hot standbys keep warm by reading the checkpoints in the metadata store; under
  ``task.processing.guarantee=exactly-once`` checkpoints live in the Kafka checkpoint topic
  instead, so a standby would apply nothing and a failover would restore in full.
"""

from __future__ import annotations

from samza_nb.config import Config
from samza_nb.errors import ConfigError

__all__ = ["check_compatibility", "check_standbys"]

#: Coordinators whose commits are fenced through their own service's metadata store.
_FENCED_BY_OWN_STORE = ("zookeeper", "azure")


def check_compatibility(config: Config) -> None:
    """Raise :class:`ConfigError` for the first combination of ``config`` the engine cannot run."""
    _check_coordinator_store(config)
    check_standbys(config, config.get_int("job.standbytasks.replication.factor"))


def _check_coordinator_store(config: Config) -> None:
    coordinator = (config.get_str("job.coordinator.factory") or "embedded").strip().lower()
    if coordinator not in _FENCED_BY_OWN_STORE or "metadata.store.factory" not in config:
        return  # unset: the coordinator's own service (job_setup.metadata_store_name)
    store = config.get_str("metadata.store.factory") or "embedded"
    if store.strip().lower() != coordinator:
        msg = (
            f"job.coordinator.factory={coordinator} with metadata.store.factory={store}: the "
            f"{coordinator} coordinator fences its processors' commits in its own store; set "
            f"metadata.store.factory={coordinator} (or leave it unset)"
        )
        raise ConfigError(msg)


def check_standbys(config: Config, replication_factor: int) -> None:
    """Refuse standby tasks (``replication_factor`` > 1) under exactly-once."""
    guarantee = (config.get_str("task.processing.guarantee") or "at-least-once").strip().lower()
    if replication_factor > 1 and guarantee == "exactly-once":
        msg = (
            f"job.standbytasks.replication.factor={replication_factor} with "
            f"task.processing.guarantee=exactly-once: standbys read the metadata store's "
            f"checkpoints, which exactly-once keeps in the Kafka checkpoint topic instead; use "
            f"task.processing.guarantee=at-least-once for hot standbys, or replication factor 1"
        )
        raise ConfigError(msg)
