"""One Azure storage account for a job: its connection string, clients and resource names.

The connection string holds the account key. It comes from ``azure.storage.connect`` (a
properties file given with ``--config`` keeps it out of notebooks) or from
``$SAMZA_NB_AZURE_CONNECTION_STRING``, and is never shown: :class:`AzureAccount` prints the
account name and blob endpoint only, and every error built here passes through
:func:`~samza_nb.secrecy.redact`.

Clients follow Samza's retry policy (SAMZA.md §10.1: linear, 3 attempts, 5 s apart), with
``azure.storage.retry.attempts``, ``azure.storage.retry.interval.ms`` and a per-request
``azure.storage.timeout.ms`` as config keys, so a storage account that stops answering fails a
call after a bounded time instead of hanging it.

Names follow Azure's rules: containers are 3–63 characters of lower-case letters, digits and
single dashes; tables 3–63 letters and digits starting with a letter. A name derived from a job
that is too long is truncated and suffixed with a short hash of the whole, so two jobs never
share one.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.secrecy import redact

__all__ = [
    "CONNECT_KEY",
    "CONNECT_VARIABLE",
    "AzureAccount",
    "container_name",
    "describe_error",
    "table_name",
]

CONNECT_KEY = "azure.storage.connect"
CONNECT_VARIABLE = "SAMZA_NB_AZURE_CONNECTION_STRING"
_MAX_NAME = 63
_HASH_CHARS = 8


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH_CHARS]


def _fit(prefix: str, body: str, original: str, allowed_tail: str = "") -> str:
    name = prefix + body
    if len(name) <= _MAX_NAME:
        return name
    room = _MAX_NAME - len(prefix) - _HASH_CHARS - len(allowed_tail)
    return prefix + body[:room] + allowed_tail + _short_hash(original)


def container_name(prefix: str, ident: str) -> str:
    """A valid container name ``<prefix><ident>`` (lower case, letters, digits, single dashes).

    >>> container_name("samzacontainer", "app-pageviews-7")
    'samzacontainerapp-pageviews-7'
    >>> name = container_name("samza-", "A_very/long--Name" * 8)
    >>> len(name) <= 63 and name == name.lower() and "--" not in name
    True
    """
    body = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "-", ident.lower())).strip("-")
    name = _fit(prefix, body, ident, "-")
    name = re.sub(r"-{2,}", "-", name).strip("-")
    if len(name) < 3:
        name = (name + "-" + _short_hash(ident))[:_MAX_NAME]
    return name


def table_name(prefix: str, ident: str) -> str:
    """A valid table name ``<prefix><ident>`` (letters and digits, starting with a letter).

    >>> table_name("samzatable", "app-pageviews-7")
    'samzatableapppageviews7'
    """
    if not prefix or not prefix[0].isalpha():
        msg = f"a table name prefix must start with a letter, got {prefix!r}"
        raise ConfigError(msg)
    body = re.sub(r"[^A-Za-z0-9]", "", ident)
    return _fit(prefix, body, ident)


def describe_error(error: BaseException) -> str:
    """A one-line description of a storage error, secrets masked."""
    code = getattr(error, "error_code", None) or getattr(error, "status_code", None)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return redact(f"{type(error).__name__}{f' ({code})' if code else ''}: {text}")


def _check_parses(connect: str, source: str) -> None:
    """Refuse a connection string the Azure SDK cannot read, naming where it came from (the
    SDK's own error, deep in the first client call, names neither the setting nor the job)."""
    from azure.data.tables import TableServiceClient
    from azure.storage.blob import BlobServiceClient

    try:
        # Both clients: the table client reads the endpoints its own way (a BlobEndpoint that
        # is no URL passes the blob client and fails the table client with a TypeError).
        BlobServiceClient.from_connection_string(connect)
        TableServiceClient.from_connection_string(connect)
    except (ValueError, TypeError) as error:
        msg = (
            f"the Azure connection string from {source} does not parse ({redact(str(error))}); "
            "expected DefaultEndpointsProtocol=...;AccountName=...;AccountKey=...;"
            "BlobEndpoint=...;TableEndpoint=... (see docs/azure.md)"
        )
        raise ConfigError(msg) from None


@dataclass(frozen=True)
class AzureAccount:
    """A storage account and the client options of a job. ``repr`` never shows the key."""

    connect: str
    retry_attempts: int = 3
    retry_interval: float = 5.0
    timeout: float = 30.0

    @classmethod
    def from_config(
        cls, config: Config | Mapping[str, Any] | None = None, connect: str | None = None
    ) -> AzureAccount:
        cfg = Config.of(config)
        # The first that is set, and where it came from (named if it does not parse).
        candidates = (
            (connect, "the connection string given"),
            (cfg.get_str(CONNECT_KEY), CONNECT_KEY),
            (os.environ.get(CONNECT_VARIABLE), f"${CONNECT_VARIABLE}"),
        )
        value, source = next(((v, where) for v, where in candidates if v), ("", ""))
        if not value:
            msg = (
                f"Azure storage needs a connection string: set {CONNECT_KEY} (in a properties "
                f"file given with --config) or ${CONNECT_VARIABLE}"
            )
            raise ConfigError(msg)
        _check_parses(value, source)
        return cls(
            value,
            retry_attempts=cfg.get_int("azure.storage.retry.attempts"),
            retry_interval=cfg.get_int("azure.storage.retry.interval.ms") / 1000,
            timeout=cfg.get_int("azure.storage.timeout.ms") / 1000,
        )

    @property
    def fields(self) -> dict[str, str]:
        """The connection string's fields that are safe to show (``AccountName``,
        ``BlobEndpoint`` …): the account key and any SAS token are left out."""
        pairs = (item.partition("=") for item in self.connect.split(";") if item.strip())
        shown = {key.strip(): value.strip() for key, _, value in pairs}
        return {key: value for key, value in shown.items() if redact(f"{key}={value}") == f"{key}={value}"}

    @property
    def description(self) -> str:
        """Account name and blob endpoint (no key)."""
        fields = self.fields
        name = fields.get("AccountName", "?")
        endpoint = (
            fields.get("BlobEndpoint")
            or f"{fields.get('DefaultEndpointsProtocol', 'https')}://{name}"
        )
        return f"{name} at {endpoint}"

    def __repr__(self) -> str:
        return f"AzureAccount({self.description!r})"

    __str__ = __repr__

    def _options(self) -> dict[str, Any]:
        return {
            "connection_timeout": self.timeout,
            "read_timeout": self.timeout,
            "logging_enable": False,
        }

    def blob_service(self) -> Any:
        from azure.storage.blob import BlobServiceClient, LinearRetry

        # LinearRetry is typed for whole seconds but sleeps any number (tests use fractions).
        retry = LinearRetry(
            backoff=self.retry_interval,  # type: ignore[arg-type]
            random_jitter_range=0,
            retry_total=max(0, self.retry_attempts - 1),
        )
        return BlobServiceClient.from_connection_string(
            self.connect, retry_policy=retry, **self._options()
        )

    def table_service(self) -> Any:
        from azure.core.pipeline.policies import RetryMode
        from azure.data.tables import TableServiceClient

        return TableServiceClient.from_connection_string(
            self.connect,
            retry_total=max(0, self.retry_attempts - 1),
            retry_backoff_factor=self.retry_interval,
            retry_mode=RetryMode.Fixed,
            **self._options(),
        )
