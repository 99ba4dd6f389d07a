"""The %samza magics through a real IPython InteractiveShell (and, for the error rule, a real
kernel): every command, what it returns, and one-line versus full errors."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import samza_nb
from samza_nb.api import StreamApplication
from samza_nb.config import Config
from samza_nb.errors import ConfigError, JobError, JobInterruptedError, TaskError
from samza_nb.job.handle import Job, JobStatus
from samza_nb.model import JobModel
from samza_nb.notebook.magics import HelpText, SamzaMagics, Session
from samza_nb.notebook.widgets import DrainStatesWidget, GrouperExplorer, RunProgress
from samza_nb.notebook.widgets._live import _VIEWS
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.systems import EmbeddedSystem

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

COMMANDS = (
    "plan",
    "run",
    "status",
    "show",
    "drain",
    "grouper",
    "jobmodel",
    "stop",
    "kill-processor",
    "add-processor",
    "attach",
    "config",
    "help",
)


def numbers_app(system: EmbeddedSystem, name: str = "numbers") -> StreamApplication:
    """numbers -> x10 -> partition_by(n % 3) -> out: one shuffle, so drains cross a stage."""
    app = StreamApplication(name)
    out = app.output(system.output("out", partitions=2))
    (
        app.input(system.input("numbers", partitions=2))
        .map(lambda n: n * 10)
        .partition_by(lambda n: n % 3, op_id="by-rest")
        .map(lambda kv: kv.value)
        .send_to(out)
    )
    return app


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "samza_nb")
    return shell


@pytest.fixture
def magics(shell: InteractiveShell) -> Iterator[SamzaMagics]:
    """The registered SamzaMagics with a fresh session; names a test binds are removed after."""
    magics = shell.magics_manager.registry["SamzaMagics"]
    assert isinstance(magics, SamzaMagics)
    magics.session = Session(shell)
    magics.short_errors = None
    before = set(shell.user_ns)
    yield magics
    for name in set(shell.user_ns) - before:
        del shell.user_ns[name]


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 2)
    system.write("numbers", range(40))
    return system


def samza(shell: InteractiveShell, line: str) -> Any:
    return shell.run_line_magic("samza", line)


# -- loading and help ----------------------------------------------------------------------------
def test_load_ext_registers_the_line_and_cell_magic(shell: InteractiveShell) -> None:
    assert "samza" in shell.magics_manager.magics["line"]
    assert "samza" in shell.magics_manager.magics["cell"]
    from samza_nb.notebook import load_ipython_extension

    assert samza_nb.load_ipython_extension is load_ipython_extension


def test_import_samza_nb_does_not_import_ipython() -> None:
    code = "import samza_nb, sys; assert 'IPython' not in sys.modules, 'IPython imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_help_lists_every_command_and_returns_the_text(
    shell: InteractiveShell, magics: SamzaMagics
) -> None:
    text = samza(shell, "help")
    assert isinstance(text, HelpText)
    for command in COMMANDS:
        assert f"%samza {command}" in text
    assert "%%samza config [NAME]" in text
    assert samza(shell, "") == text
    run_help = samza(shell, "help run")
    assert "--processors N" in run_help and "--until U" in run_help
    with pytest.raises(UsageError, match="did you mean 'status'"):
        samza(shell, "help stauts")


# -- APP -------------------------------------------------------------------------------------------
def test_plan_resolves_apps_from_the_namespace_a_builder_or_module_attr(
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shell.push({"app": numbers_app(system), "build": lambda: numbers_app(system, "built")})
    plan = samza(shell, "plan app")
    assert isinstance(plan, ExecutionPlan)
    assert plan.app_name == "numbers"
    assert "numbers-1-partition_by-by-rest" in plan.intermediate_streams
    assert samza(shell, "plan build").app_name == "built"

    module = tmp_path / "my_jobs.py"
    module.write_text(
        textwrap.dedent(
            f"""
            from samza_nb.api import StreamApplication
            from samza_nb.systems import EmbeddedSystem

            def pages():
                system = EmbeddedSystem("embedded", path={str(tmp_path / "log")!r})
                app = StreamApplication("pages")
                out = app.output(system.output("out", partitions=2))
                app.input(system.input("numbers", partitions=2)).send_to(out)
                return app
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert samza(shell, "plan my_jobs:pages").app_name == "pages"


