#!/usr/bin/env bash
# Generates Java from ../../proto, compiles it with Client.java against
# Debian's jars (/usr/share/java) into build/classes, and writes the launcher
# build/client.
set -euo pipefail
cd "$(dirname "$0")"
# google/rpc/{status,error_details}.proto ship with googleapis-common-protos (in the repo's
# .venv, which the first line makes on a fresh clone); RPC_PROTOS may name another directory.
make -s -C ../.. setup  # the repository's .venv: its googleapis-common-protos has google/rpc/*.proto
RPC_PROTOS=${RPC_PROTOS:-$(../../.venv/bin/python -c 'import pathlib, google.rpc.status_pb2 as m; print(pathlib.Path(m.__file__).parents[2])')}
J=/usr/share/java
CLASSPATH=$(echo $J/{grpc-api,grpc-context,grpc-core,grpc-netty,grpc-protobuf,grpc-protobuf-lite,grpc-stub}.jar \
  $J/{protobuf,guava,gson,perfmark-api,geronimo-annotation-1.3-spec}.jar \
  $J/netty-{buffer,codec,codec-http,codec-http2,common,handler,resolver,transport,transport-native-unix-common}.jar | tr ' ' :)
rm -rf build && mkdir -p build/gen build/classes
protoc -I ../../proto -I "$RPC_PROTOS" --java_out=build/gen \
  --plugin=protoc-gen-grpc-java=/usr/bin/grpc_java_plugin --grpc-java_out=build/gen \
  agentscope/message/v1/message.proto agentscope/formatter/v1/formatter_service.proto \
  agentscope/agent/v1/events.proto agentscope/agent/v1/agent_service.proto agentscope/agent/v1/hub_service.proto \
  google/rpc/status.proto google/rpc/error_details.proto
javac -nowarn -d build/classes -cp "$CLASSPATH" $(find build/gen -name '*.java') Client.java
printf '#!/bin/sh\nexec java -cp "%s" Client "$@"\n' "$PWD/build/classes:$CLASSPATH" > build/client
chmod +x build/client
