// One AG-UI run read as AG-UI's TypeScript SDK reads a protobuf response:
// POSTs the RunAgentInput with `Accept` asking for AG-UI's protobuf media
// type, checks the response carries that type (the SDK's HttpAgent picks its
// protobuf reader by it), splits the body into frames (a 4-byte big-endian
// length, then the message) and decodes each with @ag-ui/proto's `decode`.
//
// stdin: {"url", "headers", "body"}; stdout: {"bytes", "events"}; any
// failure: a one-line message on stderr and exit code 1.
import { readFileSync } from "node:fs";
import { AGUI_MEDIA_TYPE, decode } from "@ag-ui/proto";

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

function frames(data) {
  const events = [];
  let offset = 0;
  while (offset < data.length) {
    if (offset + 4 > data.length) fail(`a frame's length cut short at byte ${offset}`);
    const size = new DataView(data.buffer, data.byteOffset + offset, 4).getUint32(0, false);
    const end = offset + 4 + size;
    if (end > data.length) fail(`a frame of ${size} bytes cut short at byte ${offset}`);
    events.push(decode(data.subarray(offset + 4, end)));
    offset = end;
  }
  return events;
}

const request = JSON.parse(readFileSync(0, "utf8"));
const response = await fetch(request.url, {
  method: "POST",
  headers: { ...request.headers, "content-type": "application/json", accept: AGUI_MEDIA_TYPE },
  body: JSON.stringify(request.body),
});
if (!response.ok) fail(`HTTP ${response.status}: ${await response.text()}`);
const type = response.headers.get("content-type");
if (type !== AGUI_MEDIA_TYPE) fail(`content-type ${type}, not ${AGUI_MEDIA_TYPE}`);
const data = new Uint8Array(await response.arrayBuffer());
process.stdout.write(JSON.stringify({ bytes: data.length, events: frames(data) }));
