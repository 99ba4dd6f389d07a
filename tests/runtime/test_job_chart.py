"""``job.plot()``'s data: real units, one time axis for every panel, and rates that agree with
RunProgress's on the same course (pure: a JobHistory on a given clock, no Spark)."""

from __future__ import annotations

import re

import pytest

from samza_nb.job.charts import JobChart
from samza_nb.job.history import JobHistory
from samza_nb.job.rates import trailing_rate
from samza_nb.notebook.widgets._rate import RateMeter

#: (clock time, input messages read, lag) at each commit of a job begun at 100.0 s: it reads
#: 1,000 messages, fast then slower, and idles after 116 s.
_COURSE = [
    (101.0, 0, 1_000),
    (102.0, 200, 800),
    (104.0, 500, 500),
    (107.0, 700, 300),
    (112.0, 900, 100),
    (116.0, 1_000, 0),
    (127.0, 1_000, 0),
]


def _history() -> JobHistory:
    times = iter([100.0] + [at for at, _, _ in _COURSE])
    history = JobHistory(clock=times.__next__, lag_interval=0.0)
    history.begin()
    for epoch, (_at, read, lag) in enumerate(_COURSE, start=1):
        history.add(epoch, read, read, lag)
    return history


def _chart(*panels: str, x: str = "seconds") -> JobChart:
    history = _history()
    return JobChart("course", history.rows(), panels or ("rate", "lag"), x, history.average_rate())


def test_the_panels_are_in_messages_per_second_and_messages_with_labelled_axes() -> None:
    chart = _chart()
    rate, lag = chart.panel("rate"), chart.panel("lag")
    assert (rate.unit, lag.unit) == ("messages/s", "messages")
    assert rate.x_label == lag.x_label == "seconds since the job started"
    # The lag panel holds the lags themselves, its axis tops at a round number above the peak.
    assert lag.legend == ["lag (latest 0, peak 1,000 messages)"]
    assert lag.values == [1_000.0, 800.0, 500.0, 300.0, 100.0, 0.0, 0.0]
    assert lag.y_max == 1_000.0
    assert rate.y_max >= max(rate.values) and rate.y_max == 200.0
    svg = chart.to_svg()
    assert not re.search(r">\d+%<", svg)  # no axis in percent of a maximum any more
    labels = re.findall(r'class="samza-y-label"[^>]*>([^<]+)<', svg)
    assert labels == ["messages/s", "messages"]
    assert svg.count("seconds since the job started") == 2
    ticks = re.findall(r'class="samza-y-tick"[^>]*>([^<]+)<', svg)
    assert ticks == ["0", "100", "200", "0", "500", "1k"]


def test_every_panel_shares_one_time_axis_from_the_jobs_start() -> None:
    chart = _chart("rate", "lag", "messages_in", "messages_out", "epoch")
    panels = [chart.panel(name) for name in chart.panels]
    assert {panel.x_range for panel in panels} == {(0.0, 27.0)}
    # The rate has no value at the first commit, the lag has: their lines still sit on one axis.
    rate, lag = panels[0], panels[1]
    assert lag.x[0] == 1.0 and rate.x[0] == 2.0
    svg = chart.to_svg()
    x_ticks = re.findall(r'class="samza-x-tick"[^>]*>([^<]+)<', svg)
    assert x_ticks == ["0", "13.5", "27"] * 5
    lines = dict(re.findall(r'data-series="(\w+)" points="([^"]+)"', svg))
    first_x = {name: float(points.split()[0].split(",")[0]) for name, points in lines.items()}
    last_x = {name: float(points.split()[-1].split(",")[0]) for name, points in lines.items()}
    # Same x for the same second in every panel: lag and rate end at the same pixel.
    assert len(set(last_x.values())) == 1
    assert first_x["rate"] > first_x["lag"]
    by_epoch = _chart("messages_in", x="epoch").panel("messages_in")
    assert by_epoch.x_range == (1.0, 7.0) and by_epoch.x_label == "epoch"


def test_a_job_begun_before_its_first_sample_counts_seconds_from_its_start() -> None:
    rows = _history().rows()
    assert [row["seconds"] for row in rows] == [1.0, 2.0, 4.0, 7.0, 12.0, 16.0, 27.0]


def test_the_rate_is_run_progresss_rate_on_the_same_course() -> None:
    """RunProgress's meter refreshed at each commit shows the rate the chart draws there, and
    once done the chart's stated average is the job's, which RunProgress shows then."""
    history = _history()
    times = iter([at for at, _, _ in _COURSE])
    meter = RateMeter(window=10.0, clock=times.__next__)
    seen = [meter.add(read, done=False) for _, read, _ in _COURSE]
    assert [row["rate"] for row in history.rows()] == seen
    # From the first commit until 10 s are covered, then from the last commit 10 s back or more.
    assert seen[1:4] == [200.0, 500 / 3, 700 / 6]
    assert seen[4:6] == [pytest.approx(700 / 10), pytest.approx(500 / 12)]  # 102 → 112, 104 → 116
    assert seen[6] == 0.0  # idle for more than the window
    chart = JobChart("course", history.rows(), average_rate=history.average_rate())
    assert chart.average_rate == history.average_rate() == 1_000 / 16
    rate = chart.panel("rate")
    assert rate.average == 1_000 / 16 and max(rate.values) == 200.0
    # The legend says which number is a peak and which an average, in RunProgress's format.
    assert rate.legend == [
        "rate over the last 10 s (peak 200.0/s)",
        "average 62.5/s from the start to the last input read (RunProgress's rate once done)",
    ]
    svg = chart.to_svg()
    assert 'class="samza-average"' in svg and "peak 200.0/s" in svg


def test_the_trailing_rate_spans_the_window_from_the_sample_before_it() -> None:
    assert trailing_rate([], 10.0) is None
    assert trailing_rate([(0.0, 5)], 10.0) is None
    assert trailing_rate([(1.0, 0), (1.0, 5)], 10.0) is None
    points = [(0.0, 0), (5.0, 50), (12.0, 120), (14.0, 160)]
    # From 0 s, the last sample at least 10 s before 14 s... none but the first: 160 / 14.
    assert trailing_rate(points, 10.0) == 160 / 14
    assert trailing_rate(points, 5.0) == (160 - 50) / 9  # from 5 s, 9 s before 14 s
    assert trailing_rate(points, 1.0) == 40 / 2  # never less than the last two samples


def test_a_chart_without_epochs_says_so() -> None:
    chart = JobChart("empty", [])
    assert chart.x_range == (0.0, 1.0)
    assert "not enough epochs to draw yet" in chart._repr_html_()
    assert chart.panel("rate").values == [] and chart.panel("rate").y_max == 1.0
