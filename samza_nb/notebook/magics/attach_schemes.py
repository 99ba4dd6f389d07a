"""Attach to a running distributed job by URL: a registry of openers keyed by URL scheme.

``attach("zookeeper://127.0.0.1:2181/chroot", "page-views")`` returns an
:class:`~samza_nb.notebook.magics.attach_handle.AttachedJob`. The URL's query may name the job
too (``?app=NAME&job=ID``); arguments win over it. Another coordinator plugs in with
``register_attach_scheme("azure", opener)``, where ``opener(target, config)`` gets the parsed
:class:`AttachTarget` and a Config naming the job (``app.name``, ``job.id``) and returns the
AttachedJob. Built-in openers are imported on first use.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.notebook.magics.attach_handle import AttachedJob
from samza_nb.secrecy import redact

__all__ = ["AttachTarget", "attach", "attach_scheme_names", "parse_attach_url", "register_attach_scheme"]


@dataclass(frozen=True)
class AttachTarget:
    """A parsed attach URL: ``scheme``, ``address`` (everything between ``scheme://`` and the
    query, e.g. ``host:port/chroot``) and the query's entries."""

    scheme: str
    address: str
    query: dict[str, str] = field(default_factory=dict)

    @property
    def display(self) -> str:
        """The URL without credentials (for reprs, errors and widgets)."""
        return redact(f"{self.scheme}://{self.address}")


AttachOpener = Callable[[AttachTarget, Config], AttachedJob]

_OPENERS: dict[str, AttachOpener] = {}
#: Built-in schemes: name → (module, attribute), imported on first use.
_BUILTINS: dict[str, tuple[str, str]] = {
    "zookeeper": ("samza_nb.notebook.magics.attach_zookeeper", "open_zookeeper"),
    "azure": ("samza_nb.notebook.magics.attach_azure", "open_azure"),
}


def register_attach_scheme(scheme: str, opener: AttachOpener) -> None:
    """Make ``scheme://...`` URLs attachable through ``opener(target, config)``."""
    if not isinstance(scheme, str) or not scheme.isidentifier():
        msg = f"an attach scheme must be a simple name, got {scheme!r}"
        raise ConfigError(msg)
    _OPENERS[scheme] = opener


def attach_scheme_names() -> list[str]:
    _load_builtins()
    return sorted(_OPENERS)


def parse_attach_url(url: str) -> AttachTarget:
    """``scheme://address[?key=value&...]`` → :class:`AttachTarget`.

    >>> parse_attach_url("zookeeper://127.0.0.1:2181/jobs?app=pages&job=2")
    AttachTarget(scheme='zookeeper', address='127.0.0.1:2181/jobs', query={'app': 'pages', 'job': '2'})
    """
    if not isinstance(url, str) or "://" not in url:
        msg = f"attach needs a URL like zookeeper://HOST:PORT/chroot, got {url!r}"
        raise ConfigError(msg)
    parts = urlsplit(url)
    address = url.split("://", 1)[1].split("?", 1)[0].split("#", 1)[0]
    if not parts.scheme or not address:
        msg = f"attach needs a URL like zookeeper://HOST:PORT/chroot, got {redact(url)!r}"
        raise ConfigError(msg)
    return AttachTarget(parts.scheme.lower(), address, dict(parse_qsl(parts.query)))


def attach(
    url: str,
    app: str | None = None,
    *,
    job_id: str | None = None,
    config: Config | Mapping[str, Any] | None = None,
) -> AttachedJob:
    """Attach to the job ``app`` (its app name; or ``?app=`` in the URL) with job id
    ``job_id`` (or ``?job=``, default ``1``) at ``url``; ``config`` adds settings such as
    ``job.coordinator.zk.session.timeout.ms``."""
    target = parse_attach_url(url)
    _load_builtins()
    opener = _OPENERS.get(target.scheme)
    if opener is None:
        close = difflib.get_close_matches(target.scheme, list(_OPENERS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        msg = f"cannot attach to {target.scheme}:// URLs; {hint}known: {', '.join(sorted(_OPENERS))}"
        raise ConfigError(msg)
    name = app or target.query.get("app")
    if not name:
        msg = f"attach {target.display}: name the application (APP, or ?app=NAME in the URL)"
        raise ConfigError(msg)
    entries = dict(Config.of(config).to_dict()) if config is not None else {}
    entries["app.name"] = name
    entries["job.id"] = job_id or target.query.get("job") or entries.get("job.id") or "1"
    entries.pop("app.id", None)
    return opener(target, Config(entries))


def _load_builtins() -> None:
    for scheme, (module, attribute) in _BUILTINS.items():
        if scheme not in _OPENERS:
            _OPENERS[scheme] = getattr(importlib.import_module(module), attribute)