def test_plan_uses_the_session_config_under_config_options(
    shell: InteractiveShell, magics: SamzaMagics, system: EmbeddedSystem
) -> None:
    shell.push({"app": numbers_app(system)})
    shell.run_cell_magic("samza", "config", "task.max.epoch.messages=5\ntask.errors.skip=true\n")
    plan = samza(shell, "plan app --config task.max.epoch.messages=9")
    assert plan.config["task.max.epoch.messages"] == "9"
    assert plan.config["task.errors.skip"] == "true"


# -- %%samza config --------------------------------------------------------------------------------
def test_config_cell_parses_properties_and_becomes_the_session_config(
    shell: InteractiveShell, magics: SamzaMagics
) -> None:
    block = textwrap.dedent(
        """
        # drains are noticed quickly in a notebook
        job.drain-monitor.poll.interval.ms = 200

        task.max.epoch.messages=500
        """
    )
    config = shell.run_cell_magic("samza", "config settings", block)
    assert config == Config(
        {"job.drain-monitor.poll.interval.ms": "200", "task.max.epoch.messages": "500"}
    )
    assert shell.user_ns["settings"] is config
    assert samza(shell, "config") is config
    assert magics.session.config is config


def test_a_bad_line_of_a_config_cell_is_named_by_its_number(
    shell: InteractiveShell, magics: SamzaMagics
) -> None:
    block = "task.max.epoch.messages=500\n\nthis line has no separator\n"
    with pytest.raises(ConfigError, match=r"^%%samza config:4: unknown config key 'this'.*a space"):
        shell.run_cell_magic("samza", "config", block)
    with pytest.raises(ConfigError, match=r"^%%samza config:3: .*did you mean 'task.max.epoch.messages'"):
        shell.run_cell_magic("samza", "config", "# comment\ntask.max.epoch.mesages=500\n")
    with pytest.raises(ConfigError, match=r"^%%samza config:2: config task.max.epoch.messages="):
        shell.run_cell_magic("samza", "config", "task.max.epoch.messages = -1\n")
    assert magics.session.config == Config()  # a refused cell leaves the config as it was


# -- running jobs ----------------------------------------------------------------------------------
@pytest.mark.spark
def test_run_and_the_job_commands_on_a_finished_job(
    spark: Any,
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
) -> None:
    system.end_stream("numbers")
    shell.push({"app": numbers_app(system)})
    shell.run_cell_magic("samza", "config", "task.max.epoch.messages=500\ntask.errors.skip=true")
    job = samza(
        shell,
        "run app --processors 2 --grouper group-by-container-ids --until end-of-stream "
        "--config task.max.epoch.messages=7",
    )
    assert isinstance(job, Job)
    assert sorted(job.collect("out")["value"]) == [n * 10 for n in range(40)]
    # The cell's config is under the --config overrides.
    assert job.config["task.max.epoch.messages"] == "7"
    assert job.config["task.errors.skip"] == "true"
    assert magics.session.last_job is job

    status = samza(shell, "status")
    assert isinstance(status, JobStatus)
    assert status.state == "finished" and len(status.processors) == 2
    shell.push({"finished": job})
    assert samza(shell, "status finished").run_id == job.run_id

    model = samza(shell, "jobmodel")
    assert isinstance(model, JobModel) and model is job.job_model
    assert sorted(model.containers) == ["0", "1"]

    explorer = samza(shell, "grouper finished")
    assert isinstance(explorer, GrouperExplorer) and explorer.job is job
    assert explorer.grouper.value == "group-by-container-ids"
    assert explorer.current is job.job_model
    # A finished job keeps the model it ended with: no rebalance, kill or add changes it.
    with pytest.raises(JobError, match="nothing to regroup"):
        job.rebalance(grouper="host-affinity")
    with pytest.raises(JobError, match="nothing to regroup"):
        samza(shell, "kill-processor 1")
    with pytest.raises(JobError, match="nothing to regroup"):
        samza(shell, "add-processor --location rack-b finished")
    assert job.job_model is model

    stopped = samza(shell, "stop")
    assert isinstance(stopped, JobStatus) and stopped.state == "finished"


