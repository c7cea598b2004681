# `make interop` (included by the Makefile): every example client in examples/
# built from proto/ and run against a live server, compared with the Python one.

.PHONY: interop
interop: setup ## Install toolchains (apt/npm), build the examples/ clients, check them against the Python client
	$(BIN)/python examples/run_interop.py
