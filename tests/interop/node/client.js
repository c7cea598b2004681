// Cross-language proof: a Node.js client of the Python FormatterService.
//
// It loads the schema straight from proto/ (no generated code), replays the
// calls listed in a JSON file against a running server and prints every
// decoded response (or error status) as JSON, for the Python test to compare
// with what the Python client received.
//
// Usage: node client.js <host:port> <calls.json>

"use strict";

const fs = require("fs");
const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTO_ROOT = path.resolve(__dirname, "../../../proto");
const LOADER_OPTIONS = {
  includeDirs: [PROTO_ROOT],
  keepCase: true, // proto field names, as Python's json_format(preserving_proto_field_name)
  longs: String,
  enums: String,
  bytes: String, // base64, as ProtoJSON
  defaults: false,
  oneofs: false,
};

function loadService() {
  const definition = protoLoader.loadSync(
    "agentscope/formatter/v1/formatter_service.proto",
    LOADER_OPTIONS,
  );
  const root = grpc.loadPackageDefinition(definition);
  return root.agentscope.formatter.v1.FormatterService;
}

function failure(error) {
  return { error: { code: grpc.status[error.code], details: error.details } };
}

function unary(client, method, request) {
  return new Promise((resolve) => {
    client[method](request, { deadline: Date.now() + 10000 }, (error, response) => {
      resolve(error ? failure(error) : { responses: [response] });
    });
  });
}

function bidi(client, requests) {
  return new Promise((resolve) => {
    const responses = [];
    const call = client.ParseStream({ deadline: Date.now() + 10000 });
    call.on("data", (response) => responses.push(response));
    call.on("error", (error) => resolve(failure(error)));
    call.on("end", () => resolve({ responses }));
    for (const request of requests) call.write(request);
    call.end();
  });
}

async function main() {
  const [target, callsFile] = process.argv.slice(2);
  const calls = JSON.parse(fs.readFileSync(callsFile, "utf8"));
  const Service = loadService();
  const client = new Service(target, grpc.credentials.createInsecure());
  const results = [];
  for (const call of calls) {
    const outcome =
      call.rpc === "ParseStream"
        ? await bidi(client, call.requests)
        : await unary(client, call.rpc, call.request);
    results.push({ name: call.name, ...outcome });
  }
  client.close();
  process.stdout.write(JSON.stringify(results));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
