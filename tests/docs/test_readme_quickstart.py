"""The README's Python quickstart runs as written, and runs again in the same process (a
notebook cell run twice): its output is the count the snippet's input implies, both times."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.spark


def _quickstart() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quickstart (Python)", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert match, "the README has no Python quickstart block"
    return match.group(1)


def test_the_readme_quickstart_runs_and_runs_again(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMZA_NB_HOME", str(tmp_path))
    # The snippet's fresh folders (tempfile.mkdtemp) go under tmp_path, not the machine's /tmp.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = compile(_quickstart(), "README.md quickstart", "exec")
    for _run in range(2):
        scope: dict[str, Any] = {}
        exec(code, scope)  # noqa: S102 - the documented snippet, as a user runs it
        frame = scope["job"].collect("counts")
        assert frame.groupby("key")["value"].sum().to_dict() == {"home": 10}
