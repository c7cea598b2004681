#!/usr/bin/env bash
# Generates C++ from ../../proto and builds build/client against Debian's
# grpc++ and protobuf (found with pkg-config).
set -euo pipefail
cd "$(dirname "$0")"
# google/rpc/{status,error_details}.proto ship with googleapis-common-protos (in the repo's
# .venv, which the first line makes on a fresh clone); RPC_PROTOS may name another directory.
make -s -C ../.. setup  # the repository's .venv: its googleapis-common-protos has google/rpc/*.proto
RPC_PROTOS=${RPC_PROTOS:-$(../../.venv/bin/python -c 'import pathlib, google.rpc.status_pb2 as m; print(pathlib.Path(m.__file__).parents[2])')}
rm -rf build && mkdir -p build/gen
protoc -I ../../proto --cpp_out=build/gen --grpc_out=build/gen --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin \
  agentscope/message/v1/message.proto agentscope/formatter/v1/formatter_service.proto \
  agentscope/agent/v1/events.proto agentscope/agent/v1/agent_service.proto agentscope/agent/v1/hub_service.proto
protoc -I "$RPC_PROTOS" --cpp_out=build/gen google/rpc/status.proto google/rpc/error_details.proto
g++ -std=c++17 -Ibuild/gen -o build/client client.cc $(find build/gen -name '*.cc') \
  $(pkg-config --cflags --libs grpc++ protobuf)
