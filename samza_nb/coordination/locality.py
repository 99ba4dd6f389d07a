"""Location ids: where a processor runs, in the sense of "can share local state" (SAMZA.md §9).

The default provider derives the location from the host name as Samza does; the environment
variable ``SAMZA_NB_LOCATION_ID`` overrides it for every processor started in the process.
Custom providers are registered by name (``locationid.provider.factory``), or named by an
import path ``"package.module:factory"``; a factory takes the job Config.

Unlike Samza (Appendix A #5), the same provider gives both the processor locality and the task
locality, so the two always match.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import ipaddress
import socket
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from samza_nb.config import Config, environment
from samza_nb.errors import ConfigError
from samza_nb.model import LocationId, check_location_id

__all__ = [
    "DefaultLocationIdProvider",
    "FixedLocationIdProvider",
    "LocationIdProvider",
    "get_location_id_provider",
    "host_location_id",
    "location_id_provider_names",
    "register_location_id_provider",
]


class LocationIdProvider(ABC):
    """Gives the location id of the processors of this process.

    Processors with the same location id must be able to read and write each other's local
    stores (the SEP's contract for custom providers).
    """

    @abstractmethod
    def location_id(self) -> LocationId:
        """The location id (a non-empty string)."""


class FixedLocationIdProvider(LocationIdProvider):
    """Always the same location (tests, simulated clusters, containers with a known slot).

    >>> FixedLocationIdProvider("rack-1/host-7").location_id()
    'rack-1/host-7'
    """

    def __init__(self, location_id: LocationId) -> None:
        self._location_id = check_location_id(location_id, what="FixedLocationIdProvider")

    def __repr__(self) -> str:
        return f"FixedLocationIdProvider({self._location_id!r})"

    def location_id(self) -> LocationId:
        return self._location_id


class DefaultLocationIdProvider(LocationIdProvider):
    """``SAMZA_NB_LOCATION_ID`` if set, else :func:`host_location_id`."""

    def __repr__(self) -> str:
        return "DefaultLocationIdProvider()"

    def location_id(self) -> LocationId:
        return environment("SAMZA_NB_LOCATION_ID") or host_location_id()


def _is_usable(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)


def _reverse_lookup(address: str, timeout: float) -> str:
    # gethostbyaddr has no timeout of its own; a broken resolver must not hang a processor.
    result: list[str] = []

    def lookup() -> None:
        try:
            result.append(socket.gethostbyaddr(address)[0])
        except OSError:
            pass

    worker = threading.Thread(target=lookup, name="samza_nb-location-lookup", daemon=True)
    worker.start()
    worker.join(timeout)
    return result[0] if result and result[0] else address


def _outbound_address() -> str | None:
    # Connecting a UDP socket sends nothing; it only asks the kernel which local address
    # would route to the target, i.e. the primary non-loopback interface.
    for family, target in (
        (socket.AF_INET, ("10.255.255.255", 1)),
        (socket.AF_INET6, ("fd00::1", 1)),
    ):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect(target)
                address = str(probe.getsockname()[0])
        except OSError:
            continue
        if _is_usable(address):
            return address
    return None


@functools.cache
def host_location_id(lookup_timeout: float = 2.0) -> LocationId:
    """The host's location id, derived as Samza's default provider does (§9).

    The host name, if it resolves to a non-loopback address; otherwise the name of the host's
    first usable non-loopback, non-link-local address (its IP text when reverse lookup fails).
    Computed once per process.
    """
    host = socket.gethostname() or "localhost"
    try:
        addresses = [info[4][0] for info in socket.getaddrinfo(host, None)]
    except OSError:
        addresses = []
    if addresses and _is_usable(str(addresses[0])):
        return host
    address = _outbound_address()
    if address is None:
        return host
    return _reverse_lookup(address, lookup_timeout)


LocationIdProviderFactory = Callable[[Config], LocationIdProvider]

_PROVIDERS: dict[str, LocationIdProviderFactory] = {
    "default": lambda config: DefaultLocationIdProvider(),
}


def location_id_provider_names() -> list[str]:
    """The registered provider names."""
    return sorted(_PROVIDERS)


def register_location_id_provider(name: str, factory: LocationIdProviderFactory) -> None:
    """Register a provider; ``factory(config)`` builds it."""
    if not isinstance(name, str) or not name or ":" in name:
        msg = f"location id provider name must be a non-empty string without ':', got {name!r}"
        raise ConfigError(msg)
    _PROVIDERS[name] = factory


def _import_factory(path: str) -> LocationIdProviderFactory:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        factory = getattr(module, attribute)
    except (ImportError, AttributeError) as error:
        msg = f"locationid.provider.factory {path!r} cannot be imported: {error}"
        raise ConfigError(msg) from error
    if not callable(factory):
        msg = f"locationid.provider.factory {path!r} is not callable"
        raise ConfigError(msg)
    result: LocationIdProviderFactory = factory
    return result


def get_location_id_provider(
    name: str | None = None, config: Config | Mapping[str, Any] | None = None
) -> LocationIdProvider:
    """A provider by registered name or ``"module:factory"`` path.

    Without a name, ``locationid.provider.factory`` of ``config`` decides (default
    ``"default"``).

    >>> get_location_id_provider("default")
    DefaultLocationIdProvider()
    >>> get_location_id_provider("defualt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    samza_nb.errors.ConfigError: unknown location id provider 'defualt'; did you mean 'default'? known: ...
    """
    resolved = Config.of(config)
    provider_name = name or resolved.get_str("locationid.provider.factory") or "default"
    if ":" in provider_name:
        factory = _import_factory(provider_name)
    else:
        found = _PROVIDERS.get(provider_name)
        if found is None:
            close = difflib.get_close_matches(provider_name, list(_PROVIDERS), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            known = ", ".join(location_id_provider_names())
            msg = (
                f"unknown location id provider {provider_name!r}; {hint}known: {known} "
                "(or give 'module:factory')"
            )
            raise ConfigError(msg)
        factory = found
    provider = factory(resolved)
    if not isinstance(provider, LocationIdProvider):
        msg = (
            f"location id provider {provider_name!r} built {type(provider).__name__}, "
            "not a LocationIdProvider"
        )
        raise ConfigError(msg)
    return provider
