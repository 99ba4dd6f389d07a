"""Detached service processes: spawn, identify, health-wait and stop, with bounded waits.

Every service process is started in its own session (``start_new_session=True``) so that it
outlives the command that started it and so that stopping it can signal the whole process group
(a Spark worker's executors, a shell wrapper's child) at once. A process is recorded as
:class:`ProcessRecord` (pid, process group and start time) in the service's state file; the
start time guards against a recycled pid being mistaken for our service.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from samza_nb.errors import ServiceError

__all__ = [
    "ProcessRecord",
    "free_ports",
    "group_members",
    "is_alive",
    "log_tail",
    "port_open",
    "spawn",
    "stop_processes",
    "wait_healthy",
]

_PROC = Path("/proc")

# Popen objects of the processes this Python process started. Keeping them lets us reap our own
# children after stopping them (no zombies while pytest runs) and avoids the ResourceWarning
# Popen emits when it is garbage-collected while its child still runs.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class ProcessRecord:
    """One process of a service, as written to the service's state file."""

    role: str
    pid: int
    pgid: int
    start_time: int | None
    log_file: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessRecord:
        start = data.get("start_time")
        return cls(
            role=str(data["role"]),
            pid=int(data["pid"]),
            pgid=int(data["pgid"]),
            start_time=None if start is None else int(start),
            log_file=str(data["log_file"]),
        )


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (which may contain spaces)."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def _start_time(pid: int) -> int | None:
    fields = _stat_fields(pid)
    # Field 22 of stat is the start time; fields[0] here is field 3 (the state).
    return int(fields[19]) if fields and len(fields) > 19 else None


def _reap(pid: int) -> None:
    """Collect the exit status of our own child so it does not linger as a zombie."""
    child = _CHILDREN.get(pid)
    if child is not None:
        child.poll()  # Keeps the exit code on the Popen for error messages.
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def is_alive(record: ProcessRecord) -> bool:
    """Whether the recorded process still runs (zombies count as gone, recycled pids too)."""
    _reap(record.pid)
    if _PROC.is_dir():
        fields = _stat_fields(record.pid)
        if fields is None or fields[0] in ("Z", "X"):
            return False
        return record.start_time is None or _start_time(record.pid) == record.start_time
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group.

    Linux never hands out a pid equal to an existing process group id, so every member found
    here belongs to the group we created, even when its leader has already exited.
    """
    if not _PROC.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # fields[0] is the state, fields[2] the process group id.
        if fields and len(fields) > 2 and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def spawn(
    role: str,
    argv: Sequence[str],
    *,
    log_file: Path,
    cwd: Path,
    env: Mapping[str, str] | None = None,
) -> ProcessRecord:
    """Start ``argv`` detached in a new session, output appended to ``log_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    # One log per start, so a failure's last lines are about this start; keep the previous one.
    if log_file.exists():
        os.replace(log_file, log_file.with_name(log_file.name + ".1"))
    with open(log_file, "ab") as log:
        header = f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting {role}: {' '.join(argv)}\n"
        log.write(header.encode())
        log.flush()
        try:
            child = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as error:
            msg = f"cannot start {role} ({argv[0]}): {error.strerror or error}; see {log_file}"
            raise ServiceError(msg, service=role, log_file=str(log_file)) from error
    _CHILDREN[child.pid] = child
    return ProcessRecord(
        role=role,
        pid=child.pid,
        pgid=child.pid,  # start_new_session makes the child the leader of a new group.
        start_time=_start_time(child.pid),
        log_file=str(log_file),
    )


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports that are free right now on ``host``.

    All sockets stay open until every port is chosen so the kernel cannot hand out the same port
    twice; another program may still take one before the service binds it, which then shows up
    as a start failure naming the service and its log.
    """
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def log_tail(log_file: str | Path, lines: int = 5, max_chars: int = 600) -> str:
    """The last lines of a log, for error messages; empty when there is no log."""
    try:
        with open(log_file, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 8192))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    tail = "\n".join(line for line in text.splitlines()[-lines:] if line.strip())
    return tail[-max_chars:]


def _exit_code(record: ProcessRecord) -> int | None:
    child = _CHILDREN.get(record.pid)
    return None if child is None else child.poll()


def wait_healthy(
    service: str,
    records: Sequence[ProcessRecord],
    check: Callable[[], bool],
    *,
    timeout: float,
    interval: float = 0.1,
) -> None:
    """Poll ``check`` until it returns True, failing fast when a process exits.

    Raises :class:`ServiceError` naming the service and the log of the process at fault when a
    process dies or the service is not healthy within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        for record in records:
            if not is_alive(record):
                code = _exit_code(record)
                how = f"exited with code {code}" if code is not None else "exited"
                tail = log_tail(record.log_file)
                who = service if record.role == service else f"{service}: {record.role}"
                msg = f"{who} {how} while starting; see its log {record.log_file}" + (
                    f"\n--- last lines ---\n{tail}" if tail else ""
                )
                raise ServiceError(msg, service=service, log_file=record.log_file)
        with contextlib.suppress(OSError):
            if check():
                return
        if time.monotonic() >= deadline:
            log = records[0].log_file if records else ""
            tail = log_tail(log) if log else ""
            msg = f"{service} did not become healthy within {timeout:g} s; see its log {log}" + (
                f"\n--- last lines ---\n{tail}" if tail else ""
            )
            raise ServiceError(msg, service=service, log_file=log or None)
        time.sleep(interval)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _wait_gone(records: Sequence[ProcessRecord], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if not list(_leftovers(records)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _leftovers(records: Sequence[ProcessRecord]) -> Iterator[int]:
    for record in records:
        if is_alive(record):
            yield record.pid
        yield from (pid for pid in group_members(record.pgid) if pid != record.pid)


def _owned(record: ProcessRecord) -> bool:
    """Whether the record's process group may still be signalled.

    When the leader's pid now belongs to another program (same pid, different start time), our
    group was empty when the pid was recycled (Linux never reuses a live group's id), so there is
    nothing of ours left and the other program must not be signalled.
    """
    if record.start_time is None or not _PROC.is_dir():
        return True
    current = _start_time(record.pid)
    return current is None or current == record.start_time


def stop_processes(service: str, records: Sequence[ProcessRecord], *, grace: float = 10.0) -> None:
    """SIGTERM every process group, then SIGKILL what is left, then verify nothing remains."""
    owned = [record for record in records if _owned(record)]
    for record in owned:
        _signal_group(record.pgid, signal.SIGTERM)
    if _wait_gone(owned, grace):
        return
    for record in owned:
        _signal_group(record.pgid, signal.SIGKILL)
    if _wait_gone(owned, 5.0):
        return
    left = sorted(set(_leftovers(owned)))
    log = owned[0].log_file if owned else None
    msg = f"{service}: processes {left} are still running after SIGKILL"
    raise ServiceError(msg, service=service, log_file=log)
