"""A notebook's data folder: a temporary one goes with the kernel, a named one stays."""

from __future__ import annotations

import subprocess
import sys
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


def test_a_named_folder_is_made_and_kept(tmp_path: Path) -> None:
    named = tmp_path / "runs" / "one"
    assert _run(str(named)) == named
    assert (named / "log" / "segment").stat().st_size == 1000
    assert data_folder(named) == named  # again: an existing folder is fine
