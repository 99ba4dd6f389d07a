"""APP names a StreamApplication or a function that builds one; a function declared to return
something else (a script's main) is never run to find out."""

from __future__ import annotations

from typing import Any, Optional, Union

import pytest

from samza_nb.api import StreamApplication
from samza_nb.api.application import StreamApplication as App
from samza_nb.api.loading import as_application
from samza_nb.errors import ConfigError


class _MyApp(StreamApplication):
    pass


def _optional() -> Optional[StreamApplication]:  # noqa: UP045 - the older spelling is the point
    return StreamApplication("optional")


def _union() -> Union[StreamApplication, None]:  # noqa: UP007
    return StreamApplication("union")


def _subclass() -> _MyApp:
    return _MyApp("subclass")


def _quoted() -> "Optional[_MyApp]":  # noqa: UP037, UP045
    return _MyApp("quoted")


def _alias() -> App:
    return App("alias")


def _any() -> Any:
    return StreamApplication("any")


def _pipe() -> StreamApplication | None:
    return StreamApplication("pipe")


def _unannotated():  # type: ignore[no-untyped-def]  # noqa: ANN202
    return StreamApplication("unannotated")


def _unresolved() -> Nope:  # type: ignore[name-defined]  # noqa: F821
    return StreamApplication("unresolved")


@pytest.mark.parametrize(
    "factory", [_optional, _union, _subclass, _quoted, _alias, _any, _pipe, _unannotated, _unresolved]
)
def test_factories_declared_to_return_an_application_or_nothing_said_are_called(factory: Any) -> None:
    assert isinstance(as_application(factory, "mod:factory"), StreamApplication)


def test_a_function_declared_to_return_something_else_is_not_called() -> None:
    called = []

    def main() -> int:
        called.append(True)
        return 0

    with pytest.raises(ConfigError, match="declared to return int, not a StreamApplication: not called"):
        as_application(main, "mod:main")
    assert called == []
