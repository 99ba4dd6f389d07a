"""A notebook's data folder: the one its parameters name, else a temporary one of this kernel.

Papermill and a person both run a notebook many times; each run's streams, stores and logs go to
a fresh temporary folder that the kernel removes when it exits (a shutdown, a restart, the end of
a headless run), so runs do not pile up under the temp dir. A folder the notebook's parameters
name is the user's: it is kept.

The kernel's Spark processes end with it and may still write in the folder after its exit
handlers ran (a Python worker closing its stores, SQLite closing its log), so a small detached
process removes it again once the kernel has ended.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
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
    atexit.register(_remove, folder)
    return folder


#: Run detached: wait (at most a minute) for the process to end, then remove the folder, twice
#: a second apart (its last writers end with it).
_REMOVE_AFTER = """
import os, shutil, sys, time
pid, folder = int(sys.argv[1]), sys.argv[2]
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    time.sleep(0.1)
for _ in range(2):
    time.sleep(1.0)
    shutil.rmtree(folder, ignore_errors=True)
"""


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    try:
        subprocess.Popen(
            [sys.executable, "-c", _REMOVE_AFTER, str(os.getpid()), str(folder)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:  # no process to spare at exit: what the first removal left stays
        pass
