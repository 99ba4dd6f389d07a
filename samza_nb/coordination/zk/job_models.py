"""Versioned job models (SAMZA.md §8.5 steps 4e–4i, §8.7; Samza's ZkUtils).

``jobModelVersion`` holds the latest published version, ``activeJobModelVersion`` the last one
that reached consensus; each model is stored through a :class:`ZkMetadataStore` at
``jobModels/<version>`` (segments and CRC32 trailer). Versions are decimal strings ordered as
numbers.
"""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError

from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.errors import CoordinationError, ModelError
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.metadata.zookeeper import ZkMetadataStore
from samza_nb.model import JobModel

__all__ = ["JobModelVersions", "next_job_model_version"]


def _numeric(names: list[str]) -> list[int]:
    return sorted(int(name) for name in names if name.isdigit())


def next_job_model_version(current: str | None, published: list[str]) -> str:
    """``"1"`` with nothing published, else max(current, every published version) + 1.

    >>> next_job_model_version("1", ["1", "2"])
    '3'
    >>> next_job_model_version(None, [])
    '1'
    """
    numbers = _numeric(published)
    if current is not None and current.isdigit():
        numbers.append(int(current))
    return str(max(numbers) + 1) if numbers else "1"


class JobModelVersions:
    """The job models of one coordination tree and their version pointers."""

    def __init__(self, zk: ZkClient, keys: ZkKeyBuilder) -> None:
        self.zk = zk
        self.keys = keys
        self.models = ZkMetadataStore(None, keys.job_models, client=zk)

    def ensure_nodes(self) -> None:
        for path in (self.keys.job_model_version, self.keys.active_job_model_version):
            self.zk.ensure(path)
        self.zk.ensure(self.keys.job_models)

    def _read_text(self, path: str) -> tuple[str | None, int]:
        found = self.zk.get(path)
        if found is None:
            return None, -1
        text = found[0].decode("utf-8", "replace").strip()
        return (text or None), found[1].version

    def current(self) -> tuple[str | None, int]:
        """(latest published version or None, the node's stat version for compare-and-set)."""
        return self._read_text(self.keys.job_model_version)

    def active(self) -> str | None:
        return self._read_text(self.keys.active_job_model_version)[0]

    def set_active(self, version: str) -> None:
        """Make ``version`` the active one, never moving the active version back: a deposed
        leader that resumes late with an older barrier leaves the newer one standing (commits
        are fenced against it, zk/fencing.py)."""
        for _ in range(100):  # compare-and-set against other leaders' writes, bounded
            active, stat_version = self._read_text(self.keys.active_job_model_version)
            if active is not None and active.isdigit() and version.isdigit() and int(active) >= int(version):
                return
            if stat_version < 0:
                self.zk.put(self.keys.active_job_model_version, version.encode())
                return
            try:
                self.zk.set(self.keys.active_job_model_version, version.encode(), stat_version)
                return
            except BadVersionError:
                continue  # written meanwhile: read it again
        msg = f"could not set the active job model version to {version} under {self.keys.root}"
        raise CoordinationError(msg)

    def published(self) -> list[str]:
        return [str(n) for n in _numeric(self.zk.children(self.keys.job_models) or [])]

    def next_version(self, current: str | None) -> str:
        return next_job_model_version(current, self.published())

    def write(self, version: str, model: JobModel) -> None:
        self.models.put(version, model.to_json().encode())

    def read(self, version: str) -> JobModel:
        raw = self.models.get(version)
        if raw is None:
            msg = f"job model version {version} is missing under {self.keys.job_models}"
            raise CoordinationError(msg)
        try:
            return JobModel.from_json(raw)
        except ModelError as error:
            msg = f"job model version {version} under {self.keys.job_models} is unreadable: {error}"
            raise CoordinationError(msg) from error

    def publish(self, version: str, expected: int) -> None:
        """Compare-and-set ``jobModelVersion`` to ``version`` (``expected``: the stat version read)."""
        try:
            if expected < 0:
                self.zk.create(self.keys.job_model_version, version.encode(), makepath=True)
            else:
                self.zk.set(self.keys.job_model_version, version.encode(), version=expected)
        except (BadVersionError, NodeExistsError) as error:
            msg = (
                f"publishing job model version {version} failed: {self.keys.job_model_version} "
                "was changed by someone else meanwhile (two leaders?)"
            )
            raise CoordinationError(msg) from error

    def cleanup(self, keep: int) -> list[str]:
        """Delete all but the ``keep`` newest models; returns the deleted versions."""
        numbers = _numeric(self.zk.children(self.keys.job_models) or [])
        doomed = [str(n) for n in numbers[: max(0, len(numbers) - keep)]]
        for version in doomed:
            self.zk.delete_tree(self.keys.job_model(version))
        return doomed
