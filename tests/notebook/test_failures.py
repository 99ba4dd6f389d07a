"""A failed job as a notebook shows it (samza_nb/notebook/failures.py): one short block for a
person, the full traceback plus the task's for batch runs; from the magics and from the Python
API alike. In-process executor; the magic's Spark path is in test_magics.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from samza_nb.api import StreamApplication
from samza_nb.errors import MetadataStoreError, TaskError
from samza_nb.notebook.failures import task_error_html, task_error_text
from samza_nb.notebook.magics import SamzaMagics
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local

_ANSI = re.compile(r"\x1b\[[\d;]*m")

CELL = """\
def halve(n):
    if n == 3:
        raise ZeroDivisionError("three cannot be halved here")
    return n / 2

app = StreamApplication("halving")
out = app.output(system.output("out", partitions=1))
app.input(system.input("numbers", partitions=1)).map(halve).send_to(out)
"""


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "samza_nb")
    return shell


@pytest.fixture
def magics(shell: InteractiveShell, tmp_path: Path) -> Iterator[SamzaMagics]:
    magics = shell.magics_manager.registry["SamzaMagics"]
    assert isinstance(magics, SamzaMagics)
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 1)
    system.write("numbers", [1, 2, 3, 4])
    system.end_stream("numbers")
    before = set(shell.user_ns)
    shell.push({"system": system, "StreamApplication": StreamApplication, "run_local": run_local})
    assert shell.run_cell(CELL).success
    yield magics
    magics.short_errors = None
    for name in set(shell.user_ns) - before:
        del shell.user_ns[name]


def test_a_person_sees_one_block_naming_the_raising_line_of_the_cell(
    shell: InteractiveShell, magics: SamzaMagics
) -> None:
    magics.short_errors = True
    with capture_output() as captured:
        result = shell.run_cell("job = run_local(app)")
    error = result.error_in_exec
    assert isinstance(error, TaskError)
    block = captured.outputs[-1].data["text/html"]
    assert "TaskError</b> in operator halving-1-map-1 · task Partition 0 · numbers#0 offset 2" in block
    assert "ZeroDivisionError: three cannot be halved here" in block
    # The raising line of the cell (its source, from the cell's code), not the operator's
    # declaration, which is named apart.
    assert re.search(r"raised at <b>&lt;cell \d+&gt;:3</b>", block), block
    assert 'raise ZeroDivisionError(&quot;three cannot be halved here&quot;)' in block
    assert re.search(r"operator declared at &lt;cell \d+&gt;:8", block), block
    assert "<details>" in block and "Traceback (most recent call last)" in block
    text = _ANSI.sub("", captured.stdout)
    assert text.strip() == (
        "TaskError: the job failed in operator halving-1-map-1 · task Partition 0 · numbers#0 "
        "offset 2 (details above)"
    )
    lines = [_ANSI.sub("", line) for line in task_error_text(error)]
    assert lines[0].startswith("TaskError in operator halving-1-map-1")
    assert any(line.startswith("  raised at <cell") for line in lines)
    assert task_error_html(error) == block


def test_a_batch_run_gets_the_full_traceback_and_the_tasks(
    shell: InteractiveShell, magics: SamzaMagics
) -> None:
    magics.short_errors = False
    with capture_output() as captured:
        result = shell.run_cell("job = run_local(app)")
    assert isinstance(result.error_in_exec, TaskError)
    text = _ANSI.sub("", captured.stdout)
    assert "Traceback" in text and "The task's traceback:" in text
    assert "ZeroDivisionError: three cannot be halved here" in text
    assert not any("samza-task-error" in o.data.get("text/html", "") for o in captured.outputs)


def test_the_short_block_follows_the_shells_colour_scheme(
    shell: InteractiveShell, magics: SamzaMagics
) -> None:
    magics.short_errors = True
    before = shell.colors
    shell.colors = "nocolor"  # what --colors=NoColor sets
    try:
        with capture_output() as captured:
            result = shell.run_cell("job = run_local(app)")
    finally:
        shell.colors = before
    assert isinstance(result.error_in_exec, TaskError)
    assert "TaskError: the job failed in operator halving-1-map-1" in captured.stdout
    assert "\x1b[" not in captured.stdout
    plain = captured.outputs[-1].data["text/plain"]
    assert plain.startswith("TaskError in operator halving-1-map-1")
    assert "\x1b[" not in plain
    with capture_output() as coloured:
        shell.run_cell("job = run_local(app)")
    assert "\x1b[1;31mTaskError" in coloured.stdout


COUNTING = """\
counting = StreamApplication("counting")
counted = counting.output(system.output("counted", partitions=1))
counting.input(system.input("numbers", partitions=1)).partition_by(
    lambda n: n, lambda n: n, op_id="by-number"
).send_to(counted)
"""


def test_an_expected_error_from_the_python_api_is_one_line_in_the_notebooks_words(
    shell: InteractiveShell, magics: SamzaMagics, tmp_path: Path
) -> None:
    # A job whose metadata store was lost while its data remain: run() refuses it with a
    # MetadataStoreError whose hint, for a shell, is `samza-nb reset MODULE:APP`.
    assert shell.run_cell(COUNTING).success
    assert shell.run_cell("run_local(counting)").success
    for path in (tmp_path / "log" / "jobs" / "counting-1").glob("metadata.sqlite3*"):
        path.unlink()
    magics.short_errors = True
    with capture_output() as captured:
        result = shell.run_cell("job = run_local(counting)")
    assert isinstance(result.error_in_exec, MetadataStoreError)
    text = _ANSI.sub("", captured.stdout).strip()
    assert "\n" not in text
    assert text.startswith("MetadataStoreError: the metadata store ")
    assert "reset it with `samza_nb.job.reset.reset_job(app.plan())`" in text
    assert "MODULE:APP" not in text and "Traceback" not in text
    # A batch run keeps the traceback and the runtime's own words.
    magics.short_errors = False
    with capture_output() as batch:
        shell.run_cell("job = run_local(counting)")
    assert "Traceback" in batch.stdout and "samza-nb reset MODULE:APP" in batch.stdout
    # The hint works from a cell.
    assert shell.run_cell(
        "from samza_nb.job.reset import reset_job\nreset_job(counting.plan())\n"
        "job = run_local(counting)"
    ).success


def test_hints_that_need_module_app_are_rewritten_for_the_notebook() -> None:
    from samza_nb.notebook.hints import in_notebook_words

    runtime = (
        "start the job over with `samza-nb reset MODULE:APP --yes` (reset_job(app.plan()) from "
        "samza_nb.job.reset in Python; inputs and outputs stay)"
    )
    assert in_notebook_words(runtime) == (
        "start the job over with `samza_nb.job.reset.reset_job(app.plan())` "
        "(inputs and outputs stay)"
    )
    busy = "stop or drain that run first (samza-nb drain MODULE:APP --wait), then reset"
    assert in_notebook_words(busy) == (
        "stop or drain that run first (job.drain(wait=True), or %samza drain --wait), then reset"
    )
    assert in_notebook_words("nothing to rewrite") == "nothing to rewrite"
