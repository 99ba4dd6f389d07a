"""``make demo``: the quickstart on embedded defaults runs, prints its plan and counts, and
checks them against plain Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from samza_nb.demo import main


@pytest.mark.spark
def test_the_demo_counts_every_us_view_through_a_combined_shuffle(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--events", "3000", "--path", str(tmp_path / "log")]) == 0
    printed = capsys.readouterr().out
    assert "(partial aggregates for window-count)" in printed
    assert "OK: all 50 page totals equal the plain-Python count" in printed
    crossed = int(printed.split(" partial counts crossed the shuffle")[0].rsplit(" ", 1)[1])
    assert 0 < crossed < 3000 / 2
