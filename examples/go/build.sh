#!/usr/bin/env bash
# Generates Go from ../../proto into a GOPATH under build/ and builds
# build/client, in GOPATH mode against Debian's Go packages (/usr/share/gocode).
set -euo pipefail
cd "$(dirname "$0")"
export GOPATH="$PWD/build/gopath:/usr/share/gocode" GO111MODULE=off GOFLAGS= GOCACHE="$PWD/build/gocache"
rm -rf build/gopath && mkdir -p build/gopath/src
protoc -I ../../proto --go_out=build/gopath/src --go-grpc_out=build/gopath/src \
  agentscope/message/v1/message.proto agentscope/formatter/v1/formatter_service.proto \
  agentscope/agent/v1/events.proto agentscope/agent/v1/agent_service.proto agentscope/agent/v1/hub_service.proto
go build -o build/client main.go
