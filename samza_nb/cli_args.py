"""What every application command of ``samza-nb`` shares: naming the application
(``module:app``), its config (``--config`` file, ``--set`` pairs) and its checked plan."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from samza_nb.config import Config, json_config, properties_config
from samza_nb.errors import ConfigError
from samza_nb.secrecy import secret_exposed

if TYPE_CHECKING:
    from samza_nb.api import ExecutionPlan, StreamApplication

__all__ = [
    "add_app_arguments",
    "app_config",
    "app_of",
    "checked_plan",
    "non_negative_seconds",
    "positive_int",
]


def app_config(args: argparse.Namespace) -> Config:
    """``--config file.properties`` with ``--set key=value`` overrides on top."""
    entries: dict[str, str] = {}
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            msg = f"--config {args.config}: no such file"
            raise ConfigError(msg)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            msg = f"{path}: not UTF-8 text (byte {error.start}); save the config file as UTF-8"
            raise ConfigError(msg) from None
        if path.suffix == ".json":  # what start_processor writes: any value, newlines included
            entries.update(json_config(text, source=str(path)))
        else:
            entries.update(properties_config(text, source=str(path)))
    for assignment in args.set or ():
        key, equals, value = assignment.partition("=")
        if not equals or not key.strip():
            msg = f"--set {assignment!r} must be written key=value"
            raise ConfigError(msg)
        key, value = key.strip(), value.strip()
        entries[key] = value
        warning = secret_exposed(key, value, "on a command line any user of this machine can read (ps)")
        if warning is not None:
            print(f"samza-nb: {warning}", file=sys.stderr)
    return Config(entries)


def app_of(args: argparse.Namespace) -> StreamApplication:
    from samza_nb.api.loading import load_application

    # The application's module is found relative to where the command runs, like `python -m`.
    if "" not in sys.path:
        sys.path.insert(0, "")
    return load_application(args.app)


def add_app_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("app", metavar="MODULE:APP", help="e.g. my_jobs.pages:app (an app or a function building one)")
    parser.add_argument("--config", metavar="FILE", help="a Samza-style .properties file (or a .json object of settings)")
    parser.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="a config entry over the file (repeatable)"
    )


def checked_plan(args: argparse.Namespace) -> ExecutionPlan:
    """The plan of APP with its config, its component names checked (:func:`check_names`)."""
    plan: ExecutionPlan = app_of(args).plan(app_config(args))
    check_names(plan)
    return plan


def check_names(plan: ExecutionPlan) -> None:
    """Refuse a coordinator, metadata store or grouper (task or SSP) name that is not registered, and an
    unknown processing guarantee: before a command looks in the wrong place (reset, drain) for
    a job coordinated elsewhere, and so that `samza-nb plan` refuses what `samza-nb run`
    would."""
    from samza_nb.coordination.coordinator import coordinator_factory
    from samza_nb.grouping.registry import check_grouper_name, ssp_grouper_from_config
    from samza_nb.metadata.registry import check_metadata_store_name
    from samza_nb.runtime.task.exactly_once import exactly_once

    config = plan.config
    coordinator_factory(config.get_str("job.coordinator.factory") or "embedded")
    check_metadata_store_name(config.get_str("metadata.store.factory") or "embedded")
    grouper = config.get_str("task.name.grouper.factory")
    if grouper:
        check_grouper_name(grouper)
    ssp_grouper_from_config(config, ["0"])  # its name, and what it refuses with it
    exactly_once(plan)


def non_negative_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also refuses nan
        msg = f"expected a number of seconds >= 0, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return seconds


def positive_int(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        msg = f"expected a whole number >= 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return number
