"""Opening a task store's RocksDB: where it lives, its options, and the bounded wait while
another process (a resident worker that kept it open) holds its lock."""

from __future__ import annotations

import time
from pathlib import Path

from rocksdict import Options, Rdict

from samza_nb.errors import DiskFullError, JobError, is_disk_full
from samza_nb.model import location_folder, path_safe

__all__ = ["StoreHeldOpen", "no_space", "open_rdict", "store_path", "task_store_folder"]

#: RocksDB keeps this many info LOG files per store (each open rolls one over).
_KEEP_LOG_FILES = 2
#: How long opening a store waits for another process to release it (a resident worker that
#: kept it open is told to release it, or is returning), and how often it tries.
_LOCK_WAIT_S = 30.0
_LOCK_RETRY_S = 0.005
_WRITE_BUFFER_BYTES = 4 << 20
_OPEN_TABLE_FILES = 64



def _options() -> Options:
    options = Options(raw_mode=True)
    # A resident worker keeps its tasks' stores open (many per process): each flushes its
    # memtable at 4 MB (RocksDB's default is 64 MB; Samza divides 32 MB among a container's
    # tasks) and keeps at most 64 of its table files open.
    options.set_write_buffer_size(_WRITE_BUFFER_BYTES)
    options.set_max_open_files(_OPEN_TABLE_FILES)
    options.set_keep_log_file_num(_KEEP_LOG_FILES)
    # Outside resident workers a task opens its stores every epoch: opening must not read
    # every table file's stats.
    options.set_skip_stats_update_on_db_open(True)
    # ... nor start RocksDB's default 16 threads to open a handful of table files (strace: 16
    # clone3 calls per open; one thread opens them as fast).
    options.set_max_file_opening_threads(1)
    return options


def store_path(store_root: str | Path, location_id: str, task: str, store: str) -> Path:
    """``{store_root}/{location_id}/{task}/{store}`` with path-safe components."""
    return Path(store_root) / location_folder(location_id) / path_safe(task) / path_safe(store)


def task_store_folder(store_root: str | Path, location_id: str, task: str) -> str:
    """The folder holding every store of ``task`` at ``location_id``."""
    return str(Path(store_root) / location_folder(location_id) / path_safe(task))


def _held_by_another_process(error: Exception) -> bool:
    """Whether RocksDB refused to open a store because another process holds its ``LOCK``."""
    text = str(error)
    return "While lock file" in text and "LOCK" in text


class StoreHeldOpen(JobError):
    """Another process holds a store open: RocksDB refused its ``LOCK`` file."""


def open_rdict(path: Path, name: str, task: str, wait_s: float | None = None) -> Rdict:
    """``Rdict(path)``, waiting up to ``wait_s`` (default :data:`_LOCK_WAIT_S`) while another
    process holds the store open."""
    wait_s = _LOCK_WAIT_S if wait_s is None else wait_s
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return Rdict(str(path), _options())
        except Exception as error:  # RocksDB reports everything as a bare Exception
            text = str(error)
            if is_disk_full(error):
                raise DiskFullError(no_space(name, task, path)) from error
            if "lock hold by current process" in text or "Too many open files" in text:
                # Not the store's fault, and waiting would not help: never rebuild it.
                msg = f"store {name!r} of task {task!r} at {path} cannot be opened here: {text}"
                raise JobError(msg) from error
            if not _held_by_another_process(error):
                raise
            if time.monotonic() >= deadline:
                msg = (
                    f"store {name!r} of task {task!r} at {path} is still held open by another "
                    f"process after {wait_s:.0f} s (RocksDB: {error})"
                )
                raise StoreHeldOpen(msg) from error
            time.sleep(_LOCK_RETRY_S)


def no_space(name: str, task: str, path: Path) -> str:
    """The one line for a store whose device is full (RocksDB's own text repeats the path)."""
    return (
        f"store {name!r} of task {task!r} at {path}: no space left on device; free space "
        f"there and run the job again"
    )
