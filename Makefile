# The two commands a newcomer needs:
#   make demo   set up everything missing, then run the default job on cudasim
#   make test   set up everything missing, then run every test (C, Rust, Python)
# And for users' GPU nodes:
#   make dist   dist/launchgap-VERSION-py3-none-manylinux_*.whl, the Python package with
#               the recorder and monitor inside, needing nothing but glibc (scripts/dist.sh)

VENV := .venv
PYTHON := $(VENV)/bin/python
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup demo test test-c test-rust test-python dist clean

setup:
	@scripts/setup.sh

demo: setup
	@scripts/demo.sh

test: setup test-c test-rust test-python

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
