"""Times planning and drawing of a generated 100-operator application.

Target: plan + draw under 1 s. Prints the times and their ratio against a baseline measured
in the same run: building the same application's operator specs through the API (no
planning). Run: ``.venv/bin/python bench/plan.py [--operators 100] [--repeat 20]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from samza_nb.api import KV, MessageStream, StreamApplication, Windows
from samza_nb.plan.drawing import render_html, render_svg, render_text
from samza_nb.systems import EmbeddedSystem


def _build(operators: int, seed: int = 7) -> StreamApplication:
    """A mixed pipeline: chains, shuffles, joins, windows and merges over 4 inputs."""
    rng = random.Random(seed)
    system = EmbeddedSystem("embedded", path="/tmp/samza-nb-bench-unused")
    app = StreamApplication("bench", job_id="1")
    counts = [8, 8, 16, 4]
    streams: list[MessageStream] = [
        app.input(system.input(f"in-{i}", partitions=count)) for i, count in enumerate(counts)
    ]
    outputs = [app.output(system.output(f"out-{i}", partitions=8)) for i in range(4)]
    shuffles = 0
    while len(app.operator_ids) < operators:
        kind = rng.random()
        source = rng.choice(streams)
        if kind < 0.35:
            stream = source.map(lambda m: m)
        elif kind < 0.5:
            stream = source.filter(lambda m: True)
        elif kind < 0.6:
            shuffles += 1
            stream = source.partition_by(lambda m: m, op_id=f"p{shuffles}")
        elif kind < 0.68:
            shuffles += 1
            keyed = source.partition_by(lambda m: m, op_id=f"p{shuffles}")
            shuffles += 1
            other = rng.choice(streams).partition_by(lambda m: m, op_id=f"p{shuffles}")
            stream = keyed.join(
                other, lambda a, b: a, ttl=timedelta(seconds=5), op_id=f"j{shuffles}"
            )
        elif kind < 0.76:
            shuffles += 1
            stream = source.partition_by(lambda m: m, op_id=f"p{shuffles}").window(
                Windows.keyed_tumbling(lambda kv: kv.key, timedelta(seconds=10)),
                op_id=f"w{shuffles}",
            )
            stream = stream.map(lambda pane: KV(pane.key.key, pane.message))
        elif kind < 0.84:
            others = [s for s in rng.sample(streams, k=min(2, len(streams))) if s is not source]
            stream = source.merge(*others)
        else:
            source.send_to(rng.choice(outputs))
            continue
        streams.append(stream)
        if len(streams) > 12:
            streams.pop(rng.randrange(len(streams) - 4))
    for stream in streams[-4:]:
        stream.send_to(rng.choice(outputs))
    return app


def _time(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operators", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    app = _build(args.operators)
    plan = app.plan()
    build_s = _time(lambda: _build(args.operators), args.repeat)
    plan_s = _time(app.plan, args.repeat)
    svg_s = _time(lambda: render_svg(plan), args.repeat)
    html_s = _time(lambda: render_html(plan), args.repeat)
    text_s = _time(lambda: render_text(plan), args.repeat)
    total_s = _time(lambda: render_html(app.plan()), args.repeat)

    print(
        f"app: {len(plan.operators)} operators, {len(plan.stages)} stages, "
        f"{len(plan.intermediate_streams)} intermediate streams, {len(render_svg(plan)) // 1024} KiB SVG"
    )
    print(f"baseline  build specs through the API   {build_s * 1000:8.2f} ms")
    print(
        f"plan      app.plan()                    {plan_s * 1000:8.2f} ms  ({plan_s / build_s:5.1f}x baseline)"
    )
    print(
        f"draw      render_svg(plan)              {svg_s * 1000:8.2f} ms  ({svg_s / build_s:5.1f}x baseline)"
    )
    print(f"draw      render_html(plan)             {html_s * 1000:8.2f} ms")
    print(f"text      render_text(plan)             {text_s * 1000:8.2f} ms")
    print(
        f"total     plan + draw (HTML)            {total_s * 1000:8.2f} ms  "
        f"({total_s / build_s:5.1f}x baseline; target < 1000 ms: {'ok' if total_s < 1 else 'SLOW'})"
    )


if __name__ == "__main__":
    main()
