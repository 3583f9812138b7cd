# The two commands a newcomer needs:
#   make demo   set up everything missing, then run the default job on cudasim
#   make test   set up everything missing, then run every test (C, Rust, Python), the
#               formatters' and the linter's checks first (make lint)
# And for users' GPU nodes:
#   make dist   dist/launchgap-VERSION-py3-none-manylinux_*.whl, the Python package with
#               the recorder and monitor inside, needing nothing but glibc (scripts/dist.sh)

VENV := .venv
PYTHON := $(VENV)/bin/python
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup demo test lint format test-c test-rust test-python dist clean

setup:
	@scripts/setup.sh

demo: setup
	@scripts/demo.sh

test: setup lint test-c test-rust test-python

# the Python as ruff formats and checks it (pyproject.toml's [tool.ruff]), the Rust as cargo fmt lays it out
# (recorder/rustfmt.toml); `make format` rewrites both
PYTHON_SOURCES := python tests scripts bench
lint: setup
	@$(VENV)/bin/ruff format --check --quiet $(PYTHON_SOURCES) || { echo "lint: run make format" >&2; exit 1; }
	@$(VENV)/bin/ruff check --quiet $(PYTHON_SOURCES)
	@cd recorder && cargo fmt --check || { echo "lint: run make format" >&2; exit 1; }

format: setup
	@$(VENV)/bin/ruff format --quiet $(PYTHON_SOURCES)
	@$(VENV)/bin/ruff check --quiet --fix $(PYTHON_SOURCES)
	@cd recorder && cargo fmt

test-c:
	@$(MAKE) -s -C workloads/cudasim test

test-rust:
	@cd recorder && cargo test --release --quiet

test-python:
	@$(PYTHON) -m pytest -q

dist: setup
	@scripts/dist.sh dist

clean:
	$(MAKE) -C workloads/cudasim clean
	$(MAKE) -C workloads/levers clean
	cd recorder && cargo clean
	rm -rf dist
