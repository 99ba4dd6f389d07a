"""Kafka client settings, shared by the Kafka system and the Kafka metadata store.

Secrets (SASL passwords, JAAS configs, SSL key passwords …) belong in a properties file or the
environment, never in a notebook cell: :class:`KafkaClientConfig` reads ``config_file`` (or the
file named by ``$SAMZA_NB_KAFKA_CONFIG_FILE``) in each process that opens a client, and masks
every secret-looking option whenever it is printed. Samza-style keys
(``systems.<name>.consumer.*``, ``systems.<name>.producer.*``) come in through
:meth:`KafkaClientConfig.from_config`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from samza_nb.config import Config, environment, parse_properties
from samza_nb.errors import ConfigError
from samza_nb.secrecy import is_secret_key, mask_value, redact

__all__ = ["KafkaClientConfig", "is_secret_option", "mask_options", "transport_diagnosis"]

#: Where a properties file of librdkafka options (secrets included) may be named.
CONFIG_FILE_VARIABLE = "SAMZA_NB_KAFKA_CONFIG_FILE"

_MASK = "********"
#: librdkafka's own log lines: a child of the Kafka system's logger, so what a user configures
#: for ``samza_nb.systems.kafka`` covers them.
_LIBRDKAFKA_LOG = logging.getLogger("samza_nb.systems.kafka.librdkafka")
#: How long a librdkafka line, once logged, is not logged again.
_REPEAT_SECONDS = 60.0


class _LibrdkafkaLines(logging.Filter):
    """What of librdkafka's log reaches a notebook's stderr.

    - A transactional producer fenced by a newer one with its id is logged as an error.
      samza_nb fences its own kept producers on purpose (a task epoch that moved to another
      Python worker starts a new producer, runtime/task/exactly_once.py), and a fence that matters
      fails the epoch with a StreamSystemError saying so: debug.
    - Connections that fail or drop are logged per broker thread and per try (about twenty
      lines in a ten-second outage): debug. The Kafka system says once that it waits for the
      brokers, and a call that gives up fails with one error naming them.
    - Any other line is logged once per minute at most (the client, broker and timings in it
      aside): librdkafka repeats its warnings for every try.
    """

    _DEBUG_WORDS = (
        "fenced",
        "newer producer with the same transactionalid",
        "connect to ",
        "disconnected",
        "connection refused",
        "broker transport failure",
        "all broker connections are down",
        "brokers are down",
    )
    _VARIABLE = re.compile(r"rdkafka#\w+-\d+|\d+(\.\d+)?\s*ms|\d+")

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= logging.DEBUG:
            return True
        text = record.getMessage()
        lowered = text.lower()
        if any(word in lowered for word in self._DEBUG_WORDS):
            # The logger let the line through at its own level: ask again for debug.
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        shape = self._VARIABLE.sub("#", text)
        now = time.monotonic()
        with self._lock:
            last = self._last.get(shape)
            if last is not None and now - last < _REPEAT_SECONDS:
                return False
            if len(self._last) > 1000:
                self._last.clear()
            self._last[shape] = now
        return True


_LIBRDKAFKA_LOG.addFilter(_LibrdkafkaLines())
# Options of the Samza system config that are not librdkafka options.
_SAMZA_ONLY = ("samza.", "default.stream.", "config.file", "tansu", "outage.")


def is_secret_option(key: str) -> bool:
    """Whether a librdkafka option carries a secret (its value is never shown): what makes
    any config key secret (samza_nb.secrecy; the SASL user name included)."""
    return is_secret_key(key)


def mask_options(options: Mapping[str, Any]) -> dict[str, str]:
    """``options`` as text with every secret value replaced by ``********``, and the secret
    parts of the others (``clientSecret=`` in ``sasl.oauthbearer.config``) masked."""
    return {key: (_MASK if is_secret_option(key) else mask_value(key, str(value))) for key, value in options.items()}


def _librdkafka_key(key: str) -> str:
    # Python keyword arguments cannot hold dots: ``sasl_mechanism`` means ``sasl.mechanism``.
    return key.replace("_", ".") if "." not in key else key


@dataclass(frozen=True, repr=False)
class KafkaClientConfig:
    """Everything needed to open producers, consumers and admin clients of one cluster; its
    repr masks the secrets (:meth:`describe`)."""

    bootstrap_servers: str
    common: dict[str, str] = field(default_factory=dict)
    consumer: dict[str, str] = field(default_factory=dict)
    producer: dict[str, str] = field(default_factory=dict)
    config_file: str | None = None

    @classmethod
    def build(
        cls,
        bootstrap_servers: str | None,
        options: Mapping[str, Any],
        *,
        consumer: Mapping[str, Any] | None = None,
        producer: Mapping[str, Any] | None = None,
        config_file: str | os.PathLike[str] | None = None,
    ) -> KafkaClientConfig:
        common = {_librdkafka_key(key): str(value) for key, value in options.items()}
        servers = bootstrap_servers or common.pop("bootstrap.servers", None)
        common.pop("bootstrap.servers", None)
        file = str(config_file) if config_file is not None else environment(CONFIG_FILE_VARIABLE)
        if not servers and file:
            servers = _read_file(file).get("bootstrap.servers")
        if not servers:
            servers = environment("SAMZA_NB_KAFKA_BOOTSTRAP")
        if not servers:
            msg = (
                "a Kafka system needs bootstrap servers: pass bootstrap_servers='host:port', set "
                "systems.<name>.bootstrap.servers, or set $SAMZA_NB_KAFKA_BOOTSTRAP"
            )
            raise ConfigError(msg)
        return cls(
            bootstrap_servers=str(servers),
            common=common,
            consumer={_librdkafka_key(k): str(v) for k, v in (consumer or {}).items()},
            producer={_librdkafka_key(k): str(v) for k, v in (producer or {}).items()},
            config_file=file or None,
        )

    @classmethod
    def from_config(cls, name: str, config: Config | Mapping[str, Any]) -> KafkaClientConfig:
        """Samza-style keys of system ``name``:

        - ``systems.<name>.bootstrap.servers`` (or ``consumer.``/``producer.bootstrap.servers``),
        - ``systems.<name>.consumer.<option>`` / ``systems.<name>.producer.<option>``: librdkafka
          options of consumers / producers (an option set identically in both applies to the
          admin client too),
        - ``systems.<name>.config.file``: a properties file of librdkafka options for every
          client, read in each process (put ``sasl.password`` and friends there).
        """
        entries = Config.of(config).subset(f"systems.{name}.")
        consumer = {k[len("consumer.") :]: v for k, v in entries.items() if k.startswith("consumer.")}
        producer = {k[len("producer.") :]: v for k, v in entries.items() if k.startswith("producer.")}
        servers = (
            entries.get("bootstrap.servers")
            or consumer.pop("bootstrap.servers", None)
            or producer.pop("bootstrap.servers", None)
        )
        consumer.pop("bootstrap.servers", None)
        producer.pop("bootstrap.servers", None)
        shared = {k: v for k, v in consumer.items() if producer.get(k) == v}
        common = {
            k: v
            for k, v in entries.items()
            if not k.startswith(("consumer.", "producer.", "bootstrap.servers"))
            and not k.startswith(_SAMZA_ONLY)
        }
        common.update(shared)
        return cls.build(
            servers,
            common,
            consumer={k: v for k, v in consumer.items() if k not in shared},
            producer={k: v for k, v in producer.items() if k not in shared},
            config_file=entries.get("config.file"),
        )

    # -- what clients get ---------------------------------------------------------------------
    def _base(self) -> dict[str, Any]:
        # librdkafka's own log lines go to Python logging, not straight to stderr.
        base: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers, "logger": _LIBRDKAFKA_LOG}
        if self.config_file:
            base.update({k: v for k, v in _read_file(self.config_file).items() if k != "bootstrap.servers"})
        base.update(self.common)
        return base

    def admin_options(self) -> dict[str, Any]:
        return self._base()

    def consumer_options(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = dict(overrides)
        options.update(self._base())
        options.update(self.consumer)
        return options

    def producer_options(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = dict(overrides)
        options.update(self._base())
        options.update(self.producer)
        return options

    @property
    def security_protocol(self) -> str:
        return str(self._base().get("security.protocol", "plaintext")).lower()

    def fingerprint(self) -> str:
        """A digest identifying these settings (a cache key for clients; never shown)."""
        payload = json.dumps(
            [self.bootstrap_servers, self.common, self.consumer, self.producer, self.config_file],
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:24]

    def __repr__(self) -> str:
        return f"KafkaClientConfig({self.describe()})"

    def describe(self) -> str:
        """The settings for a repr: bootstrap servers and options, secrets masked."""
        parts = [f"bootstrap_servers={redact(self.bootstrap_servers)!r}"]
        for label, options in (("", self.common), ("consumer.", self.consumer), ("producer.", self.producer)):
            parts.extend(f"{label}{k}={v!r}" for k, v in sorted(mask_options(options).items()))
        if self.config_file:
            parts.append(f"config_file={self.config_file!r}")
        return ", ".join(parts)


def _read_file(path: str) -> dict[str, str]:
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as error:
        msg = f"cannot read the Kafka client config file {path!r}: {error.strerror}"
        raise ConfigError(msg) from error
    except UnicodeDecodeError as error:
        msg = f"the Kafka client config file {path!r} is not UTF-8 text (byte {error.start})"
        raise ConfigError(msg) from None
    return parse_properties(text, source=path)


def broker_api_versions(bootstrap_servers: str, timeout: float) -> dict[int, tuple[int, int]] | None:
    """The APIs the first reachable bootstrap broker supports (ApiVersions v0 over a plain
    socket), or None when none answers. Only for plaintext listeners."""
    for server in bootstrap_servers.split(","):
        try:
            with socket.create_connection(_host_and_port(server), timeout=timeout) as sock:
                client_id = b"samza-nb"
                body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
                sock.sendall(struct.pack(">i", len(body)) + body)
                (size,) = struct.unpack(">i", _read_exactly(sock, 4))
                if not 10 <= size <= _LONGEST_ANSWER:  # a TLS alert read as a length, say
                    continue
                data = _read_exactly(sock, size)
        except (OSError, ValueError, struct.error):
            continue
        _correlation, error, count = struct.unpack(">ihi", data[:10])
        if error:
            continue
        apis = {}
        for index in range(count):
            key, low, high = struct.unpack(">hhh", data[10 + 6 * index : 16 + 6 * index])
            apis[key] = (low, high)
        return apis
    return None


#: The longest ApiVersions answer taken as Kafka's (a real one is a few hundred bytes).
_LONGEST_ANSWER = 1 << 20


def _host_and_port(server: str) -> tuple[str, int]:
    """``host:port`` of a bootstrap server as librdkafka reads it: an optional
    ``PROTOCOL://`` prefix, port 9092 when none is given, IPv6 hosts in brackets."""
    address = server.strip().rpartition("://")[2]
    host, colon, port = address.rpartition(":")
    if not colon or host.endswith(":") or (address.count(":") > 1 and not address.startswith("[")):
        return address.strip("[]"), 9092
    return host.strip("[]"), int(port)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = b""
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            msg = "connection closed"
            raise OSError(msg)
        chunks += chunk
    return chunks


