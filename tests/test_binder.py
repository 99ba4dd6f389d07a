"""binder/ launches the notebooks: it must install this package and a Java 17 runtime."""

from __future__ import annotations

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
