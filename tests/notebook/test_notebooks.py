"""Every notebook in notebooks/ runs under papermill and checks its own results (STYLE rule 14).

The notebooks assert what they compute (counts against plain Python, drain states, moved
tasks), so a wrong result fails its cell and therefore this test. Executed copies are kept in
``.artifacts/notebooks/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

from ._execution import PARAMETER_NAMES, execute, notebook_paths

NOTEBOOKS = notebook_paths()
EXPECTED = ("01-quickstart", "02-stages-and-shuffles", "03-drain", "04-groupers-and-host-affinity")


def _code(path: Path) -> list[nbformat.NotebookNode]:
    notebook = nbformat.read(path, as_version=4)
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def test_the_tutorial_notebooks_are_there() -> None:
    assert {path.stem for path in NOTEBOOKS} >= set(EXPECTED)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_has_a_parameters_cell_and_checks_its_results(path: Path) -> None:
    cells = _code(path)
    tagged = [cell for cell in cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: expected one code cell tagged 'parameters'"
    assigned = {
        target.id
        for node in ast.parse(tagged[0].source).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    missing = set(PARAMETER_NAMES) - assigned
    assert not missing, f"{path.name}: the parameters cell does not set {sorted(missing)}"
    # Results are checked in the notebook itself, so papermill fails on a wrong answer.
    assert any("assert " in cell.source for cell in cells), f"{path.name} asserts nothing"
    assert all(not cell.outputs for cell in cells), f"{path.name} is committed with outputs"


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs_under_papermill(path: Path) -> None:
    executed = nbformat.read(execute(path.stem), as_version=4)
    injected = [
        cell for cell in executed.cells if "injected-parameters" in cell.metadata.get("tags", [])
    ]
    assert len(injected) == 1, "papermill did not inject the test parameters"
    errors = [
        output
        for cell in executed.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
    assert executed.metadata.papermill.get("exception") is None
