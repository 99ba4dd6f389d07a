"""Unix domain sockets in private folders: a listener made in a new folder that only this
user can enter (``<prefix><pid>-<random>`` in the temporary directory), closed and removed
when the process exits, and the folders of processes that are gone (killed before their exit
handler ran) swept when a new one is made. Resident workers (runtime/executors/resident_workers.py)
talk to the job's process through one."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import socket
import tempfile
import threading
from multiprocessing.connection import Listener

__all__ = ["close_listener", "open_listener", "wake_accept"]

#: Open listeners by folder, closed and removed at exit if still there.
_open: dict[str, Listener] = {}
#: One close at a time. A pool closes its listener on a daemon thread, which still runs while
#: the exit handler does: without this, the handler could remove the folder between that
#: thread's ``Listener.close`` (which hands the close on) and the socket's own unlink, and
#: multiprocessing's exit finalizer would then print a FileNotFoundError traceback.
_closing = threading.Lock()
#: How long the exit handler waits for a close in flight before removing folders anyway.
_EXIT_WAIT_S = 5.0


def open_listener(prefix: str, authkey: bytes) -> tuple[Listener, str]:
    """A listener on ``<folder>/epochs.sock`` that accepts only peers proving ``authkey``
    (``multiprocessing.connection``'s HMAC handshake); its address."""
    _remove_orphaned(prefix)
    folder = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")  # mode 0700
    address = os.path.join(folder, "epochs.sock")
    try:
        listener = Listener(address, family="AF_UNIX", authkey=authkey)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _open[folder] = listener
    return listener, address


def close_listener(listener: Listener, address: str) -> None:
    """Close ``listener`` (which unlinks its socket file) and remove its folder."""
    with _closing:
        _close(listener, address)


def wake_accept(address: str) -> None:
    """Unblock a thread waiting in the listener's ``accept`` (closing a listening socket does
    not) with a connection that fails the handshake."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(1.0)
            probe.connect(address)
    except OSError:
        pass  # nothing is accepting any more


def _close(listener: Listener, address: str) -> None:
    with contextlib.suppress(OSError):
        listener.close()
    folder = os.path.dirname(address)
    shutil.rmtree(folder, ignore_errors=True)
    _open.pop(folder, None)


def _remove_orphaned(prefix: str) -> None:
    """Remove the folders of ``prefix`` whose process is gone: a process that was killed
    (SIGKILL, a crash) never ran its exit handler."""
    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+)-")
    for name in names:
        match = pattern.match(name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        except OSError:
            pass  # alive, someone else's: not ours to touch


@atexit.register
def _close_all() -> None:
    locked = _closing.acquire(timeout=_EXIT_WAIT_S)
    try:
        for folder, listener in list(_open.items()):
            _close(listener, os.path.join(folder, "epochs.sock"))
    finally:
        if locked:
            _closing.release()
