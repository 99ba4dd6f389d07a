"""How a place in user code is named in messages: ``<cell 5>:3`` for a notebook cell's code,
else a path relative to the working directory (absolute when outside it).

Shared by the API (where an operator was declared) and the runtime (where a user function
raised); IPython is consulted only when this process has imported it.
"""

from __future__ import annotations

import os
import sys

__all__ = ["describe_source", "short_filename"]


def describe_source(filename: str, lineno: int) -> str:
    """``file:line`` with the file named as :func:`short_filename` does."""
    return f"{short_filename(filename)}:{lineno}"


def short_filename(filename: str) -> str:
    """``<cell N>`` for a notebook cell's code file, else a path relative to the working
    directory when it lies below it."""
    if "ipykernel_" in filename or filename.startswith("<ipython-input"):
        cell = _ipython_cell(filename)
        return f"<cell {cell}>" if cell is not None else "<cell>"
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if relative.startswith("..") else relative


def _ipython_cell(filename: str) -> int | None:
    """The execution count of a notebook cell's code file, if IPython knows it here."""
    ipython_module = sys.modules.get("IPython")
    if ipython_module is None:
        return None
    try:
        shell = ipython_module.get_ipython()
        number = shell.compile._filename_map.get(filename)
    except AttributeError:
        return None
    return number if isinstance(number, int) else None
