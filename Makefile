SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The generator's plugins (protoc-gen-mypy, buf) live in the venv.
export PATH := $(CURDIR)/$(BIN):$(PATH)
GENERATED := python/agentscope_proto/_generated
BASELINE := proto/baseline.binpb

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-18s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

.PHONY: setup
setup: $(BIN)/python ## Create .venv, install the package (dev extra)
	$(BIN)/python -m pip install --quiet -e '.[dev]'

.PHONY: serve
serve: setup ## Install everything, then run the FormatterService on 127.0.0.1:50051
	$(BIN)/agentscope-proto serve

CODEGEN := .venv-codegen
OLDEST := .venv-oldest

# A stamp, not bin/python itself: touching that symlink would touch the system interpreter.
$(CODEGEN)/.installed: scripts/codegen-requirements.txt
	test -x $(CODEGEN)/bin/python || $(PYTHON) -m venv $(CODEGEN)
	$(CODEGEN)/bin/python -m pip install --quiet -r scripts/codegen-requirements.txt
	touch $@

.PHONY: generate
generate: $(CODEGEN)/.installed ## Regenerate the Python code from proto/ with the pinned generator
	$(CODEGEN)/bin/python scripts/generate.py

.PHONY: check-generated
check-generated: generate ## Fail if the committed generated code differs from a fresh generation
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
		git status --porcelain -- $(GENERATED); git --no-pager diff --stat -- $(GENERATED); \
		echo "generated code is stale: run 'make generate' and commit"; exit 1; fi

.PHONY: lint
lint: ## buf lint and format, ruff, mypy --strict
	buf lint
	buf format --diff --exit-code
	$(BIN)/ruff check python tests scripts bench
	$(BIN)/ruff format --check python tests scripts bench
	$(BIN)/mypy

.PHONY: breaking
breaking: ## buf breaking against the released schema image (proto/baseline.binpb)
	buf breaking --against $(BASELINE)

.PHONY: release-schema
release-schema: ## Refresh the breaking-change baseline after a release
	buf build -o $(BASELINE)

.PHONY: test
test: ## Run the test suite
	$(BIN)/python -m pytest

.PHONY: test-oldest
test-oldest: ## Run the tests on the oldest supported protobuf and grpcio runtimes
	test -x $(OLDEST)/bin/python || $(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet -e '.[dev]' 'protobuf==5.29.5' 'grpcio==1.70.0'
	$(OLDEST)/bin/python -m pytest -p no:cacheprovider

.PHONY: check
check: check-generated lint breaking test test-oldest bench-quick fuzz-quick soak-quick ## Everything CI runs

.PHONY: golden
golden: ## Regenerate tests/golden/ from the real agentscope==1.0.21 (own venv)
	test -x .venv-golden/bin/python || $(PYTHON) -m venv .venv-golden
	.venv-golden/bin/python -m pip install --quiet -r tests/golden/requirements.txt -e .
	.venv-golden/bin/python tests/golden/make_messages.py
	.venv-golden/bin/python tests/golden/make_formatters.py
	.venv-golden/bin/python tests/golden/make_parsers.py

# The provider SDKs whose request types tests/provider_schemas/ validates
# bodies against, in their own venv (the tests that need it skip without it).
SCHEMAS := .venv-schemas

$(SCHEMAS)/.installed: tests/provider_schemas/requirements.txt
	test -x $(SCHEMAS)/bin/python || $(PYTHON) -m venv $(SCHEMAS)
	$(SCHEMAS)/bin/python -m pip install --quiet -r tests/provider_schemas/requirements.txt
	touch $@

.PHONY: schemas-venv
schemas-venv: $(SCHEMAS)/.installed ## The provider SDKs' venv for the body validator (tests/provider_schemas/)

.PHONY: schemas-report
schemas-report: schemas-venv ## Golden formatter bodies against the providers' request schemas
	$(SCHEMAS)/bin/python scripts/validate_golden_bodies.py

BENCH := .venv-bench

$(BENCH)/.installed: bench/requirements.txt tests/golden/requirements.txt pyproject.toml
	test -x $(BENCH)/bin/python || $(PYTHON) -m venv $(BENCH)
	$(BENCH)/bin/python -m pip install --quiet -r bench/requirements.txt -e .
	touch $@

.PHONY: bench
bench: $(BENCH)/.installed ## Benchmarks vs agentscope==1.0.21 and a gRPC Echo ceiling: bench/results.md and charts
	$(BENCH)/bin/python bench/run.py --out bench

.PHONY: bench-quick
bench-quick: $(BENCH)/.installed ## Smoke run of every benchmark (< 60 s, no speed assertions) into build/bench-quick
	$(BENCH)/bin/python bench/run.py --quick --out build/bench-quick

# Fuzzing and soak (tests/fuzz/run.py, tests/soak/soak.py): loopback only,
# bounded in runs and seconds. The quick forms are part of `check`.
FUZZ_TARGETS := from_dict parse stream
FUZZ_OPTIONS := -seed=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048
FUZZ_SECONDS ?= 300

.PHONY: fuzz
fuzz: ## Coverage-guided fuzzing (atheris) of from_dict, parse, StreamParser.feed_bytes: FUZZ_SECONDS each
	for target in $(FUZZ_TARGETS); do \
		$(BIN)/python tests/fuzz/run.py $$target $(FUZZ_OPTIONS) -max_total_time=$(FUZZ_SECONDS) || exit 1; done

.PHONY: fuzz-quick
fuzz-quick: ## Bounded fuzzing for CI: a fixed number of runs per target (about 15 s each)
	$(BIN)/python tests/fuzz/run.py from_dict $(FUZZ_OPTIONS) -runs=60000 -max_total_time=60
	$(BIN)/python tests/fuzz/run.py parse $(FUZZ_OPTIONS) -runs=60000 -max_total_time=60
	$(BIN)/python tests/fuzz/run.py stream $(FUZZ_OPTIONS) -runs=6000 -max_total_time=60

.PHONY: soak
soak: ## 60 s at 64 concurrent calls (Format, Parse, ParseStream, cancels, drops): errors, RSS, p50/p99
	$(BIN)/python tests/soak/soak.py --seconds 60 --concurrency 64 --json build/soak/soak.json

.PHONY: soak-quick
soak-quick: ## The soak for 10 s (part of check)
	$(BIN)/python tests/soak/soak.py --seconds 10 --warmup 3 --concurrency 64

include examples/interop.mk
