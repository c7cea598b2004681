#!/usr/bin/env bash
# Generates Go from ../../proto into a GOPATH under build/ and builds
# build/client, in GOPATH mode against Debian's Go packages (/usr/share/gocode).
set -euo pipefail
cd "$(dirname "$0")"
export GOPATH="$PWD/build/gopath:/usr/share/gocode" GO111MODULE=off GOFLAGS= GOCACHE="$PWD/build/gocache"
M="Magentscope/message/v1/message.proto=github.com/agentscope-ai/agentscope-proto/gen/go/agentscope/message/v1;messagev1"
M="$M,Magentscope/formatter/v1/formatter_service.proto=github.com/agentscope-ai/agentscope-proto/gen/go/agentscope/formatter/v1;formatterv1"
rm -rf build/gopath && mkdir -p build/gopath/src
protoc -I ../../proto --go_out=build/gopath/src --go_opt="$M" --go-grpc_out=build/gopath/src --go-grpc_opt="$M" \
  agentscope/message/v1/message.proto agentscope/formatter/v1/formatter_service.proto
go build -o build/client main.go
