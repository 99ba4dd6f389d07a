"""docs/configuration.md is honest: every documented key and environment variable is read by
the code, every documented value of a registry-backed key is accepted, and every known key is
documented.

A key counts as read where a module other than the key table (config_keys.py) hands its string,
or a module-level name bound to it, to a call (``config.get_int("task.window.ms")``,
``seconds(KEY)``), indexes with it or tests it with ``in``: a key named only in the table, a
docstring, a message or a dict literal of settings is read by no code path."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from samza_nb.config import ENVIRONMENT, KNOWN_KEYS
from samza_nb.coordination import location_id_provider_names
from samza_nb.coordination.coordinator import job_coordinator_names
from samza_nb.grouping import grouper_names, ssp_grouper_names
from samza_nb.metadata.registry import metadata_store_names

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "configuration.md").read_text()
SOURCES = {path: path.read_text() for path in (ROOT / "samza_nb").rglob("*.py")}
#: The key table: it names every key and reads none.
KEY_TABLE = ROOT / "samza_nb" / "config_keys.py"

#: Keys whose values are names in a registry: every documented value must be registered.
REGISTRIES: dict[str, Callable[[], list[str]]] = {
    "job.coordinator.factory": job_coordinator_names,
    "metadata.store.factory": metadata_store_names,
    "task.name.grouper.factory": grouper_names,
    "job.systemstreampartition.grouper.factory": ssp_grouper_names,
    "locationid.provider.factory": location_id_provider_names,
}


def _key_rows() -> dict[str, list[str]]:
    """Key → its row's cells (key | default | values | meaning) in the key table."""
    rows = {}
    for line in DOC.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if len(cells) == 4 and cells[0].startswith("`") and not cells[0].startswith("`SAMZA_NB_"):
            rows[cells[0].strip("`")] = cells
    return rows


def _documented_keys() -> dict[str, tuple[str, str]]:
    """Key → (default, meaning) from the rows of the key table."""
    return {key: (cells[1], cells[3]) for key, cells in _key_rows().items()}


def _documented_variables() -> list[str]:
    return re.findall(r"^\| `(SAMZA_NB_[A-Z_]+)` \|", DOC, flags=re.MULTILINE)


def test_every_known_key_is_documented_and_every_documented_key_is_known() -> None:
    assert set(_documented_keys()) == set(KNOWN_KEYS)


@pytest.mark.parametrize("key", sorted(KNOWN_KEYS))
def test_a_keys_documented_default_and_values_are_the_ones_it_takes(key: str) -> None:
    _key, default, values, _meaning = _key_rows()[key]
    known = KNOWN_KEYS[key]
    assert values == known.allowed, f"{key}: docs say {values!r}, the key takes {known.allowed!r}"
    if known.default is not None and key != "metadata.store.factory":  # its default is explained
        assert default == f"`{known.default}`", f"{key}: docs say {default!r}, the default is {known.default!r}"


def _keys_read(source: str) -> set[str]:
    """The strings a module reads as keys: handed to a call, used as an index or tested with
    ``in``, directly or through a module-level name bound to the string."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and isinstance(statement.value, ast.Constant):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            aliases.update({t.id: statement.value.value for t in targets if isinstance(t, ast.Name)})
    uses: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            uses += [*node.args, *(keyword.value for keyword in node.keywords)]
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            uses.append(node.left)
        elif isinstance(node, ast.Subscript):
            uses.append(node.slice)
    read = {use.value for use in uses if isinstance(use, ast.Constant) and isinstance(use.value, str)}
    return read | {aliases[use.id] for use in uses if isinstance(use, ast.Name) and use.id in aliases}


KEYS_READ = {path: _keys_read(text) for path, text in SOURCES.items() if path != KEY_TABLE}


@pytest.mark.parametrize(
    ("source", "read"),
    [
        ('config.get_int("a.b.ms")', True),
        ('KEY = "a.b.ms"\nconfig.require(KEY)', True),
        ('def f(config):\n    return config["a.b.ms"] if "a.b.ms" in config else None', True),
        ('"""Set a.b.ms to tune it."""', False),
        ('"a.b.ms"', False),
        ('key = "a.b.ms"\nmsg = f"{key} is wrong"', False),
        ('ConfigKey_row = {"a.b.ms": "1"}', False),
    ],
)
def test_a_key_counts_as_read_only_where_code_reads_it(source: str, read: bool) -> None:
    assert ("a.b.ms" in _keys_read(source)) is read


@pytest.mark.parametrize("key", sorted(_documented_keys()))
def test_a_documented_key_is_read_by_the_code(key: str) -> None:
    readers = [path for path, keys in KEYS_READ.items() if key in keys]
    assert readers, f"docs/configuration.md documents {key!r} but no code path of samza_nb reads it"


@pytest.mark.parametrize("variable", _documented_variables())
def test_a_documented_environment_variable_is_read_by_the_code(variable: str) -> None:
    assert variable in ENVIRONMENT
    readers = [path for path, text in SOURCES.items() if variable in text]
    assert readers, f"docs/configuration.md documents ${variable} but nothing reads it"


@pytest.mark.parametrize("key", sorted(REGISTRIES))
def test_documented_values_of_a_registry_key_are_accepted(key: str) -> None:
    default, meaning = _documented_keys()[key]
    known = REGISTRIES[key]()
    values = re.findall(r"`([^`]+)`", meaning) + re.findall(r"`([^`]+)`", default)
    for value in values:
        assert value in known, f"{key}: docs name {value!r}, which is not one of {known}"
