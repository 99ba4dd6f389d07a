"""Checks that run where the user wrote the call: user functions, locations, descriptors."""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import Any

from samza_nb.errors import PlanError
from samza_nb.plan.source_names import describe_source

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent) + os.sep


def user_location() -> str | None:
    """``file:line`` of the innermost caller outside the samza_nb package (the user's call)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_PACKAGE_DIR):
            return describe_source(filename, frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return None


def describe(value: Any) -> str:
    """A short description of a value for error messages."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def check_function(fn: Any, *, what: str, operator: str, arity: int, hint: str = "") -> None:
    """Raise PlanError unless ``fn`` is callable with ``arity`` positional arguments."""
    if not callable(fn):
        msg = f"{operator}: {what} must be a function, got {describe(fn)}"
        raise PlanError(msg)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: trust them
        return
    try:
        signature.bind(*([None] * arity))
    except TypeError:
        name = getattr(fn, "__name__", type(fn).__name__)
        noun = "argument" if arity == 1 else "arguments"
        shape = f" ({hint})" if hint else ""
        msg = f"{operator}: {what} {name}{signature} must accept {arity} positional {noun}{shape}"
        raise PlanError(msg) from None
