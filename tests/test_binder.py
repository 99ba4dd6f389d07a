"""binder/ launches the notebooks: it must install this package and a Java 17 runtime."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_apt_installs_java_17() -> None:
    packages = (BINDER / "apt.txt").read_text(encoding="utf-8").split()
    assert any(re.fullmatch(r"openjdk-17-jre(-headless)?", package) for package in packages)


def test_requirements_install_this_repository_with_the_notebook_extra() -> None:
    lines = [
        line.strip()
        for line in (BINDER / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    local = [line for line in lines if re.fullmatch(r"(-e\s+)?\.(\[[\w,-]+\])?", line)]
    assert local, f"binder/requirements.txt does not install the repository: {lines}"
    extras = re.findall(r"\[([\w,-]+)\]", local[0])
    declared = set(_pyproject()["project"]["optional-dependencies"])
    assert {extra for group in extras for extra in group.split(",")} <= declared
    assert "notebooks" in local[0]


def test_post_build_installs_the_package_and_is_executable() -> None:
    post_build = BINDER / "postBuild"
    text = post_build.read_text(encoding="utf-8")
    assert text.startswith("#!")
    assert os.access(post_build, os.X_OK)
    assert "pip install" in text and "import samza_nb" in text
    assert not re.search(r"(?i)(accountkey|password|secret|token)\s*=", text)


def test_runtime_python_satisfies_requires_python() -> None:
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    version = re.fullmatch(r"python-3\.(\d+)", runtime)
    assert version, runtime
    minimum = re.fullmatch(r">=\s*3\.(\d+)", _pyproject()["project"]["requires-python"])
    assert minimum and int(version.group(1)) >= int(minimum.group(1))


NOTEBOOKS = ROOT / "notebooks"
TUTORIALS = (
    "01-quickstart",
    "02-stages-and-shuffles",
    "03-drain",
    "04-groupers-and-host-affinity",
)


def test_the_notebooks_binder_opens_are_there() -> None:
    assert {path.stem for path in NOTEBOOKS.glob("*.ipynb")} >= set(TUTORIALS)


def test_notebooks_open_with_the_default_python_kernel() -> None:
    # Binder's image has one kernel, "python3", running the environment postBuild installed
    # samza_nb into; a notebook saved with another kernel name would ask for a kernel to pick.
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        metadata = json.loads(path.read_text(encoding="utf-8"))["metadata"]
        assert metadata["kernelspec"]["name"] == "python3", path.name
        assert metadata["kernelspec"]["language"] == "python", path.name


def test_notebooks_need_nothing_outside_the_repository() -> None:
    # Every path comes from the parameters cell (data_dir defaults to a fresh temp folder), and
    # the widgets need only ipywidgets, a dependency of the package (its JupyterLab extension,
    # jupyterlab_widgets, comes with it).
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        source = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
        assert not re.search(r"""["'](/work|/home|/root|/Users|[A-Z]:\\)""", source), path.name
    dependencies = _pyproject()["project"]["dependencies"]
    assert any(re.match(r"ipywidgets\b", dependency) for dependency in dependencies)
