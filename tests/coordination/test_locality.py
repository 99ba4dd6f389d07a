"""Location id providers (SAMZA.md §9)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from samza_nb.config import Config
from samza_nb.coordination import (
    DefaultLocationIdProvider,
    FixedLocationIdProvider,
    LocationIdProvider,
    get_location_id_provider,
    host_location_id,
    location_id_provider_names,
    register_location_id_provider,
)
from samza_nb.coordination import locality as locality_module
from samza_nb.errors import ConfigError, ModelError


@pytest.fixture(autouse=True)
def _fresh_host_cache() -> Iterator[None]:
    host_location_id.cache_clear()
    yield
    host_location_id.cache_clear()


def test_environment_variable_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMZA_NB_LOCATION_ID", "rack-7")
    assert get_location_id_provider().location_id() == "rack-7"


def test_default_is_the_host_name_when_it_is_not_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAMZA_NB_LOCATION_ID", raising=False)
    monkeypatch.setattr(socket, "gethostname", lambda: "worker-3")
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda host, port: [(socket.AF_INET, 0, 0, "", ("10.1.2.3", 0))]
    )
    assert DefaultLocationIdProvider().location_id() == "worker-3"


def test_loopback_host_name_falls_back_to_an_interface_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SAMZA_NB_LOCATION_ID", raising=False)
    monkeypatch.setattr(socket, "gethostname", lambda: "localhost")
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda host, port: [(socket.AF_INET, 0, 0, "", ("127.0.1.1", 0))]
    )
    monkeypatch.setattr(locality_module, "_outbound_address", lambda: "10.9.8.7")
    monkeypatch.setattr(
        socket, "gethostbyaddr", lambda address: ("node-10-9-8-7.example", [], [address])
    )
    assert host_location_id() == "node-10-9-8-7.example"
    host_location_id.cache_clear()

    def no_name(address: str) -> tuple[str, list[str], list[str]]:
        msg = "no reverse record"
        raise OSError(msg)

    monkeypatch.setattr(socket, "gethostbyaddr", no_name)
    assert host_location_id() == "10.9.8.7"


def test_without_any_usable_address_the_host_name_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "lonely")

    def unresolvable(host: str, port: object) -> list:
        msg = "no such host"
        raise OSError(msg)

    monkeypatch.setattr(socket, "getaddrinfo", unresolvable)
    monkeypatch.setattr(locality_module, "_outbound_address", lambda: None)
    assert host_location_id() == "lonely"


def test_real_host_gives_a_non_empty_location() -> None:
    assert isinstance(host_location_id(), str) and host_location_id()


def test_config_picks_the_provider_and_custom_ones_register() -> None:
    register_location_id_provider(
        "slot", lambda config: FixedLocationIdProvider(config["processor.slot"])
    )
    assert "slot" in location_id_provider_names()
    config = Config({"locationid.provider.factory": "slot", "processor.slot": "slice-3/instance-1"})
    assert get_location_id_provider(config=config).location_id() == "slice-3/instance-1"


def fixed_factory(config: Config) -> LocationIdProvider:
    """Used by the import-path test."""
    return FixedLocationIdProvider("imported")


def test_import_path_provider() -> None:
    provider = get_location_id_provider(f"{__name__}:fixed_factory")
    assert provider.location_id() == "imported"
    with pytest.raises(ConfigError, match="cannot be imported"):
        get_location_id_provider("no.such.module:factory")


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="known: .*default"):
        get_location_id_provider("hostname-please")


def test_provider_must_build_a_provider_and_fixed_needs_text() -> None:
    register_location_id_provider("broken", lambda config: "not a provider")  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigError, match="not a LocationIdProvider"):
        get_location_id_provider("broken")
    with pytest.raises(ModelError, match="non-empty"):
        FixedLocationIdProvider("  ")
