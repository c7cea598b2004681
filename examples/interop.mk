# `make interop` (included by the Makefile): every example client in examples/
# built from proto/ and run against live servers, compared with the Python one.
# The example agent they call is AgentScope 2.x's, served from $(AS2). And the
# web example (`web-check`), whose page and Node client call the same agent.

.PHONY: interop
interop: setup $(AS2)/.installed ## Install toolchains (apt/npm), build the examples/ clients, check them against the Python client; then web-check
	$(BIN)/python examples/run_interop.py
	$(Q)$(MAKE) --no-print-directory web-check

# The web example (examples/web/): what it needs from Debian (Node, npm,
# Chromium), installed when missing as run_interop.py installs toolchains (as
# root, or through `sudo -n`; a failure leaves the tests to say what is
# missing), and its pinned npm packages. Nothing here on Debian's
# chromium-driver: puppeteer-core drives Chromium itself.
WEB := examples/web
WEB_NEEDS := node:nodejs npm:npm chromium:chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo -n)

.PHONY: web-install
web-install:
	$(Q)mkdir -p build/logs
	$(Q)missing="$$(for need in $(WEB_NEEDS); do command -v $${need%%:*} >/dev/null || echo $${need#*:}; done)"; \
	if [ -n "$$missing" ]; then \
		echo "web: installing" $$missing; \
		{ $(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -q --no-install-recommends $$missing; } >build/logs/web-apt.log 2>&1 \
		|| echo "web: could not install" $$missing "(see build/logs/web-apt.log)"; fi
	$(Q)if command -v npm >/dev/null; then cd $(WEB) && npm ci --no-audit --no-fund --loglevel=error; fi

.PHONY: web-check
web-check: $(AS2)/.installed ## The web example: @ag-ui/client in Node against the served agent, compared with Python, and the page in headless Chromium (installs Chromium and the npm packages)
	$(Q)mkdir -p $(PYTEST_TMP) build/tmp
	$(Q)$(MAKE) --no-print-directory web-install
	$(Q)$(TEST_ENV) $(AS2)/bin/python -m pytest -p no:cacheprovider --basetemp=$(PYTEST_TMP)/web -m web tests/agentscope2/test_agui_web.py tests/agentscope2/test_agui_server.py
	@echo "web-check: OK in $$(( $$(date +%s) - $(STARTED) )) s (the screenshot: build/web/page.png)"

.PHONY: web-example
web-example: $(AS2)/.installed ## Serve examples/web/ on http://127.0.0.1:8080/ and its agent (AG-UI, its model replayed offline) on 8081
	$(Q)cd $(WEB) && npm ci --no-audit --no-fund --loglevel=error
	$(AS2)/bin/python $(WEB)/serve.py --port 8080 --agent-port 8081

.PHONY: example-agent
example-agent: $(AS2)/.installed ## Serve examples/agents/weather_agent.py on 127.0.0.1:50052, its model replayed from recordings (offline)
	$(AS2)/bin/python examples/agents/serve_replayed.py --port 50052
