# The README's two commands. Both create .venv when it is missing and are quick when all is installed.
#   make demo   set up and run the main job (hoi4-arena quickstart) on the built-in simulator
#   make test   set up (with the dev extra and the Debian packages the tests need) and run ruff + pytest
#               (PYTEST_WORKERS=0 runs the tests in one process, PYTEST_ARGS adds pytest options)

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DEMO_OUT ?= demo
PYTEST_ARGS ?=
# Parallel test workers (pytest-xdist); the X11 tests of one module stay in one worker (loadgroup). With
# CAP_SYS_NICE (root here), auto is a worker a core plus one for the tests that wait, which run at normal
# priority and the rest at nice 10 (tests/conftest.py, the README's Tests section).
PYTEST_WORKERS ?= auto

.PHONY: demo test lint install install-dev system-packages clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is needed, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# A stamp per extra, remade when pyproject.toml changes, keeps repeated runs to seconds.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

system-packages:
	@scripts/system-packages.sh

demo: install
	$(BIN)/hoi4-arena quickstart $(DEMO_OUT)

lint: install-dev
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/lint-imports --no-cache  # the import contracts of .importlinter: imports only go down, no cycles

# pytest's status 5 means it collected no tests: that is a failure here, not a pass.
# Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE): every test worker
# and every process a test starts would otherwise compile the project and rewrite the tests' asserts again.
# NUMPY_MADVISE_HUGEPAGE=0: no huge pages for numpy's arrays in the short-lived test processes (the
# kernel's compaction for them at each process's first touch was most of some tests' time; conftest.py).
test: install-dev system-packages lint
	@PYTHONDONTWRITEBYTECODE= NUMPY_MADVISE_HUGEPAGE=0 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$status

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
