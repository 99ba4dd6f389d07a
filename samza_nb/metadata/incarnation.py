"""JobHomeGuard: notice a job's metadata store that was lost while its data stayed.

Checkpoints, epoch numbers and the dedup keys of appends live in the metadata store. If the
store disappears (``metadata.sqlite3`` deleted, a fresh ZooKeeper chroot) while the job's
outputs, intermediate streams, changelogs or store folders remain, a run would start from
offset zero and epoch zero again: old data counted twice, new appends dropped as duplicates of
old ones. The guard refuses that run with a message that says what it found and how to reset.

It records the job's *incarnation* (an id and a creation time) twice: in the metadata store and
in ``{job home}/incarnation.json``. A store without the record is new; it is adopted only when
the job home has no record either and the caller found no data of the job. Call
:meth:`JobHomeGuard.check` once per run, after taking the job lease and before planning.

>>> import tempfile, pathlib
>>> from samza_nb.metadata import InMemoryMetadataStore
>>> home = pathlib.Path(tempfile.mkdtemp())
>>> first = JobHomeGuard(home, InMemoryMetadataStore()).check()
>>> first.new
True
>>> JobHomeGuard(home, InMemoryMetadataStore()).check()  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
samza_nb.errors.MetadataStoreError: the metadata store ... of job home ... has lost its records ...
>>> import shutil; shutil.rmtree(home)
"""

from __future__ import annotations

import datetime
import json
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from samza_nb.errors import MetadataStoreError
from samza_nb.metadata.base import MetadataStore, namespaced_key
from samza_nb.secrecy import private_dir

__all__ = ["INCARNATION_FILE_NAME", "INCARNATION_KEY", "Incarnation", "JobHomeGuard"]

#: The metadata-store key of the incarnation record.
INCARNATION_KEY = namespaced_key("job-home", "incarnation")
#: The copy of the record inside the job home.
INCARNATION_FILE_NAME = "incarnation.json"

_RESET_HINT = (
    "To start the job over from its inputs, reset it with `samza-nb reset MODULE:APP` (it "
    "deletes the job home, the job's intermediate streams and changelogs), or put the lost "
    "metadata store back"
)


@dataclass(frozen=True)
class Incarnation:
    """One life of a job's state: from the first run on an empty job home until a reset."""

    id: str
    created: str
    new: bool = False  # created by this check

    def to_json(self) -> bytes:
        return json.dumps({"id": self.id, "created": self.created}).encode()


def _parse(data: bytes, where: str) -> Incarnation:
    try:
        value = json.loads(data)
        return Incarnation(str(value["id"]), str(value["created"]))
    except (ValueError, TypeError, KeyError) as error:
        msg = f"{where}: the job incarnation record is unreadable: {data[:60]!r}"
        raise MetadataStoreError(msg) from error


class JobHomeGuard:
    """Checks that ``store`` still holds the state of the job whose home is ``job_home``."""

    def __init__(self, job_home: str | os.PathLike[str], store: MetadataStore) -> None:
        self.job_home = Path(job_home).expanduser()
        self.store = store

    @property
    def marker_file(self) -> Path:
        return self.job_home / INCARNATION_FILE_NAME

    def check(self, found: Iterable[str] = ()) -> Incarnation:
        """The job's incarnation; a new one when the store and the job home are both fresh.

        ``found`` names the job's data that exist (``"changelog stream app-1-counts-changelog
        (3 messages)"``, ``"store folder /…/Partition 0/counts"``); with a fresh store any of
        it means the store was lost. Raises :class:`~samza_nb.errors.MetadataStoreError`
        saying what was found and how to reset the job.
        """
        evidence = list(found)
        # The file before the store: a first run writes the store first, then the file, so a
        # file seen here means its store record is already readable. (Read the other way round,
        # a process starting beside the first one could see no record in the store, then the
        # first one's file, and call the store lost.)
        recorded = self._read_file()
        stored = self.store.get(INCARNATION_KEY)
        if stored is None:
            if recorded is not None:
                mark = f"{self.marker_file} (incarnation {recorded.id} since {recorded.created})"
                evidence.insert(0, mark)
            if evidence:
                msg = (
                    f"the metadata store {self.store!r} of job home {str(self.job_home)!r} has "
                    f"lost its records (checkpoints, epochs) but the job's data remain: "
                    f"{'; '.join(evidence)}. Running on would count old data again and drop new "
                    f"output as duplicates. {_RESET_HINT}."
                )
                raise MetadataStoreError(msg)
            incarnation = Incarnation(
                uuid.uuid4().hex,
                datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                new=True,
            )
            # The store first: a crash before the file is written leaves a state check repairs.
            self.store.put(INCARNATION_KEY, incarnation.to_json())
            # Processes of one job starting at once may each create one: the last write wins,
            # and every one of them records (and returns) what the store holds now.
            agreed = _parse(self.store.get(INCARNATION_KEY) or incarnation.to_json(), repr(self.store))
            if agreed.id != incarnation.id:
                incarnation = Incarnation(agreed.id, agreed.created, new=True)
            self._write_file(incarnation)
            return incarnation
        current = _parse(stored, repr(self.store))
        if recorded is None:
            self._write_file(current)
        elif recorded.id != current.id:
            msg = (
                f"the metadata store {self.store!r} belongs to incarnation {current.id} (since "
                f"{current.created}) but job home {str(self.job_home)!r} to {recorded.id} (since "
                f"{recorded.created}): the store was replaced or job.home points at another "
                f"job's folder. {_RESET_HINT}."
            )
            raise MetadataStoreError(msg)
        return current

    def _read_file(self) -> Incarnation | None:
        try:
            data = self.marker_file.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            msg = f"cannot read {str(self.marker_file)!r}: {error.strerror}"
            raise MetadataStoreError(msg) from error
        return _parse(data, str(self.marker_file))

    def _write_file(self, incarnation: Incarnation) -> None:
        # A name of this writer's own: processes of one job may write the record at once.
        tmp = self.marker_file.with_name(f"{INCARNATION_FILE_NAME}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
        try:
            private_dir(self.job_home)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(incarnation.to_json())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.marker_file)
        except OSError as error:
            msg = f"cannot write {str(self.marker_file)!r}: {error.strerror}"
            raise MetadataStoreError(msg) from error
