"""Where user code raised: the user's own frame in a failure's traceback, and its name.

A task catches whatever a user function raised (in a Spark worker or in-process). The line a
person wants to see is the innermost frame of *their* code: not samza_nb's, not the standard
library's, not an installed package's (a ``json.loads`` that raised is called from the user's
line, which is the one to show). ``raising_frame`` finds it on the worker, where the traceback
lives; ``describe`` names the file on the driver, where IPython knows which cell a code file
is (``<cell 5>:3``).
"""

from __future__ import annotations

import linecache
import os
import sysconfig
import traceback
from pathlib import Path

from samza_nb.plan.source_names import describe_source

__all__ = ["describe", "raising_frame", "source_line"]

#: samza_nb itself: frames in it are the engine's, not the user's.
_PACKAGE_DIR = str(Path(__file__).resolve().parents[2]) + os.sep


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths.get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(str(Path(d).resolve()) + os.sep for d in dirs if d)


def _is_user_file(filename: str) -> bool:
    if filename.startswith("<frozen") or filename.startswith(_PACKAGE_DIR):
        return False
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return True
    return not resolved.startswith(_library_dirs()) and not resolved.startswith(_PACKAGE_DIR)


def raising_frame(error: BaseException) -> tuple[str, int, str] | None:
    """(file name, line number, source line) of the innermost user frame of ``error``'s
    traceback; else the innermost frame outside samza_nb; None when there is neither."""
    frames = traceback.extract_tb(error.__traceback__)
    outside = [f for f in frames if not f.filename.startswith(_PACKAGE_DIR)]
    users = [f for f in outside if _is_user_file(f.filename)]
    candidates = users or outside
    if not candidates:
        return None
    chosen = candidates[-1]
    if chosen.lineno is None:
        return None
    return chosen.filename, chosen.lineno, (chosen.line or "").strip()


def source_line(filename: str, lineno: int) -> str:
    """The stripped source line, where this process knows it (notebook cells: the driver)."""
    return linecache.getline(filename, lineno).strip()


def describe(filename: str, lineno: int) -> str:
    """``<cell N>:line`` for a notebook cell's code, else a path relative to the working
    directory (absolute when outside it)."""
    return describe_source(filename, lineno)
