# The two commands a newcomer needs:
#   make demo   set up everything missing, then run the default job on cudasim
#   make test   set up everything missing, then run every test (C, Rust, Python)

VENV := .venv
PYTHON := $(VENV)/bin/python
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup demo test test-c test-rust test-python clean

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

clean:
	$(MAKE) -C workloads/cudasim clean
	$(MAKE) -C workloads/levers clean
	cd recorder && cargo clean
