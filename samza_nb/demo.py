"""``make demo``: the quickstart job on embedded defaults (local Spark, embedded log).

Generates page views into a fresh embedded system, runs the quickstart application to
end-of-stream, prints the stage outline and the per-page counts, and checks them against a
plain-Python count. Exits non-zero if they differ. The embedded system and the job's home go in
a temporary folder that is removed at the end, unless ``--path`` names a folder to keep.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time

from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import run
from samza_nb.systems import EmbeddedSystem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument(
        "--path", default=None, help="embedded system folder, kept (default: a temp dir, removed at the end)"
    )
    args = parser.parse_args(argv)
    if args.path is not None:
        return _demo(args.events, args.path)
    path = tempfile.mkdtemp(prefix="samza-nb-demo-")
    try:
        return _demo(args.events, path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _demo(count: int, path: str) -> int:
    system = EmbeddedSystem("embedded", path=path)
    events = generate_page_views(count)
    write_page_views(system, events)
    app = build_app(system)
    plan = app.plan()
    print(repr(plan))
    started = time.perf_counter()
    job = run(app, until="end-of-stream")
    seconds = time.perf_counter() - started
    frame = job.collect("page-counts")
    totals = frame.groupby("key")["value"].sum().to_dict()
    expected = expected_counts(events)
    (shuffle,) = plan.intermediate_streams
    crossed = job.metrics()["streams"][shuffle]["in"]
    print(f"\n{len(events)} page views, {sum(expected.values())} from the US, "
          f"{job.epoch} epochs in {seconds:.1f} s; {crossed} partial counts crossed the shuffle "
          "(merge=: each task counts per page and epoch); top pages:")
    for page, count in sorted(totals.items(), key=lambda item: -item[1])[:10]:
        print(f"  {page:<10} {count:>6}")
    if totals != expected:
        print("MISMATCH against the plain-Python count", file=sys.stderr)
        return 1
    print(f"OK: all {len(expected)} page totals equal the plain-Python count")
    return 0


if __name__ == "__main__":
    sys.exit(main())
