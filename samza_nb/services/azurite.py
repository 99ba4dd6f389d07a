"""Azurite, the Azure Storage emulator (npm package, pinned), with blob, queue and table endpoints.

``install()`` puts the pinned package into ``<services dir>/npm`` with the machine's npm; the
service runs it with ``node``. The well-known development account is used; its key is public
(documented by Microsoft for the emulator) but is still never printed. A real account configured
through ``$SAMZA_NB_AZURE_CONNECTION_STRING`` replaces the emulator.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from samza_nb.services._base import Service
from samza_nb.services._process import free_ports, log_tail, port_open, spawn

__all__ = [
    "AZURITE_VERSION",
    "DEV_ACCOUNT_KEY",
    "DEV_ACCOUNT_NAME",
    "Azurite",
    "azurite_connection_string",
    "parse_connection_string",
]

AZURITE_VERSION = "3.37.0"
DEV_ACCOUNT_NAME = "devstoreaccount1"
# The emulator's fixed, publicly documented development key (not a secret, but never printed).
DEV_ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
_INSTALL_TIMEOUT = 900.0


def azurite_connection_string(
    blob_port: int, queue_port: int, table_port: int, host: str = "127.0.0.1"
) -> str:
    """The development-account connection string for an emulator on ``host``."""
    base = f"http://{host}:{{}}/{DEV_ACCOUNT_NAME}"
    return (
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT_NAME};AccountKey={DEV_ACCOUNT_KEY};"
        f"BlobEndpoint={base.format(blob_port)};QueueEndpoint={base.format(queue_port)};"
        f"TableEndpoint={base.format(table_port)};"
    )


def parse_connection_string(value: str) -> dict[str, str]:
    """``Key=Value;…`` pairs of an Azure storage connection string."""
    pairs = (item.partition("=") for item in value.split(";") if item.strip())
    return {key.strip(): val.strip() for key, _, val in pairs}


class Azurite(Service):
    """Azurite on 127.0.0.1, data in ``<services dir>/azurite/data`` (wiped when stopped)."""

    name = "azurite"
    external_variable = "SAMZA_NB_AZURE_CONNECTION_STRING"

    @property
    def npm_prefix(self) -> Path:
        return self.home.root / "npm"

    @property
    def script(self) -> Path:
        return self.npm_prefix / "node_modules" / "azurite" / "dist" / "src" / "azurite.js"

    def installed_version(self) -> str | None:
        package = self.npm_prefix / "node_modules" / "azurite" / "package.json"
        try:
            return str(json.loads(package.read_text(encoding="utf-8"))["version"])
        except (OSError, ValueError, KeyError):
            return None

    def install(self) -> None:
        """``npm install azurite@<pinned>`` into the project-local prefix, once."""
        if self.installed_version() == AZURITE_VERSION and self.script.is_file():
            return
        npm = shutil.which("npm")
        if npm is None:
            msg = f"npm is needed to install azurite {AZURITE_VERSION} (install Node.js 20)"
            raise self._fail(msg)
        self.directory.mkdir(parents=True, exist_ok=True)
        log_file = self.log_file("npm-install")
        argv = [
            npm,
            "install",
            "--prefix",
            str(self.npm_prefix),
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            f"azurite@{AZURITE_VERSION}",
        ]
        with open(log_file, "wb") as log:
            try:
                done = subprocess.run(
                    argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=_INSTALL_TIMEOUT,
                    check=False,
                )
            except subprocess.TimeoutExpired as error:
                msg = f"npm install azurite timed out after {_INSTALL_TIMEOUT:g} s; see {log_file}"
                raise self._fail(msg, log_file) from error
        if done.returncode != 0 or not self.script.is_file():
            msg = (
                f"npm install azurite@{AZURITE_VERSION} failed (exit {done.returncode}); "
                f"see {log_file}\n{log_tail(log_file)}"
            )
            raise self._fail(msg, log_file)

    def _data_dirs(self) -> list[Path]:
        return [self.directory / "data"]

    def _launch(self, timeout: float) -> dict[str, Any]:
        node = shutil.which("node")
        if node is None:
            msg = "node is needed to run azurite (install Node.js 20)"
            raise self._fail(msg)
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        blob, queue, table = free_ports(3, self.bind_host)
        argv = [
            node,
            str(self.script),
            "--blobHost", self.bind_host, "--blobPort", str(blob),
            "--queueHost", self.bind_host, "--queuePort", str(queue),
            "--tableHost", self.bind_host, "--tablePort", str(table),
            "--location", str(data),
            # Newer SDKs send API versions Azurite does not know yet; accept them.
            "--skipApiVersionCheck",
            "--loose",
            "--silent",
            "--disableTelemetry",
        ]  # fmt: skip
        record = self._track(spawn("azurite", argv, log_file=self.log_file(), cwd=self.directory))
        self._wait_ports([record], [blob, queue, table], timeout)
        blob_endpoint = f"http://{self.bind_host}:{blob}/{DEV_ACCOUNT_NAME}"
        table_endpoint = f"http://{self.bind_host}:{table}/{DEV_ACCOUNT_NAME}"
        return {
            "address": f"blob {blob_endpoint}, table {table_endpoint}",
            "ports": [blob, queue, table],
            "env": {
                "SAMZA_NB_AZURE_CONNECTION_STRING": azurite_connection_string(
                    blob, queue, table, self.bind_host
                ),
                "SAMZA_NB_AZURE_BLOB_ENDPOINT": blob_endpoint,
                "SAMZA_NB_AZURE_TABLE_ENDPOINT": table_endpoint,
            },
        }

    def _healthy(self, state: Mapping[str, Any]) -> bool:
        return all(port_open(self.bind_host, int(port)) for port in state["ports"])

    def _external(self, value: str) -> tuple[dict[str, str], str]:
        parts = parse_connection_string(value)
        account = parts.get("AccountName", "")
        protocol = parts.get("DefaultEndpointsProtocol", "https")
        suffix = parts.get("EndpointSuffix", "core.windows.net")
        blob = parts.get("BlobEndpoint") or f"{protocol}://{account}.blob.{suffix}"
        table = parts.get("TableEndpoint") or f"{protocol}://{account}.table.{suffix}"
        env = {
            "SAMZA_NB_AZURE_CONNECTION_STRING": value,
            "SAMZA_NB_AZURE_BLOB_ENDPOINT": blob,
            "SAMZA_NB_AZURE_TABLE_ENDPOINT": table,
        }
        # Only the endpoints are printable: the connection string carries the account key.
        return env, f"blob {blob}, table {table}"
