"""A notebook's data folder: a temporary one goes with the kernel, a named one stays."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from samza_nb.notebook.folders import data_folder

_RUN = """
import sys
from samza_nb.notebook.folders import data_folder
folder = data_folder(sys.argv[1], prefix="samza-nb-test-folders-")
(folder / "log").mkdir()
(folder / "log" / "segment").write_bytes(b"x" * 1000)
print(folder)
"""


def _run(given: str) -> Path:
    done = subprocess.run(
        [sys.executable, "-c", _RUN, given], capture_output=True, text=True, timeout=60, check=True
    )
    return Path(done.stdout.strip())


def test_a_temporary_folder_is_removed_when_the_interpreter_exits() -> None:
    folder = _run("")
    assert folder.name.startswith("samza-nb-test-folders-")
    assert not folder.exists()


#: Writes in the folder once the interpreter that made it removed it at exit, as Spark's
#: workers may.
_LATE_CHILD = """
import os, sys, time
deadline = time.monotonic() + 30
while os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.01)
os.makedirs(sys.argv[1] + "/stores", exist_ok=True)
with open(sys.argv[1] + "/stores/LOG", "w") as log:
    log.write("late")
"""

_LATE_WRITER = """
import subprocess, sys
from samza_nb.notebook.folders import data_folder
folder = data_folder("", prefix="samza-nb-test-folders-")
print(folder, flush=True)
subprocess.Popen([sys.executable, "-c", sys.argv[1], str(folder)])
"""


def test_a_temporary_folder_written_after_the_interpreter_exits_is_removed_too() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LATE_WRITER, _LATE_CHILD],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    folder = Path(done.stdout.strip())
    deadline = time.monotonic() + 15
    seen_back = False
    while time.monotonic() < deadline:
        seen_back = seen_back or folder.exists()
        if seen_back and not folder.exists():
            break
        time.sleep(0.05)
    assert seen_back, "the late writer never wrote (the test proves nothing)"
    assert not folder.exists()


def test_a_named_folder_is_made_and_kept(tmp_path: Path) -> None:
    named = tmp_path / "runs" / "one"
    assert _run(str(named)) == named
    assert (named / "log" / "segment").stat().st_size == 1000
    assert data_folder(named) == named  # again: an existing folder is fine
