"""Every notebook in notebooks/ runs under papermill and checks its own results (STYLE rule 14).

The notebooks assert what they compute (counts against plain Python, drain states, moved
tasks), so a wrong result fails its cell and therefore this test. Executed copies are kept in
``.artifacts/notebooks/``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from ._execution import PARAMETER_NAMES, notebook_paths

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
def test_notebook_runs_under_papermill(
    path: Path, executed_notebook: Callable[[str], Path]
) -> None:
    executed = nbformat.read(executed_notebook(path.stem), as_version=4)
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


def test_the_quickstart_names_the_operators_that_take_an_op_id() -> None:
    import inspect
    import re

    from samza_nb.api.stream import MessageStream

    notebook = nbformat.read(NOTEBOOKS[0].parent / "01-quickstart.ipynb", as_version=4)
    text = next(cell.source for cell in notebook.cells if "`op_id=`" in cell.source)
    taking = re.search(r"—(.*?)— take an id", text, re.S)
    others = re.search(r"The others \((.*?)\) take no `op_id`", text, re.S)
    assert taking and others, text
    for names, takes in ((taking.group(1), True), (others.group(1), False)):
        for name in re.findall(r"`(\w+)`", names):
            parameters = inspect.signature(getattr(MessageStream, name)).parameters
            assert ("op_id" in parameters) is takes, f"01 says {name} {'takes' if takes else 'takes no'} op_id"
