# Two commands do all setup on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint services-up services-down services-status bench clean install

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,notebooks]"
	touch $(STAMP)

# The Spark class-data archive (runtime/executors/class_archive.py) is made once per venv; the
# test run makes it while the services install (engine/run-tests.sh).
install: $(STAMP)
	$(PY) -m samza_nb.runtime.executors.class_archive --if-missing

demo: install
	$(PY) -m samza_nb.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check samza_nb tests bench engine
	$(VENV)/bin/mypy

# Services start before pytest and stop afterwards even when tests fail (engine/run-tests.sh).
test: $(STAMP)
	bash engine/run-tests.sh

services-up: $(STAMP)
	$(VENV)/bin/samza-nb services up

services-down: $(STAMP)
	$(VENV)/bin/samza-nb services down

services-status: $(STAMP)
	$(VENV)/bin/samza-nb services status

bench: $(STAMP)
	bash engine/run-bench.sh

clean:
	rm -rf $(VENV) .services build *.egg-info