@pytest.mark.spark
def test_run_takes_processors_and_grouper_from_the_session_config_unless_given(
    spark: Any,
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
) -> None:
    system.end_stream("numbers")
    shell.push({"app": numbers_app(system, "configured")})
    shell.run_cell_magic(
        "samza", "config",
        "job.container.count=2\ntask.name.grouper.factory=group-by-container-ids\n",
    )
    job = samza(shell, "run app")
    assert sorted(job.processors) == ["0", "1"] and job.grouper == "group-by-container-ids"
    again = samza(shell, "run app --processors 1 --grouper single-container")  # the options win
    assert sorted(again.processors) == ["0"] and again.grouper == "single-container"


@pytest.mark.spark
def test_background_run_then_drain_wait_returns_the_drain_states(
    spark: Any,
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shell.push({"app": numbers_app(system, "drained")})
    shell.run_cell_magic("samza", "config", "job.drain-monitor.poll.interval.ms=100")
    job = samza(shell, "run app --background --until forever")
    assert isinstance(job, Job)
    assert samza(shell, "status").state == "running"
    # A drain stops the reading where it is (docs/running.md): drain once all 40 are read.
    deadline = time.monotonic() + 120
    while job.metrics()["streams"]["numbers"]["in"] < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    capsys.readouterr()
    widget = samza(shell, "drain --wait")
    # The wait says what it waits for at once, and how long it took (a status line).
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("draining drained: inputs stop"), lines
    assert any(line.startswith("drained drained in ") for line in lines), lines
    assert isinstance(widget, DrainStatesWidget) and widget.job is job
    assert widget.states is not None and widget.states.all_drained
    assert job.status().state == "drained"
    assert sorted(job.collect("out")["value"]) == [n * 10 for n in range(40)]


@pytest.mark.spark
def test_stop_a_background_job(
    spark: Any,
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
) -> None:
    shell.push({"app": numbers_app(system, "stopped")})
    samza(shell, "run app --background --until forever")
    status = samza(shell, "stop")
    assert isinstance(status, JobStatus) and status.state == "stopped"


@pytest.mark.spark
def test_background_run_shows_progress_and_the_widgets_start_on_the_job(
    spark: Any,
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
    capsys: pytest.CaptureFixture[str],
) -> None:
    system.end_stream("numbers")
    shell.push({"app": numbers_app(system, "widgets")})
    job = samza(shell, "run app --background --grouper single-container")
    job.wait(60)
    # A plain shell prints what display() shows: the live progress widget's text form.
    assert "RunProgress" in capsys.readouterr().out
    explorer = samza(shell, "grouper")
    assert isinstance(explorer, GrouperExplorer)
    assert explorer.grouper.value == "single-container"
    # The job ended: there is nothing left to drain, and the magic says so.
    with pytest.raises(JobError, match="has already finished; there is nothing to drain"):
        samza(shell, "drain")


def progress_views(job: Job) -> list[RunProgress]:
    return [view for view in _VIEWS if isinstance(view, RunProgress) and view.job is job]


@pytest.mark.spark
def test_a_foreground_run_shows_progress_and_returns_the_finished_job(
    spark: Any,
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
) -> None:
    system.end_stream("numbers")
    shell.push({"app": numbers_app(system, "foreground")})
    with capture_output() as captured:
        job = samza(shell, "run app --processors 2")
    assert isinstance(job, Job) and job.status().state == "finished"
    assert magics.session.last_job is job
    assert sorted(job.collect("out")["value"]) == [n * 10 for n in range(40)]
    shown = captured.outputs[0]
    assert WIDGET_VIEW in shown.data and shown.data["text/plain"].startswith("RunProgress: ")
    # The last update the cell published to that view replaces it with the job's final state.
    final = [out for out in captured.outputs if out.transient == shown.transient][-1]
    assert final is not shown and final.update
    assert "40 of 40 input messages read (100%)" in final.data["text/plain"]
    assert "finished" in final.data["text/plain"] and "finished" in final.data["text/html"]
    (view,) = progress_views(job)
    assert not view.auto_refreshing and view.job_status is not None
    assert view.job_status.state == "finished"


@pytest.mark.spark
def test_a_foreground_run_raises_the_jobs_error_after_showing_it(
    spark: Any,
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
) -> None:
    system.end_stream("numbers")

    def explode(n: int) -> int:
        msg = f"bad number {n}"
        raise ValueError(msg)

    app = StreamApplication("failing")
    out = app.output(system.output("out", partitions=2))
    app.input(system.input("numbers", partitions=2)).map(explode).send_to(out)
    shell.push({"app": app})
    # As a person at a notebook sees it: the cell assigns the run's Job to a name.
    magics.short_errors = True
    with capture_output() as captured:
        result = shell.run_cell("job = %samza run app")
    assert isinstance(result.error_in_exec, TaskError)
    job = magics.session.last_job
    assert job is not None and job.status().state == "failed"
    # The cell failed, yet its name holds the failed Job.
    assert shell.user_ns["job"] is job
    # What this cell published: the cell's hook also settles the view of an earlier test's
    # background job, whose last update a notebook routes to that view, not to this cell.
    shown = next(o for o in captured.outputs if not o.update and WIDGET_VIEW in o.data)
    outputs = [o for o in captured.outputs if not o.update or o.transient == shown.transient]
    final = [o for o in outputs if o.update][-1]
    assert "failed" in final.data["text/plain"]
    assert "job failed" in final.data["text/html"]
    # One short block (operator, task, partition, offset, the user's raising line) instead of
    # a traceback through the job's internals; the task's traceback one click away.
    block = outputs[-1].data["text/html"]
    assert 'class="samza-task-error"' in block
    assert "raise ValueError(msg)" in block and "test_magics.py:" in block
    assert "ValueError: bad number" in block and "offset" in block
    assert "<details><summary>the task's traceback</summary>" in block
    assert "Traceback" not in captured.stdout and "the job failed in operator" in captured.stdout
    error = result.error_in_exec
    assert error.worker_traceback and "explode" in error.worker_traceback


@pytest.mark.spark
def test_interrupting_a_foreground_run_stops_the_job(
    spark: Any,
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted_wait(job: Job, timeout: float | None = None) -> JobStatus:
        # Ctrl-C (Kernel -> Interrupt) arriving while the cell waits, once the job is running.
        deadline = time.monotonic() + 60
        while job.epoch < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        raise KeyboardInterrupt

    monkeypatch.setattr(Job, "wait", interrupted_wait)
    shell.push({"app": numbers_app(system, "interrupted")})
    magics.short_errors = True
    with capture_output() as captured:
        result = shell.run_cell("job = %samza run app --until forever")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert isinstance(result.error_in_exec, JobInterruptedError)
    job = magics.session.last_job
    assert job is not None and job.status().state == "stopped"
    assert shell.user_ns["job"] is job and result.error_in_exec.job is job
    # One line, no traceback of the wait loop.
    assert "Traceback" not in captured.stdout
    shown = re.sub(r"\x1b\[[\d;]*m", "", captured.stdout)
    assert shown.startswith("KeyboardInterrupt: interrupted: job 'interrupted' stopped after epoch")
    assert "stopped" in captured.outputs[-1].data["text/plain"]
    views = progress_views(job)
    assert views and not any(view.auto_refreshing for view in views)


# -- errors ----------------------------------------------------------------------------------------
BAD_INPUT = [
    pytest.param("run nope", ConfigError, "no application 'nope'", id="unknown-app-name"),
    pytest.param("run answer", ConfigError, "answer is a int", id="name-not-an-app"),
    pytest.param("plan no_such_module:app", ConfigError, "no module named", id="bad-module"),
    pytest.param(
        "run app --grouper host-afinity",
        ConfigError,
        "unknown task grouper 'host-afinity'; did you mean 'host-affinity'? known: ",
        id="unknown-grouper",
    ),
    pytest.param(
        "run app --config job.container.cout=2", ConfigError, "did you mean", id="bad-key"
    ),
    pytest.param("status", JobError, "no job yet", id="no-job"),
    pytest.param("status answer", JobError, "answer is a int, not a Job", id="not-a-job"),
]


@pytest.mark.parametrize(("line", "error", "message"), BAD_INPUT)
def test_bad_input_is_one_line_with_short_errors(
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
    line: str,
    error: type[Exception],
    message: str,
) -> None:
    magics.short_errors = True
    shell.push({"app": numbers_app(system), "answer": 42})
    with pytest.raises(UsageError) as raised:
        samza(shell, line)
    text = str(raised.value)
    assert "\n" not in text
    assert text.startswith(f"%samza {line.split()[0]}: ")
    assert message in text
    assert isinstance(raised.value.__cause__, error)
    # Nothing was started: no job, no job folder in the system.
    assert magics.session.last_job is None
    assert not (Path(system.path) / "jobs").exists()


# None: the automatic rule, which gives full errors under pytest.
@pytest.mark.parametrize("setting", [False, None])
@pytest.mark.parametrize(("line", "error", "message"), BAD_INPUT)
def test_bad_input_raises_the_original_error_without_short_errors(
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
    line: str,
    error: type[Exception],
    message: str,
    setting: bool | None,
) -> None:
    magics.short_errors = setting
    shell.push({"app": numbers_app(system), "answer": 42})
    with pytest.raises(error, match=message.split(";")[0]):
        samza(shell, line)


@pytest.mark.parametrize("short", [True, False])
@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("run app --bogus", "%samza run: unrecognized arguments: --bogus (see %samza help run)"),
        ("run app --processors 0", "argument --processors: must be a whole number of at least 1"),
        (
            "run app --until sometimes",
            "argument --until: must be end-of-stream, caught-up, forever",
        ),
        ("run --config a=1 app", "got 'app' (write APP before --config)"),
        ("run", "the following arguments are required: APP"),
        ("frobnicate", "%samza: unknown command 'frobnicate'; commands: add-processor, attach, config"),
        ('run "unclosed --config sasl.password=hunter2', "%samza run: No closing quotation in the line (see %samza help run)"),
        # Quotes are a shell's: the value inside them is checked, not the quotes.
        ("run app --until 'sometimes'", "or a positive number of epochs, got 'sometimes' (see"),
    ],
)
def test_bad_options_are_one_line_usage_errors_in_both_modes(
    shell: InteractiveShell,
    magics: SamzaMagics,
    system: EmbeddedSystem,
    line: str,
    message: str,
    short: bool,
) -> None:
    magics.short_errors = short
    shell.push({"app": numbers_app(system)})
    with pytest.raises(UsageError) as raised:
        samza(shell, line)
    assert "\n" not in str(raised.value)
    assert message in str(raised.value)


