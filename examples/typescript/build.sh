#!/usr/bin/env bash
# Installs the pinned npm packages, generates TypeScript from ../../proto and
# compiles everything into build/ (run: node build/client.js [HOST:PORT]).
set -euo pipefail
cd "$(dirname "$0")"
# google/rpc/{status,error_details}.proto ship with googleapis-common-protos (in the repo's
# .venv, which the first line makes on a fresh clone); RPC_PROTOS may name another directory.
make -s -C ../.. setup  # the repository's .venv: its googleapis-common-protos has google/rpc/*.proto
RPC_PROTOS=${RPC_PROTOS:-$(../../.venv/bin/python -c 'import pathlib, google.rpc.status_pb2 as m; print(pathlib.Path(m.__file__).parents[2])')}
npm ci --no-audit --no-fund --loglevel=error
rm -rf gen build && mkdir gen
protoc -I ../../proto -I "$RPC_PROTOS" \
  --plugin=protoc-gen-es=node_modules/.bin/protoc-gen-es --es_out=gen --es_opt=target=ts,import_extension=js \
  agentscope/message/v1/message.proto agentscope/formatter/v1/formatter_service.proto \
  agentscope/agent/v1/events.proto agentscope/agent/v1/agent_service.proto agentscope/agent/v1/hub_service.proto \
  google/rpc/status.proto google/rpc/error_details.proto
node_modules/.bin/tsc -p .
