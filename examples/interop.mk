# `make interop` (included by the Makefile): every example client in examples/
# built from proto/ and run against live servers, compared with the Python one.
# The example agent they call is AgentScope 2.x's, served from $(AS2).

.PHONY: interop
interop: setup $(AS2)/.installed ## Install toolchains (apt/npm), build the examples/ clients, check them against the Python client
	$(BIN)/python examples/run_interop.py

.PHONY: example-agent
example-agent: $(AS2)/.installed ## Serve examples/agents/weather_agent.py on 127.0.0.1:50052, its model replayed from recordings (offline)
	$(AS2)/bin/python examples/agents/serve_replayed.py --port 50052