def test_cell_errors(shell: InteractiveShell, magics: SamzaMagics) -> None:
    magics.short_errors = True
    with pytest.raises(UsageError, match=r"did you mean 'job.container.count'\?$"):
        shell.run_cell_magic("samza", "config", "# two processors\njob.container.cout=2\n")
    with pytest.raises(UsageError, match="run takes no cell body"):
        shell.run_cell_magic("samza", "run app", "job.container.count=2")
    with pytest.raises(UsageError, match="argument NAME: must be a Python name, got '1st'"):
        shell.run_cell_magic("samza", "config 1st", "job.container.count=2")
    assert magics.session.config == Config()


# -- the short-error rule in a real kernel -------------------------------------------------------
@pytest.mark.slow
def test_a_kernel_gives_one_line_to_a_frontend_and_full_errors_to_batch_runners(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jupyter_client.manager import start_new_kernel

    # The kernel inherits the environment; without this it would see pytest and never shorten.
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    manager, client = start_new_kernel(kernel_name="python3")
    try:

        def error_of(code: str, *, allow_stdin: bool) -> dict[str, Any]:
            reply = client.execute_interactive(code, allow_stdin=allow_stdin, timeout=60)
            content: dict[str, Any] = reply["content"]
            return content

        assert error_of("%load_ext samza_nb", allow_stdin=False)["status"] == "ok"
        # A notebook frontend (JupyterLab, VS Code) accepts input: one line.
        frontend = error_of("%samza run nope", allow_stdin=True)
        assert frontend["ename"] == "UsageError"
        assert frontend["evalue"].startswith("%samza run: no application 'nope'")
        # papermill and nbconvert (through nbclient) never accept input: the real error.
        batch = error_of("%samza run nope", allow_stdin=False)
        assert batch["ename"] == "ConfigError"
        assert "_session.py" in "".join(batch["traceback"])
        # A job whose function raises, as a person sees it: one block (display data) and a
        # one-line error (the error keeps the failed job: sys.last_value.job).
        setup = textwrap.dedent(
            """
            import tempfile
            from samza_nb.api import StreamApplication
            from samza_nb.systems import EmbeddedSystem
            from samza_nb.testing import run_local
            system = EmbeddedSystem("embedded", path=tempfile.mkdtemp())
            system.create_stream("n", 1); system.write("n", [1, 0]); system.end_stream("n")
            app = StreamApplication("inverse")
            out = app.output(system.output("out", partitions=1))
            app.input(system.input("n", partitions=1)).map(lambda n: 1 / n).send_to(out)
            """
        )
        assert error_of(setup, allow_stdin=True)["status"] == "ok"
        shown: list[dict[str, Any]] = []
        reply = client.execute_interactive(
            "job = run_local(app)", allow_stdin=True, timeout=60,
            output_hook=lambda message: shown.append(message),
        )["content"]
        assert reply["ename"] == "TaskError" and len(reply["traceback"]) == 1
        assert "the job failed in operator inverse-1-map-1" in reply["traceback"][0]
        blocks = [
            m["content"]["data"]["text/html"]
            for m in shown
            if m["msg_type"] == "display_data" and "text/html" in m["content"]["data"]
        ]
        assert blocks and "ZeroDivisionError: division by zero" in blocks[0]
        assert "raised at <b>&lt;cell" in blocks[0] and "1 / n" in blocks[0]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_secret_in_a_magic_line_is_used_with_a_warning(
    shell: InteractiveShell, magics: SamzaMagics, system: EmbeddedSystem, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.push({"app": numbers_app(system)})
    samza(shell, "plan app --config systems.kafka.consumer.sasl.password=hunter2hunter2")
    err = capsys.readouterr().err
    assert "warning: systems.kafka.consumer.sasl.password holds a secret, now in this notebook's text" in err
    assert "hunter2" not in err


def test_a_secret_in_a_config_cell_is_used_with_a_warning(
    shell: InteractiveShell, magics: SamzaMagics, capsys: pytest.CaptureFixture[str]
) -> None:
    config = shell.run_cell_magic("samza", "config", "task.max.epoch.messages=5\nsystems.kafka.sasl.password=hunter2hunter2\n")
    assert config["systems.kafka.sasl.password"] == "hunter2hunter2"
    err = capsys.readouterr().err
    assert "warning: systems.kafka.sasl.password holds a secret, now in this notebook's text" in err
    assert "hunter2" not in err and "task.max.epoch.messages" not in err


def test_a_config_cell_error_at_the_frontend_names_the_cell_line_once(
    shell: InteractiveShell, magics: SamzaMagics
) -> None:
    magics.short_errors = True
    with pytest.raises(UsageError) as raised:
        shell.run_cell_magic("samza", "config", "# the job\ntask.max.epoch.mesages=5\n")
    assert str(raised.value).startswith("%%samza config:3: unknown config key")


def test_magic_lines_take_a_shell_s_quotes_and_keep_backslashes() -> None:
    from samza_nb.notebook.magics._core import _split

    line = r"run app --until 'caught-up' --config a.b=C:\certs\ca.pem x.y=\d+#1 z=''"
    assert _split(line) == ["run", "app", "--until", "caught-up", "--config", r"a.b=C:\certs\ca.pem", r"x.y=\d+#1", "z="]
    # A # that starts a word is a comment, as in a shell (the docs' examples have them).
    assert _split("plan app  # the plan, drawn") == ["plan", "app"]
    assert _split("run app --set 'a=# kept' # gone") == ["run", "app", "--set", "a=# kept"]


def test_the_notebook_docs_main_example_runs_as_written(
    shell: InteractiveShell, magics: SamzaMagics, tmp_path: Path
) -> None:
    # docs/notebook.md's config cell and its magic cell, line by line as a notebook runs them
    # (comments included: a user copies them).
    from samza_nb.examples.page_views import build_app, generate_page_views

    text = (Path(__file__).parents[2] / "docs" / "notebook.md").read_text()
    blocks = re.findall(r"```(?:python)?\n(.*?)```", text, flags=re.DOTALL)
    config = next(block for block in blocks if block.startswith("%%samza config"))
    lines = next(block for block in blocks if block.startswith("%samza plan app")).splitlines()
    assert len(lines) >= 7 and any("#" in line for line in lines)
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("page-views", 4)
    system.write("page-views", generate_page_views(2_000))
    shell.push({"app": build_app(system, name="docs-example", config={"job.home": str(tmp_path / "home")})})
    for cell in (config, *lines):
        with capture_output():
            result = shell.run_cell(cell)
        assert result.success, f"{cell!r} failed: {result.error_before_exec or result.error_in_exec!r}"
    job = shell.user_ns["job"]
    assert isinstance(job, Job) and job.status().state == "drained"
    assert sum(system.read_frame("page-counts")["value"]) == sum(
        1 for view in generate_page_views(2_000) if view["country"] == "US"
    )
