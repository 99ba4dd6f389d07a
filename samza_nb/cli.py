"""The ``samza-nb`` command.

Each subcommand is a small function that adds its parser to the shared subparsers and sets
``handler`` (``args -> exit code``); it is listed once in :data:`COMMANDS`. Expected failures
(:class:`~samza_nb.errors.SamzaNbError`) print one line (plus the service log's last lines)
and exit 1; bugs keep their traceback.

    samza-nb services install|up [NAMES...]|down [NAMES...]|status [NAMES...]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from samza_nb import services
from samza_nb.errors import SamzaNbError

__all__ = ["COMMANDS", "add_services_command", "build_parser", "main"]


def _print_infos(infos: Sequence[services.ServiceInfo]) -> None:
    for info in infos:
        # Addresses only: a ServiceInfo's env may carry an account key and is never printed.
        line = f"{info.name:<10} {info.state:<11} {info.address}"
        if info.seconds is not None:
            line += f"  ({info.seconds:.1f} s)"
        print(line.rstrip())
        for log_file in info.log_files if info.state in ("started", "unhealthy") else ():
            print(f"{'':<10} log {log_file}")


def _services(args: argparse.Namespace) -> int:
    names = args.names or None
    if args.action == "install":
        for name in services.install(names):
            print(f"{name:<10} ready")
        return 0
    if args.action == "up":
        _print_infos(services.up(names, timeout=args.timeout))
        print(f"env file   {services.env_file_path()}")
        return 0
    if args.action == "down":
        _print_infos(services.down(names))
        return 0
    infos = services.status(names)
    _print_infos(infos)
    print(f"env file   {services.env_file_path()}")
    return 0 if all(info.state != "unhealthy" for info in infos) else 1


def add_services_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``samza-nb services install|up|down|status [NAMES...]``."""
    parser = subparsers.add_parser(
        "services",
        help="start, stop and report the engine-room services (ZooKeeper, Azurite, Kafka, Spark)",
        description=(
            "Run the real services on 127.0.0.1 and free ports; their addresses go to one env "
            "file ($SAMZA_NB_SERVICES_ENV, default $SAMZA_NB_SERVICES_DIR/services.env). "
            "`up` without names starts zookeeper, kafka and azurite; spark (a standalone master "
            "and two workers) starts only when named. See docs/services.md."
        ),
    )
    parser.add_argument("action", choices=["install", "up", "down", "status"])
    parser.add_argument("names", nargs="*", metavar="NAME", help="zookeeper, kafka, azurite, spark")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds each service may take to start"
    )
    parser.set_defaults(handler=_services)


#: Every subcommand: a function adding its parser to the subparsers. Add ``run``, ``plan`` and
#: ``drain`` here as they are written (one small function each, like add_services_command).
COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    add_services_command,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="samza-nb", description="Samza-style stream pipelines on Spark, from notebooks."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_command in COMMANDS:
        add_command(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``samza-nb``; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except SamzaNbError as error:
        print(f"samza-nb: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
