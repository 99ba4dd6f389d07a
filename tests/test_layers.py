"""Layers import downward only (DESIGN.md, "Layers and who may import whom"): every import of a
samza_nb module, at module level or inside a function, is checked against the table below.

The table is DESIGN.md's, with the small shared modules it leaves out placed where their imports
put them: ``secrecy`` (masking secrets) below everything, ``config_keys`` beside ``config``,
``kafka_settings`` (Kafka client settings shared by the Kafka system and the Kafka metadata
store) and ``spark_classes`` (where the Spark class-data archive is, shared by the driver's launch
and the standalone workers) above ``config``; ``examples`` and ``demo`` sit on top with the CLI.

The runtime is split along the process seam into sub-layers: its root modules (the epoch data,
checkpoints, offsets: the contract) below ``runtime.task`` (what runs in a worker), below
``runtime.executors`` (the transport), below ``runtime.processor`` (the driver's loop); the
``job`` package runs processors and sits above them all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "samza_nb"

_FOUNDATION = {"errors", "secrecy"}
_CONFIG = _FOUNDATION | {"config", "config_keys"}
_TOP = None  # may import anything below it
_RUNTIME_BELOW = _CONFIG | {
    "plan", "drain", "coordination", "grouping", "metadata", "systems", "model", "kafka_settings", "spark_classes",
}
_RUNTIME_PARTS = {"task", "executors", "processor"}

#: Layer (a top-level module or subpackage of samza_nb) -> the layers it may import.
MAY_IMPORT: dict[str, set[str] | None] = {
    "errors": set(),
    "secrecy": set(),
    "config_keys": {"errors", "secrecy"},
    "config": _FOUNDATION | {"config_keys"},
    "kafka_settings": _CONFIG,
    "spark_classes": _CONFIG,
    "services": _CONFIG | {"spark_classes"},
    "model": _FOUNDATION,
    "metadata": _CONFIG | {"kafka_settings"},
    "systems": _CONFIG | {"model", "kafka_settings"},
    "grouping": _CONFIG | {"model"},
    "plan": _CONFIG | {"model"},
    "coordination": _CONFIG | {"grouping", "metadata", "model"},
    "drain": _CONFIG | {"metadata", "model"},
    "runtime": _RUNTIME_BELOW,
    "runtime.task": _RUNTIME_BELOW | {"runtime"},
    "runtime.executors": _RUNTIME_BELOW | {"runtime", "runtime.task"},
    "runtime.processor": _RUNTIME_BELOW | {"runtime", "runtime.task", "runtime.executors"},
    "job": _RUNTIME_BELOW | {"runtime", "runtime.task", "runtime.executors", "runtime.processor"},
    "api": _CONFIG | {"plan", "systems", "model"},
    "cli": _TOP, "cli_args": _TOP, "cli_drain": _TOP, "cli_hints": _TOP,
    "notebook": _TOP, "testing": _TOP, "examples": _TOP, "demo": _TOP,
}


def _layer_of(parts: tuple[str, ...] | list[str]) -> str:
    """The layer of a module given its dotted parts below samza_nb (runtime's parts are layers)."""
    if parts[0] == "runtime" and len(parts) > 1 and parts[1] in _RUNTIME_PARTS:
        return f"runtime.{parts[1]}"
    return parts[0]


def _layer(path: Path) -> str:
    return _layer_of(path.relative_to(PACKAGE).with_suffix("").parts)


def _imported_layers(path: Path) -> list[tuple[int, str]]:
    """(line, layer) of every samza_nb import in ``path``; the bare package counts as "samza_nb"."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "samza_nb":
                found.append((node.lineno, _layer_of(parts[1:]) if len(parts) > 1 else "samza_nb"))
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts != ("__init__.py",))


def test_every_module_belongs_to_a_layer() -> None:
    assert {_layer(p) for p in MODULES} <= MAY_IMPORT.keys()


@pytest.mark.parametrize("layer", sorted(k for k, v in MAY_IMPORT.items() if v is not None))
def test_a_layer_imports_only_the_layers_below_it(layer: str) -> None:
    allowed = MAY_IMPORT[layer] or set()
    broken = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports samza_nb.{imported}"
        for path in MODULES
        if _layer(path) == layer
        for line, imported in _imported_layers(path)
        if imported != layer and imported not in allowed
    ]
    assert not broken, f"{layer} may import only {sorted(allowed)}:\n" + "\n".join(broken)


def test_top_layers_are_not_imported_from_below() -> None:
    top = {name for name, allowed in MAY_IMPORT.items() if allowed is None}
    below = [p for p in MODULES if _layer(p) not in top]
    broken = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports samza_nb.{imported}"
        for path in below
        for line, imported in _imported_layers(path)
        if imported in top or imported == "samza_nb"
    ]
    assert not broken, "\n".join(broken)
