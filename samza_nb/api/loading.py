"""Finding an application by name: ``package.module:attribute`` (the CLI and the magics).

The attribute may be a :class:`StreamApplication` or a function of no arguments that builds one
(so a module can defer creating its systems until it is run).
"""

from __future__ import annotations

import importlib
import traceback
import types
import typing
from collections.abc import Callable
from typing import Any

from samza_nb.api.application import StreamApplication
from samza_nb.errors import ConfigError, SamzaNbError

__all__ = ["as_application", "load_application"]


def as_application(value: Any, name: str) -> StreamApplication:
    """``value`` itself if it is an application, else what calling it (no arguments) returns."""
    if isinstance(value, StreamApplication):
        return value
    if callable(value):
        _check_declared_return(value, name)
        built = _call_factory(value, name)
        if isinstance(built, StreamApplication):
            return built
        msg = f"{name}() returned {type(built).__name__}, not a StreamApplication"
        raise ConfigError(msg)
    msg = (
        f"{name} is a {type(value).__name__}, not a StreamApplication or a function of no "
        f"arguments returning one"
    )
    raise ConfigError(msg)


def _check_declared_return(factory: Callable[..., Any], name: str) -> None:
    """A function whose return annotation names no StreamApplication (a script's
    ``main() -> int``) is refused before it runs: calling it could do anything (write data,
    parse sys.argv). An annotation that does not resolve, ``Any``, an Optional or a union
    holding an application or a subclass, and no annotation at all, are all called."""
    try:
        declared = typing.get_type_hints(factory).get("return")
    except Exception:  # an annotation naming what the module does not import: not judged
        return
    if declared is None or _may_be_an_application(declared):
        return
    shown = getattr(declared, "__name__", None) or str(declared)
    msg = (
        f"{name} is a function declared to return {shown}, not a StreamApplication: not "
        "called (name the application, or a function of no arguments that builds it)"
    )
    raise ConfigError(msg)


def _may_be_an_application(hint: Any) -> bool:
    if hint is Any:
        return True
    members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else ()
    if members:
        return any(_may_be_an_application(member) for member in members)
    origin = typing.get_origin(hint) or hint
    return isinstance(origin, type) and issubclass(origin, StreamApplication)


def _call_factory(factory: Callable[[], Any], name: str) -> Any:
    try:
        return factory()
    except SamzaNbError:
        raise
    except Exception as error:
        frames = traceback.extract_tb(error.__traceback__)
        if isinstance(error, TypeError) and len(frames) == 1:  # the call itself: it takes arguments
            msg = f"{name} must be callable with no arguments to build the application: {error}"
            raise ConfigError(msg) from error
        # The user's factory failed: its error, and where it raised.
        at = f" at {frames[-1].filename}:{frames[-1].lineno}" if len(frames) > 1 else ""
        msg = f"{name} raised while building the application{at}: {type(error).__name__}: {error}"
        raise ConfigError(msg) from error


def load_application(spec: str) -> StreamApplication:
    """Import ``package.module:attribute`` and return the application it names."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        msg = f"application {spec!r} must be written module:attribute, e.g. my_jobs.pages:app"
        raise ConfigError(msg)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            msg = f"application {spec!r}: no module named {missing!r} (is it on PYTHONPATH?)"
        else:  # the application's module was found; something it imports was not
            msg = (
                f"application {spec!r}: its module {module_name!r} imports {missing!r}, which "
                f"is not installed here ({error})"
            )
        raise ConfigError(msg) from error
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            # What could be meant: applications and functions of the module's own, not imports.
            owned = [
                n for n in dir(value)
                if not n.startswith("_")
                and (isinstance(getattr(value, n), StreamApplication)
                     or getattr(getattr(value, n), "__module__", None) == getattr(value, "__name__", None))
            ]
            msg = f"application {spec!r}: {module_name} has no attribute {attribute!r}; it has {sorted(owned)}"
            raise ConfigError(msg)
        value = getattr(value, part)
    return as_application(value, spec)
