"""Private socket folders: those of processes that are gone are swept, live ones kept, and a
listener's folder goes when it closes."""

from __future__ import annotations

import multiprocessing.util
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import AuthenticationError, Client, Listener
from pathlib import Path

import pytest

from samza_nb.runtime.executors import socket_folders


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temporary folder with a short path: a Unix socket's path must fit in 107 bytes, and
    pytest's own ``tmp_path`` under a parallel worker (``popen-gw2/…``) does not leave room."""
    folder = Path(tempfile.mkdtemp(prefix="snb-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_socket_folders_of_killed_processes_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)  # that process has exited
    dead = tmp_path / f"samza-nb-workers-{dead_pid}-abc"
    mine = tmp_path / f"samza-nb-workers-{os.getpid()}-def"
    other = tmp_path / "samza-nb-workers-notapid"
    for folder in (dead, mine, other):
        folder.mkdir()
        (folder / "epochs.sock").write_text("")
    socket_folders._remove_orphaned("samza-nb-workers-")
    assert not dead.exists()  # its process was killed before its exit handler ran
    assert mine.exists() and other.exists()


def test_a_listener_lives_in_a_private_folder_removed_when_it_closes(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(short_tmp))
    listener, address = socket_folders.open_listener("samza-nb-test-", b"k" * 32)
    folder = Path(address).parent
    assert folder.name.startswith(f"samza-nb-test-{os.getpid()}-")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    threading.Thread(target=_accept_quietly, args=(listener,), daemon=True).start()
    with pytest.raises(AuthenticationError):  # a peer without the key is refused
        Client(address, family="AF_UNIX", authkey=b"wrong" * 7)
    socket_folders.close_listener(listener, address)
    assert not folder.exists()


def _accept_quietly(listener: Listener) -> None:
    try:
        listener.accept()
    except Exception:  # noqa: S110 - the handshake fails on purpose
        pass


def test_the_exit_handler_waits_for_a_close_in_flight_on_another_thread(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool closes its listener on a daemon thread; the exit handler must not remove the
    folder while that thread is between ``Listener.close`` and the socket's unlink, or
    multiprocessing's exit finalizer finds the file gone and prints a traceback."""
    monkeypatch.setattr("tempfile.tempdir", str(short_tmp))
    listener, address = socket_folders.open_listener("samza-nb-test-", b"k" * 32)
    inner = listener._listener  # type: ignore[attr-defined]
    in_close = threading.Event()
    original_close = inner.close

    def slow_close() -> None:  # the close thread, paused inside the socket's own close
        in_close.set()
        time.sleep(0.3)
        original_close()

    monkeypatch.setattr(inner, "close", slow_close)
    closing = threading.Thread(target=socket_folders.close_listener, args=(listener, address))
    closing.start()
    assert in_close.wait(5)
    socket_folders._close_all()  # the exit handler, while the close is in flight
    unlinks = [f for f in multiprocessing.util._finalizer_registry.values() if f._args == (address,)]
    closing.join(5)
    assert unlinks == []  # the socket's unlink ran before the folder went
    assert not Path(address).parent.exists()
