// AG-UI's official TypeScript client (@ag-ui/client) in Node, against a served
// agent (`serve_replayed.py --agui-port`): the umbrella question, its
// confirmation allowed in one thread and denied in another. Prints, as JSON,
// each run's input ids and its events as the client parsed them, for
// tests/agentscope2/test_agui_web.py to compare with the same runs read by Python.
//
// Usage: node node_client.mjs AGENT_URL [--encoding json|protobuf]
import { randomUUID } from "node:crypto";

import { HttpAgent } from "@ag-ui/client";

const QUESTION = "Should I take an umbrella in Paris?";
// The encodings the client can ask for, each by its Accept header (the client
// parses a response by its content type).
const ACCEPT = { json: "text/event-stream", protobuf: "application/vnd.ag-ui.event+proto" };

// HttpAgent asking for one encoding.
class EncodedAgent extends HttpAgent {
  constructor(url, accept) {
    super({ url });
    this.accept = accept;
  }

  requestInit(input) {
    const init = super.requestInit(input);
    return { ...init, headers: { ...init.headers, Accept: this.accept } };
  }
}

// One run: its ids and the events the client parsed, in order.
async function run(agent, parameters) {
  const events = [];
  const runId = randomUUID();
  await agent.runAgent({ ...parameters, runId }, { onEvent: ({ event }) => events.push(event) });
  return { threadId: agent.threadId, runId, events };
}

// The question, then its one confirmation answered with `confirmed`.
async function conversation(url, accept, confirmed) {
  const agent = new EncodedAgent(url, accept);
  agent.addMessage({ id: randomUUID(), role: "user", content: QUESTION });
  const asked = await run(agent, {});
  const resume = agent.pendingInterrupts.map((interrupt) => ({
    interruptId: interrupt.id,
    status: "resolved",
    payload: { confirmed },
  }));
  return [asked, await run(agent, { resume })];
}

function options(argv) {
  const [url, ...rest] = argv;
  const flag = rest.indexOf("--encoding");
  const encoding = flag < 0 ? "json" : rest[flag + 1];
  if (!url || !(encoding in ACCEPT)) {
    throw new Error(`usage: node node_client.mjs AGENT_URL [--encoding ${Object.keys(ACCEPT).join("|")}]`);
  }
  return { url, accept: ACCEPT[encoding] };
}

try {
  const { url, accept } = options(process.argv.slice(2));
  const allowed = await conversation(url, accept, true);
  const denied = await conversation(url, accept, false);
  console.log(JSON.stringify({ allowed, denied }));
} catch (error) {
  console.error(`node_client.mjs: ${error.message ?? error}`);
  process.exit(1);
}
