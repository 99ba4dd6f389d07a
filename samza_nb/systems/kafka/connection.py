"""How a Kafka system reaches its brokers: its client settings, this process's clients, calls
retried through outages, messages that name the brokers with secrets masked, and whether the
broker is Tansu-like.

A :class:`KafkaConnection` holds settings only (it is shipped to Spark executors with its
system); the clients themselves are opened once per process and settings
(:mod:`~samza_nb.systems.kafka.clients`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from samza_nb.kafka_settings import (
    KafkaClientConfig,
    broker_api_versions,
    is_secret_option,
    transport_diagnosis,
)
from samza_nb.secrecy import redact
from samza_nb.systems.kafka.clients import ProcessClients, close_process_clients, process_clients
from samza_nb.systems.kafka.outage import RetryPolicy, call_with_retries

__all__ = ["KafkaConnection"]

#: The Kafka system's logger: what a user configures for KafkaSystem covers its connection too.
_log = logging.getLogger("samza_nb.systems.kafka")
_T = TypeVar("_T")
#: ApiVersions key: a broker without CreatePartitions is Tansu-like.
_CREATE_PARTITIONS = 37


class KafkaConnection:
    """The brokers of the Kafka system ``name``, as its settings reach them.

    ``timeout`` (seconds) bounds each broker call and ``retries`` how often a call that failed
    for a transient reason is tried; once the brokers were reached, such a call is tried for
    ``outage_wait`` seconds. ``tansu``: None detects the Tansu broker from ApiVersions.
    """

    def __init__(
        self,
        name: str,
        settings: KafkaClientConfig,
        *,
        timeout: float,
        retries: int,
        outage_wait: float,
        tansu: bool | None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.timeout = float(timeout)
        self.retries = max(1, int(retries))
        self.outage_wait = max(0.0, float(outage_wait))
        self._tansu = tansu

    @property
    def bootstrap_servers(self) -> str:
        return self.settings.bootstrap_servers

    @property
    def send_timeout(self) -> float:
        """Seconds an append waits for its acknowledgements: the tries of a call, or the
        outage bound when that is longer."""
        return max(self.timeout * self.retries, self.outage_wait)

    def clients(self) -> ProcessClients:
        """This process's clients of these settings."""
        return process_clients(self.settings)

    def close(self) -> None:
        close_process_clients(self.settings)

    @property
    def where(self) -> str:
        """The system and its bootstrap servers, for messages."""
        return f"Kafka system {self.name!r} (bootstrap servers {redact(self.bootstrap_servers)})"

    def scrub(self, text: str) -> str:
        """``text`` with the value of every secret option, and every secret-looking part,
        masked."""
        options = {**self.settings.common, **self.settings.consumer, **self.settings.producer}
        for key, value in options.items():
            if is_secret_option(key) and len(value) >= 3:
                text = text.replace(value, "********")
        return redact(text)

    def call(self, operation: str, call: Callable[[float], _T]) -> _T:
        """``call(timeout)``, retried on transient errors and through outages
        (:mod:`~samza_nb.systems.kafka.outage`); one error when it gives up."""
        return call_with_retries(
            call,
            operation=operation,
            where=self.where,
            policy=RetryPolicy(self.timeout, self.retries, self.outage_wait),
            watch=self.clients().outage,
            scrub=self.scrub,
            diagnose=self._transport_diagnosis,
        )

    def _transport_diagnosis(self) -> str:
        """What a plain connection to the bootstrap servers says (kafka_settings)."""
        try:
            text = transport_diagnosis(
                self.bootstrap_servers, self.settings.security_protocol, min(self.timeout, 5.0)
            )
        except Exception as error:  # noqa: BLE001 - the diagnosis only adds to the error
            _log.debug("%s: diagnosing the transport failed: %s", self.where, error)
            return ""
        return self.scrub(text)

    def is_tansu(self) -> bool:
        """Whether the broker is Tansu-like: no CreatePartitions in its ApiVersions (forced by
        ``KafkaSystem(tansu=)``)."""
        if self._tansu is not None:
            return self._tansu
        clients = self.clients()
        if clients.tansu is None:
            tansu = False
            if self.settings.security_protocol == "plaintext":
                apis = broker_api_versions(self.bootstrap_servers, self.timeout)
                tansu = apis is not None and _CREATE_PARTITIONS not in apis
            clients.tansu = tansu
            _log.debug("%s: Tansu-like broker: %s", self.where, tansu)
        return clients.tansu
