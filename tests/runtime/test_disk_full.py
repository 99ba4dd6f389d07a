"""A full disk under the job's home (its stores and metadata store): the job fails with one line
naming the path and "no space left"; once space is freed, a rerun loses and doubles nothing
(counts equal plain Python's). The disk is a small tmpfs mounted for the test (root only);
where mounting is impossible the test is skipped, except in CI (CI=true), where it fails."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from samza_nb.cli import main
from samza_nb.systems import EmbeddedSystem

_APP = '''
from datetime import timedelta
from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.systems import EmbeddedSystem

def app():
    system = EmbeddedSystem("log", path={log!r})
    application = StreamApplication("disk-full", job_id="1")
    words = application.input(system.input("words", partitions=2, serde="json"))
    counts = application.output(system.output("counts", partitions=2, serde="json"))
    (
        words.partition_by(lambda word: word, lambda word: word, op_id="by-word")
        .window(
            Windows.keyed_tumbling(lambda kv: kv.key, timedelta(hours=1), initial=lambda: 0,
                                   fold=lambda kv, n: n + 1),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(counts)
    )
    return application
'''


@pytest.fixture(params=["home", "home/stores"])
def small_disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A 2 MB tmpfs at the job's home (its metadata store and stores), or at its stores only,
    under ``tmp_path / "job"``; unmounted after the test."""
    disk = tmp_path / "job" / request.param
    disk.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(disk)],
        capture_output=True, text=True, check=False,
    )
    if mounted.returncode != 0:
        reason = f"cannot mount a tmpfs (root and mount(8) are needed): {mounted.stderr.strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def _fill(disk: Path, leave_kib: int) -> Path:
    """Fill ``disk`` up to ``leave_kib`` KiB free; returns the filler file."""
    filler = disk / "filler"
    free_kib = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize // 1024
    with filler.open("wb") as out:
        out.write(b"\0" * max(0, free_kib - leave_kib) * 1024)
    return filler


def _words(count: int, seed: int) -> list[str]:
    return [f"word-{(index * 7 + seed) % 23}" for index in range(count)]


def test_a_full_disk_is_one_line_and_a_rerun_after_freeing_it_counts_exactly(
    small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log"  # the streams are elsewhere: only the job's home fills up
    module = tmp_path / "app_module"
    module.mkdir()
    # A module name of its own: another test's module (and log) may be imported already.
    name = f"disk_full_app_{uuid.uuid4().hex[:8]}"
    (module / f"{name}.py").write_text(_APP.format(log=str(log)))
    monkeypatch.syspath_prepend(str(module))
    monkeypatch.setenv("SAMZA_NB_HOME", str(tmp_path / "samza-home"))
    system = EmbeddedSystem("log", path=log)
    system.create_stream("words", 2)
    first, second = _words(2_000, 1), _words(3_000, 2)
    system.write("words", first)
    home = tmp_path / "job" / "home"
    command = ["run", f"{name}:app", "--executor", "local", "--set", f"job.home={home}",
               "--set", "task.max.epoch.messages=500"]
    assert main([*command, "--until", "caught-up"]) == 0, capsys.readouterr().err
    capsys.readouterr()

    filler = _fill(small_disk, leave_kib=8)
    system.write("words", second)
    system.end_stream("words")
    assert main([*command, "--until", "end-of-stream"]) == 1, capsys.readouterr().out
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("samza-nb: error: ")
    assert str(home) in lines[0] and "no space left" in lines[0].lower(), lines[0]

    filler.unlink()
    assert main([*command, "--until", "end-of-stream"]) == 0, capsys.readouterr().err
    frame = system.read_frame("counts")
    totals: Counter[str] = Counter()
    for key, value in zip(frame["key"], frame["value"], strict=True):
        totals[key] += value
    assert totals == Counter(first + second)
