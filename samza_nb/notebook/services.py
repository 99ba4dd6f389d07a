"""The services a notebook needs, found where the rest of the project finds them.

``addresses = use_services("zookeeper")`` looks the services up as the CLI and the tests do
(:func:`samza_nb.services._base.find_services_dir`: ``$SAMZA_NB_SERVICES_DIR``, else the project
root's ``.services`` above the notebook's folder; an address set in the environment, such as
``$SAMZA_NB_ZK_CONNECT``, is the user's own service and wins). A service that is not running is
started there, never silently: one status line says what starts and where while it starts (an
Azurite install, the first time, says so), and then that ``make services-down`` in the project
root stops it. With ``start=False`` a missing service is a one-line
:class:`~samza_nb.errors.ServiceError` saying how to start it.

The result maps env-file keys (``SAMZA_NB_ZK_CONNECT`` …) to addresses; its ``repr`` masks
secrets (an Azure connection string), so displaying it shows nothing private.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from samza_nb import services
from samza_nb.errors import ServiceError
from samza_nb.notebook.status_line import StatusLine
from samza_nb.secrecy import mask_value
from samza_nb.services._base import ServiceInfo, ServicesHome
from samza_nb.services.azurite import AZURITE_VERSION, Azurite

__all__ = ["ServiceAddresses", "use_services"]


class ServiceAddresses(Mapping[str, str]):
    """Env-file keys to addresses; printed with secrets masked."""

    def __init__(self, entries: Mapping[str, str]) -> None:
        self._entries = dict(entries)

    def __getitem__(self, key: str) -> str:
        try:
            return self._entries[key]
        except KeyError:
            msg = f"no {key} among the services' addresses ({', '.join(sorted(self._entries))})"
            raise ServiceError(msg) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        shown = {key: mask_value(key, value) for key, value in sorted(self._entries.items())}
        return f"ServiceAddresses({shown})"


def _stop_hint(home: ServicesHome) -> str:
    project = home.root.parent
    if (project / "Makefile").is_file():
        return f"`make services-down` in {project} stops it"
    return f"`samza-nb services down` in {project} stops it"


def _report(info: ServiceInfo, home: ServicesHome) -> str:
    if info.state == "external":
        return f"{info.name}: your own at {info.address} (set in the environment)"
    return f"{info.name}: running at {info.address} ({home.root})"


def _start(name: str, home: ServicesHome, timeout: float) -> ServiceInfo:
    service = services.SERVICES[name](home)
    what = f"starting {name} in {home.root} (services folder from {home.found_by})"
    with StatusLine(what) as line:
        # Azurite's first start installs its npm package (about 30 s): the line says so.
        if isinstance(service, Azurite) and service.installed_version() != AZURITE_VERSION:
            line.update(f"installing {name} (npm, the first time only: about 30 s) into {home.root}")
            services.install([name])
            line.update(what)
        (info,) = services.up([name], timeout=timeout)
        line.done(
            f"{name}: started at {info.address} in {line.elapsed:.1f} s; {_stop_hint(home)}"
        )
    return info


def use_services(*names: str, start: bool = True, timeout: float = 120.0) -> ServiceAddresses:
    """The addresses of the named services (``zookeeper``, ``kafka``, ``azurite``, ``spark``),
    started in the shared services folder when they do not run (see the module docstring)."""
    unknown = [name for name in names if name not in services.SERVICES]
    if unknown:
        msg = f"unknown service {unknown[0]!r}; known services: {', '.join(services.SERVICES)}"
        raise ServiceError(msg, service=unknown[0])
    home = ServicesHome.resolve()
    for name in names:
        (info,) = services.status([name])
        if info.is_up:
            print(_report(info, home), flush=True)
            continue
        if not start:
            msg = f"{name} is not running in {home.root}; {services.start_hint(home, name)}"
            raise ServiceError(msg, service=name)
        _start(name, home, timeout)
    return ServiceAddresses(services.read_service_env())