def transport_diagnosis(bootstrap_servers: str, security_protocol: str, timeout: float) -> str:
    """Why the clients may not reach the brokers, from a plain TCP connection to each
    bootstrap server and a plaintext ApiVersions request (librdkafka only says "transport
    failure"): nothing listens, or the listener and ``security.protocol`` do not match."""
    protocol = security_protocol.lower()
    refused: list[str] = []
    accepting: list[str] = []
    for server in bootstrap_servers.split(","):
        try:
            with socket.create_connection(_host_and_port(server), timeout=timeout):
                accepting.append(server.strip())
        except (OSError, ValueError) as error:
            refused.append(f"{server.strip()}: {getattr(error, 'strerror', None) or error}")
    if not accepting:
        return "no bootstrap server accepts connections (" + "; ".join(refused) + ")"
    plain_kafka = broker_api_versions(",".join(accepting), timeout) is not None
    where = ", ".join(accepting)
    if plain_kafka and protocol == "ssl":
        return (
            f"{where} answers Kafka requests without TLS, but security.protocol is SSL: the "
            "listener is not an SSL one (use its SSL port, or the protocol it speaks: "
            "PLAINTEXT or SASL_PLAINTEXT)"
        )
    if plain_kafka and protocol == "sasl_ssl":
        return (
            f"{where} answers Kafka requests without TLS, but security.protocol is SASL_SSL: the "
            "listener is not an SSL one (use its SASL_SSL port, or SASL_PLAINTEXT)"
        )
    if plain_kafka and protocol == "sasl_plaintext":
        return (
            f"{where} answers Kafka requests in plaintext, but the SASL handshake failed: the "
            "listener may have no SASL (security.protocol=PLAINTEXT), or check sasl.mechanism "
            "and the credentials"
        )
    if not plain_kafka and protocol == "plaintext":
        return (
            f"{where} accepts connections but does not answer plaintext Kafka requests: it may "
            "be an SSL or SASL listener (set security.protocol and its settings) or not a "
            "Kafka broker"
        )
    return ""
