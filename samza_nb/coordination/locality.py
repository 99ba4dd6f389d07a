"""LocationIdProvider: where this process runs, for host affinity (SAMZA.md §9).

The default provider uses the host name of the machine's non-loopback address, as Samza's
DefaultLocationIdProviderFactory does; ``SAMZA_NB_LOCATION_ID`` overrides it (handy to simulate
several hosts on one machine). Custom providers register by name.
"""

from __future__ import annotations

import socket
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from samza_nb.config import Config, environment
from samza_nb.errors import ConfigError
from samza_nb.model import LocationId, check_location_id

__all__ = [
    "DefaultLocationIdProvider",
    "FixedLocationIdProvider",
    "LocationIdProvider",
    "get_location_id_provider",
    "location_id_provider_names",
    "register_location_id_provider",
]


class LocationIdProvider(ABC):
    @abstractmethod
    def location_id(self) -> LocationId: ...


class FixedLocationIdProvider(LocationIdProvider):
    def __init__(self, location_id: str):
        self._location_id = check_location_id(location_id)

    def location_id(self) -> LocationId:
        return self._location_id


class DefaultLocationIdProvider(LocationIdProvider):
    """``SAMZA_NB_LOCATION_ID`` if set, else the host name of a non-loopback local address."""

    def location_id(self) -> LocationId:
        override = environment("SAMZA_NB_LOCATION_ID")
        if override:
            return check_location_id(override, what="SAMZA_NB_LOCATION_ID")
        return _host_name()


def _host_name() -> str:
    name = socket.gethostname()
    try:
        address = socket.gethostbyname(name)
    except OSError:
        return name
    if not address.startswith("127."):
        return name
    # The name resolves to loopback: use the address of the default outbound interface. A UDP
    # "connect" sends nothing; it only asks the kernel which local address it would use.
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            local = probe.getsockname()[0]
    except OSError:
        return name
    if local.startswith("127."):
        return name
    try:
        return socket.gethostbyaddr(local)[0]
    except OSError:
        return str(local)


_REGISTRY: dict[str, Callable[[Config], LocationIdProvider]] = {
    "default": lambda config: DefaultLocationIdProvider(),
}


def register_location_id_provider(name: str, factory: Callable[[Config], LocationIdProvider]) -> None:
    _REGISTRY[name] = factory


def location_id_provider_names() -> list[str]:
    return sorted(_REGISTRY)


def get_location_id_provider(name: str, config: Config | Any = None) -> LocationIdProvider:
    factory = _REGISTRY.get(name)
    if factory is None:
        msg = f"unknown location id provider {name!r}; known: {', '.join(location_id_provider_names())}"
        raise ConfigError(msg)
    return factory(Config.of(config))
