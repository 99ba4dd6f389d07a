"""A notebook's data folder: the one its parameters name, else a temporary one of this kernel.

Papermill and a person both run a notebook many times; each run's streams, stores and logs go to
a fresh temporary folder that the kernel removes when it exits (a shutdown, a restart, the end of
a headless run), so runs do not pile up under the temp dir. A folder the notebook's parameters
name is the user's: it is kept.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

__all__ = ["data_folder"]


def data_folder(given: str | Path = "", *, prefix: str = "samza-nb-") -> Path:
    """``given`` (created if missing, kept), or when empty a fresh folder under the temp dir
    named ``prefix…``, removed with everything in it when this interpreter exits."""
    if str(given):
        folder = Path(given)
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
