"""Counts the walk of one message through a task epoch: the modules of samza_nb it passes,
how often it moves from one module to another (a "stay" is each run of steps in one module)
and how many of those moves are returns to a module it had called out of.

The job is the quickstart (filter, partition_by, a keyed tumbling window, map, send_to) over
one page view, every stream of one partition, run with ``executor="local"`` so that its task
epochs run in this process, where a profile hook (``sys.setprofile`` and
``threading.setprofile``) follows every call and return inside each ``run_task_epoch``. Steps
in code outside samza_nb (the user's lambdas, the standard library, rocksdict) count toward the
samza_nb module that called them; the operator chains samza_nb compiles count as ``<chain>``.

For the task epoch that reads the message, two walks are printed:

  read   from the task asking its system for the message to the operators' output buffered
         for the next stream (the ``_read`` of each input that had something to read)
  epoch  the whole task epoch: setup, stores, read, timers, output appends, flush, checkpoint

The script uses the public API only, so it measures older trees too:

    .venv/bin/python engine/message_walk.py
    git worktree add /tmp/old <commit> && PYTHONPATH=/tmp/old .venv/bin/python engine/message_walk.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import samza_nb
from samza_nb import KV, StreamApplication, Windows, run
from samza_nb.systems import EmbeddedSystem

PACKAGE_DIR = str(Path(samza_nb.__file__).resolve().parent)
_CHAIN = "<chain>"


def module_of(frame: FrameType) -> str | None:
    """The samza_nb module a frame runs in (dotted, under samza_nb), else None."""
    filename = frame.f_code.co_filename
    if filename.startswith("<samza_nb chain"):
        return _CHAIN
    if not filename.startswith(PACKAGE_DIR):
        return None
    relative = filename[len(PACKAGE_DIR) + 1 :].removesuffix(".py").replace("/", ".")
    return relative.removesuffix(".__init__")


def _nearest_module(frame: FrameType | None) -> str | None:
    while frame is not None:
        module = module_of(frame)
        if module is not None:
            return module
        frame = frame.f_back
    return None


@dataclass
class Walk:
    """A walk: the modules in the order first entered, the stays, the returns."""

    modules: list[str] = field(default_factory=list)
    stays: int = 0
    returns: int = 0
    current: str | None = None

    def step(self, module: str | None, *, returning: bool) -> None:
        if module is None or module == self.current:
            return
        self.current = module
        self.stays += 1
        self.returns += returning
        if module not in self.modules:
            self.modules.append(module)

    def summary(self) -> dict[str, Any]:
        return {"modules": len(self.modules), "stays": self.stays, "returns": self.returns}


@dataclass
class EpochWalk:
    """One task epoch's walk, and the walk of its reads of inputs that had messages."""

    messages: int
    epoch: Walk = field(default_factory=Walk)
    read: Walk = field(default_factory=Walk)


def _is(frame: FrameType, name: str) -> bool:
    return frame.f_code.co_name == name and module_of(frame) is not None


class EpochTracer:
    """Records an EpochWalk for every ``run_task_epoch`` call, in whichever thread it runs."""

    def __init__(self) -> None:
        self.walks: list[EpochWalk] = []
        self._epochs: dict[int, tuple[FrameType, EpochWalk]] = {}
        self._reads: dict[int, FrameType] = {}
        self._lock = threading.Lock()

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event not in ("call", "return"):
            return
        thread = threading.get_ident()
        opened = self._epochs.get(thread)
        if opened is None:
            if event == "call" and _is(frame, "run_task_epoch"):
                assignment = frame.f_locals["assignment"]
                messages = sum(assignment.bounds.values()) - sum(assignment.start_offsets.values())
                walk = EpochWalk(messages)
                walk.epoch.step(module_of(frame), returning=False)
                self._epochs[thread] = (frame, walk)
            return
        epoch_frame, walk = opened
        reading = self._reads.get(thread)
        if event == "call":
            module = module_of(frame)
            walk.epoch.step(module, returning=False)
            if reading is not None:
                walk.read.step(module, returning=False)
            elif _is(frame, "_read") and frame.f_locals["bound"] > frame.f_locals["start"]:
                self._reads[thread] = frame
                walk.read.current = None
                walk.read.step(module, returning=False)
            return
        if frame is epoch_frame:
            del self._epochs[thread]
            with self._lock:
                self.walks.append(walk)
            return
        module = _nearest_module(frame.f_back)
        walk.epoch.step(module, returning=True)
        if frame is reading:
            del self._reads[thread]
        elif reading is not None:
            walk.read.step(module, returning=True)

    def __enter__(self) -> EpochTracer:
        threading.setprofile(self)
        sys.setprofile(self)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)


def quickstart_walks() -> list[EpochWalk]:
    """The walks of the quickstart's task epochs over one page view."""
    with tempfile.TemporaryDirectory(prefix="message-walk-") as data:
        system = EmbeddedSystem("embedded", path=f"{data}/log")
        system.create_stream("page-views", partitions=1)
        system.write("page-views", [{"page": "home", "country": "US"}])
        system.end_stream("page-views")
        app = StreamApplication(
            "walk", config={"job.home": f"{data}/home", "job.intermediate.stream.partitions": 1}
        )
        views = app.input(system.input("page-views", partitions=1))
        counts = app.output(system.output("counts", partitions=1))
        (
            views.filter(lambda v: v["country"] == "US")
            .partition_by(lambda v: v["page"], op_id="by-page")
            .window(
                Windows.keyed_tumbling(
                    lambda kv: kv.key,
                    timedelta(seconds=10),
                    initial=lambda: 0,
                    fold=lambda kv, n: n + 1,
                ),
                op_id="count",
            )
            .map(lambda pane: KV(pane.key.key, pane.message))
            .send_to(counts)
        )
        with EpochTracer() as tracer:
            run(app, until="end-of-stream", executor="local")
        return tracer.walks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modules", action="store_true", help="also list the modules each walk passes")
    args = parser.parse_args()
    walks = quickstart_walks()
    busiest = max(walks, key=lambda walk: (walk.messages, walk.epoch.stays))
    print(f"tree {PACKAGE_DIR}: {len(walks)} task epochs; the one reading the message:")
    for name, walk in (("read", busiest.read), ("epoch", busiest.epoch)):
        summary = walk.summary()
        print(f"  {name:<6} {summary['stays']:>4} stays in {summary['modules']:>2} modules, {summary['returns']:>4} returns")
        if args.modules:
            print("         " + " ".join(walk.modules))


if __name__ == "__main__":
    main()
