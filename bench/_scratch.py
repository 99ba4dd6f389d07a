"""A bench's scratch folder (a helper module: `make bench` does not run it)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path


def scratch_dir(prefix: str) -> Path:
    """A fresh folder under the temp dir, removed when the bench's interpreter exits (also after
    an error or Ctrl-C): a 1M-event bench writes hundreds of MB there."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
