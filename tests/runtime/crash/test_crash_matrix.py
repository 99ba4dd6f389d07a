"""The crash matrix: every named kill point × every scenario (stateless, windowed, two
shuffles, drain, rebalance). A child process runs the scenario and is SIGKILLed the n-th time it
reaches the point (samza_nb/runtime/faults.py); the job then restarts and runs to its end, and
its outputs must equal the plain-Python result: nothing lost, nothing counted twice, a drain
never wedged. Most cells run task epochs in-process (the local executor); one Spark cell per
point checks the same with task epochs in Spark's Python workers.

The outcome of every cell is written to .artifacts/crash-matrix.md.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from samza_nb.runtime.faults import KILL_POINTS
from samza_nb.systems import EmbeddedSystem

sys.path.insert(0, str(Path(__file__).parent))
import scenarios  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
REPORT = ROOT / ".artifacts" / "crash-matrix.md"

#: Which points a scenario reaches (the others never happen there).
REACHES = {
    "stateless": {"after-output-append", "after-flush-before-commit", "mid-commit"},
    "windowed": {"after-output-append", "mid-store-flush", "after-flush-before-commit", "mid-commit", "in-retention"},
    "two-shuffles": {"after-output-append", "mid-store-flush", "after-flush-before-commit", "mid-commit", "in-retention"},
    "drain": {"in-drain-epoch", "after-output-append", "mid-store-flush", "after-flush-before-commit", "mid-commit"},
    "rebalance": {"in-rebalance", "after-output-append", "mid-store-flush", "after-flush-before-commit", "mid-commit"},
}
#: The hit that kills: late enough that the run committed epochs of its own first.
NTH = {"in-drain-epoch": 2, "in-rebalance": 1, "in-retention": 2}
#: One Spark cell per point: the scenario where the point matters most.
SPARK_CELLS = {
    "in-drain-epoch": "drain",
    "after-output-append": "windowed",
    "mid-store-flush": "windowed",
    "after-flush-before-commit": "two-shuffles",
    "mid-commit": "windowed",
    "in-retention": "two-shuffles",
    "in-rebalance": "rebalance",
}
CELLS = [
    (point, scenario, "local") for scenario, points in REACHES.items() for point in KILL_POINTS if point in points
] + [(point, scenario, "spark") for point, scenario in SPARK_CELLS.items()]

_outcomes: dict[tuple[str, str, str], str] = {}


def _kill_run(scenario: str, folder: Path, point: str, executor: str, tmp: Path) -> int:
    env = dict(os.environ)
    env.update(
        SAMZA_NB_KILL_AT=f"{point}:{NTH.get(point, 3)}",
        SAMZA_NB_KILL_COUNTER=str(tmp / "kill-counter"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    if executor == "spark":
        env["SAMZA_NB_SPARK_MASTER"] = "local[2]"
    process = subprocess.run(
        [sys.executable, str(Path(scenarios.__file__)), scenario, str(folder), executor],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=300,
        check=False,
        start_new_session=True,
    )
    if process.returncode not in (0, -signal.SIGKILL):
        pytest.fail(f"the {scenario} child failed (exit {process.returncode}):\n{process.stderr.decode()[-3000:]}")
    return process.returncode


@pytest.mark.parametrize(("point", "scenario", "executor"), CELLS, ids=["-".join(cell) for cell in CELLS])
def test_killed_at_a_named_point_then_restarted_counts_exactly(
    point: str, scenario: str, executor: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if executor == "spark":
        request.getfixturevalue("spark")  # the restart below shares the suite's session
    folder = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=folder)
    scenarios.prepare(scenario, system)
    code = _kill_run(scenario, folder, point, executor, tmp_path)
    assert code == -signal.SIGKILL, f"{scenario} finished without reaching {point}"
    job = scenarios.execute(scenario, system, executor)
    assert job.status().state in ("finished", "drained")
    got, want = scenarios.outputs(scenario, job), scenarios.expected(scenario, job)
    assert got == want, f"lost {want - got}, doubled {got - want}"
    assert sum(want.values()) > 0
    _outcomes[(point, scenario, executor)] = "killed, restarted, exact"


def teardown_module() -> None:
    if not _outcomes:
        return
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    columns = list(REACHES)
    lines = ["| point | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for point in KILL_POINTS:
        cells = []
        for scenario in columns:
            marks = [
                executor + (" ✓" if (point, scenario, executor) in _outcomes else " —")
                for p, s, executor in CELLS
                if p == point and s == scenario
            ]
            cells.append(", ".join(marks) or "n/a")
        lines.append(f"| {point} | " + " | ".join(cells) + " |")
    legend = "\n✓ killed there, restarted, outputs exact; — not run (deselected) or failed\n"
    REPORT.write_text("\n".join(lines) + "\n" + legend)
