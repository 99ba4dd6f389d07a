"""``%samza attach zookeeper://...``: a handle and a live widget that read a ZooKeeper job's
coordination tree without joining it, and drain it; coordinators run in threads (each its own
kazoo session) against the real ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell

from samza_nb.config import Config
from samza_nb.coordination.zk import ZkJobCoordinator
from samza_nb.drain import read_drain_notifications
from samza_nb.errors import ConfigError, DrainError
from samza_nb.metadata import NamespacedMetadataStore
from samza_nb.notebook.magics import SamzaMagics, Session
from samza_nb.notebook.magics.attach_handle import AttachedJob
from samza_nb.notebook.magics.attach_schemes import (
    AttachTarget,
    attach,
    attach_scheme_names,
    register_attach_scheme,
)
from samza_nb.notebook.widgets.attached_job import AttachedJobWidget
from samza_nb.notebook.widgets.observation_view import ObservationView, task_rows

from .conftest import RecordingListener, calculator, job_config, wait_until

pytestmark = pytest.mark.services

ALL_TASKS = {f"Partition {p}" for p in range(6)}


@pytest.fixture
def group(zk_connect: str) -> Iterator[dict[str, ZkJobCoordinator]]:
    """Two processors of job ``zkjob`` (id 1): p1 at host-a (the leader), p2 at host-b."""
    made: dict[str, ZkJobCoordinator] = {}
    for pid, location in (("p1", "host-a"), ("p2", "host-b")):
        config = job_config(zk_connect)
        coordinator = ZkJobCoordinator(calculator(config), config)
        coordinator.attach(pid, location, RecordingListener())
        coordinator.start()
        made[pid] = coordinator
    yield made
    for coordinator in made.values():
        coordinator.stop()


@pytest.fixture
def attached(zk_connect: str) -> Iterator[AttachedJob]:
    handle = attach(f"zookeeper://{zk_connect}", "zkjob", job_id="1", config=job_config(zk_connect))
    yield handle
    handle.close()


def _agreed(handle: AttachedJob, processors: set[str]) -> bool:
    observation = handle.observe()
    return (
        observation.barrier == "DONE"
        and observation.active == observation.latest
        and {pid for pid, _ in observation.assignment.values()} == processors
    )


def test_the_handle_sees_processors_leader_versions_and_moves_without_joining(
    group: dict[str, ZkJobCoordinator], attached: AttachedJob
) -> None:
    wait_until(lambda: _agreed(attached, {"p1", "p2"}), 20, "a model over p1 and p2")
    seen = attached.observe()
    assert [(p.processor_id, p.location_id, p.leader) for p in seen.processors] == [
        ("p1", "host-a", True),
        ("p2", "host-b", False),
    ]
    assert seen.leader == "p1"
    assert set(seen.assignment) == ALL_TASKS
    assert {location for _, location in seen.assignment.values()} == {"host-a", "host-b"}
    first = seen.latest_version
    assert first is not None and set(first.joined) == set(first.expected) == {"p1", "p2"}
    assert attached.status().state == "running"
    p2_tasks = {task for task, (pid, _) in seen.assignment.items() if pid == "p2"}
    kept = ObservationView(seen)  # drawn while p1 and p2 run: it keeps that moment

    group["p2"].stop()  # leaves the group at once: the leader moves p2's tasks to p1
    wait_until(lambda: _agreed(attached, {"p1"}), 20, "a model over p1 alone")
    after = attached.observe()
    assert [p.processor_id for p in after.processors] == ["p1"]  # the observer never registered
    assert set(after.latest_version.moved) == p2_tasks  # type: ignore[union-attr]
    assert len(after.versions) == len(seen.versions) + 1

    widget = AttachedJobWidget(attached, auto_refresh=False)
    try:
        assert [row[0] for row in widget.processor_rows()] == ["p1"]
        assert widget.version_rows()[0][:3] == [after.latest, "DONE", "1 of 1"]
        assert {row[0] for row in widget.task_rows()} == ALL_TASKS
        text = widget.snapshot_text()
        assert "leader p1" in text and "running" in text
        assert "leader" in widget.snapshot_html()
    finally:
        widget.close()

    group["p1"].stop()
    wait_until(lambda: attached.status().done, 20, "no processor left")
    assert attached.status().state == "stopped"
    # The live view now shows the end; the view of the first read still shows p1 and p2 on
    # the first model (after Run All, a notebook's step-by-step views keep their steps).
    ended = ObservationView(attached.observe()).snapshot_text()
    assert "processors none" in ended
    text = kept.snapshot_text()
    assert f"processors p1, p2; leader p1; model version {seen.latest} (barrier DONE" in text
    assert {row[1] for row in task_rows(seen)} == {"p1", "p2"}
    page = kept._repr_html_()
    assert page.startswith('<div class="samza-observation">') and page.count("<table") == 3


def test_drain_names_the_run_id_the_live_processors_carry_never_a_stale_stored_one(
    group: dict[str, ZkJobCoordinator], attached: AttachedJob, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from samza_nb.notebook.magics import attach_handle

    # The last deployment crashed: its run id is still stored, and the new deployment's
    # processors registered but have not agreed on their run id yet.
    NamespacedMetadataStore(attached.metadata, "set-config").put("app.run.id", b"run-6")
    monkeypatch.setattr(attach_handle, "_RUN_ID_WAIT_S", 0.5)
    with pytest.raises(DrainError, match="carry no one run id"):
        attached.drain()
    assert read_drain_notifications(attached.metadata) == []

    generators = [coordinator.run_id_generator(attached.metadata) for coordinator in group.values()]
    agreeing = threading.Timer(0.5, lambda: [generator.run_id() for generator in generators])
    monkeypatch.setattr(attach_handle, "_RUN_ID_WAIT_S", 20.0)
    agreeing.start()
    try:
        widget = AttachedJobWidget(attached, auto_refresh=False)
        try:
            widget.drain_button.click()  # the widget's Drain button drains through the handle
            assert widget.drain_button.disabled and "drain requested" in widget.message.value
        finally:
            widget.close()
    finally:
        agreeing.join()
    run_id = generators[0].run_id()
    assert run_id != "run-6" and generators[1].run_id() == run_id
    assert attached.observe().run_ids == {run_id}
    assert [n.run_id for n in read_drain_notifications(attached.metadata)] == [run_id]
    assert attached.status().state in ("draining", "waiting")
    for generator in generators:
        generator.close()


def test_attach_errors_name_what_is_wrong(zk_connect: str) -> None:
    assert "zookeeper" in attach_scheme_names()
    with pytest.raises(ConfigError, match="known: .*zookeeper"):
        attach("zookeper://127.0.0.1:1/x", "app")
    with pytest.raises(ConfigError, match="name the application"):
        attach(f"zookeeper://{zk_connect}")
    with pytest.raises(ConfigError, match="like zookeeper://"):
        attach("127.0.0.1:2181")
    seen: list[tuple[str, str, str | None]] = []

    def opener(target: AttachTarget, config: Config) -> AttachedJob:
        seen.append((target.address, config.get_str("app.name") or "", config.get_str("job.id")))
        msg = "stop here"
        raise ConfigError(msg)

    register_attach_scheme("testscheme", opener)
    with pytest.raises(ConfigError, match="stop here"):
        attach("testscheme://acct/container?app=pages&job=3")
    assert seen == [("acct/container", "pages", "3")]


def test_magic_attach_returns_the_handle(zk_connect: str, group: dict[str, ZkJobCoordinator]) -> None:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "samza_nb")
    magics = shell.magics_manager.registry["SamzaMagics"]
    assert isinstance(magics, SamzaMagics)
    magics.session = Session(shell)
    handle = shell.run_line_magic(
        "samza", f"attach zookeeper://{zk_connect}?job=1 zkjob --config job.coordinator.zk.session.timeout.ms=4000"
    )
    try:
        assert isinstance(handle, AttachedJob)
        assert (handle.app_name, handle.job_id) == ("zkjob", "1")
        wait_until(lambda: _agreed(handle, {"p1", "p2"}), 20, "a model over p1 and p2")
        assert handle.status().leader == "p1"
        # A cell that returns the handle draws the live widget; one that returns what
        # observe() read draws that moment, as static HTML.
        assert shell.display_formatter.ipython_display_formatter.lookup(handle) is not None
        bundle, _ = shell.display_formatter.format(handle.observe())
        assert 'class="samza-observation"' in bundle["text/html"]
        assert bundle["text/plain"].startswith("as observed then: processors p1, p2; leader p1")
    finally:
        handle.close()
    assert handle.status().state == "detached"


def test_the_grouper_explorer_on_an_attached_job_is_a_preview_only(
    group: dict[str, ZkJobCoordinator], attached: AttachedJob
) -> None:
    from samza_nb.notebook.widgets import GrouperExplorer

    wait_until(lambda: _agreed(attached, {"p1", "p2"}), 20, "a model over p1 and p2")
    explorer = GrouperExplorer(attached, auto_refresh=False)
    try:
        assert explorer.current == group["p1"].job_model
        assert explorer.current_processors == {"p1": "host-a", "p2": "host-b"}
        assert explorer.apply_button.disabled
        assert explorer.apply_blocker() == AttachedJob.preview_only
        assert "attached: preview only" in explorer.apply_note.value
        p2_tasks = set(explorer.current.containers["p2"].tasks)
        explorer.kill("p2")  # the proposal moves p2's tasks to p1; the job is untouched
        assert explorer.proposal is not None and set(explorer.proposal.containers) == {"p1"}
        assert {move.task for move in explorer.moves} == p2_tasks
        with pytest.raises(ConfigError, match="attached: preview only"):
            explorer.apply()
        assert attached.processors == {"p1": "host-a", "p2": "host-b"}

        group["p2"].stop()  # the job's own rebalance: the explorer starts from its new model
        wait_until(lambda: _agreed(attached, {"p1"}), 20, "a model over p1 alone")
        explorer.refresh()
        assert set(explorer.current.containers) == {"p1"} and explorer.draft == {"p1": "host-a"}
        assert explorer.apply_button.disabled
    finally:
        explorer.close()
