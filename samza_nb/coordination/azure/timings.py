"""AzureTimings: the intervals of the Azure protocol (config keys ``job.coordinator.azure.*``)."""

from __future__ import annotations

from dataclasses import dataclass

from samza_nb.config import Config
from samza_nb.errors import ConfigError

__all__ = ["AzureTimings"]

_PREFIX = "job.coordinator.azure."


@dataclass(frozen=True)
class AzureTimings:
    """The protocol's intervals in seconds (Samza's defaults; config keys ``job.coordinator.azure.*``)."""

    heartbeat: float = 5.0
    liveness: float = 30.0
    leader_check: float = 10.0
    membership_check: float = 5.0
    barrier_check: float = 5.0
    barrier_timeout: float = 30.0
    upgrade_check: float = 5.0
    lease_duration: float = 60.0
    lease_renew: float = 45.0

    @classmethod
    def from_config(cls, config: Config) -> AzureTimings:
        def seconds(key: str) -> float:
            return config.get_int(key) / 1000

        timings = cls(
            heartbeat=seconds("job.coordinator.azure.heartbeat.interval.ms"),
            liveness=seconds("job.coordinator.azure.liveness.timeout.ms"),
            leader_check=seconds("job.coordinator.azure.leader.check.interval.ms"),
            membership_check=seconds("job.coordinator.azure.membership.check.interval.ms"),
            barrier_check=seconds("job.coordinator.azure.barrier.check.interval.ms"),
            barrier_timeout=seconds("job.coordinator.azure.barrier.timeout.ms"),
            upgrade_check=seconds("job.coordinator.azure.upgrade.check.interval.ms"),
            lease_duration=seconds("job.coordinator.azure.lease.duration.ms"),
            lease_renew=seconds("job.coordinator.azure.lease.renew.interval.ms"),
        )
        if timings.lease_renew >= timings.lease_duration:
            msg = (
                f"{_PREFIX}lease.renew.interval.ms ({timings.lease_renew * 1000:g}) must be "
                f"shorter than {_PREFIX}lease.duration.ms ({timings.lease_duration * 1000:g})"
            )
            raise ConfigError(msg)
        return timings

    @property
    def tick(self) -> float:
        """How often the coordinator thread looks at its due work."""
        shortest = min(
            self.membership_check, self.barrier_check, self.upgrade_check, self.leader_check
        )
        return max(0.05, min(1.0, shortest / 4))
