// A TypeScript client of the FormatterService, the HubService and a served agent, with
// Connect-ES over gRPC.
//
// Builds a short tool-using conversation, formats it for three providers,
// parses a provider response and a provider stream, and shows how a bad
// request is reported; publishes the conversation to a hub topic and reads it
// back from a subscription; given an agent's address, asks the agent the
// conversation's question, printing the type of each event of its reply on
// stderr as it arrives, and confirms the tool call the agent asks about.
// Prints the results as one JSON document on stdout.
//
// Usage: node build/client.js [--connect] [HOST:PORT [AGENT_HOST:PORT]]
//   HOST:PORT: `agentscope-proto serve` (default: $AGENTSCOPE_TARGET or 127.0.0.1:50051).
//   With --connect it speaks the Connect protocol to `agentscope-proto serve --http-port`
//   (HOST:PORT is then the HTTP port) and prints the same document.
//   AGENT_HOST:PORT: `agentscope-proto serve-agent`, over gRPC either way (default:
//   $AGENTSCOPE_AGENT_TARGET; neither: no agent part).

import { create, equals } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import {
  FinishReason,
  FormatterService,
  Provider,
  ParseStreamRequestSchema,
  StreamMode,
  type ParseResult,
  type ParseStreamRequest,
} from "./gen/agentscope/formatter/v1/formatter_service_pb.js";
import {
  AgentService,
  ReplyRequestSchema,
  type ReplyRequest,
  type ReplyResponse,
} from "./gen/agentscope/agent/v1/agent_service_pb.js";
import {
  AgentEventSchema,
  UserConfirmResultEventSchema,
  type RequireUserConfirmEvent,
  type UserConfirmResultEvent,
} from "./gen/agentscope/agent/v1/events_pb.js";
import { HubService, type HubEvent } from "./gen/agentscope/agent/v1/hub_service_pb.js";
import {
  ContentBlockSchema,
  FinishedReasonSchema,
  MsgSchema,
  Role,
  RoleSchema,
  type Msg,
} from "./gen/agentscope/message/v1/message_pb.js";
import { BadRequestSchema } from "./gen/google/rpc/error_details_pb.js";

const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "The current weather in a city.",
      parameters: { type: "object", properties: { city: { type: "string" } } },
    },
  },
];

// What the provider's HTTP API would answer: an OpenAI chat completion...
const OPENAI_RESPONSE = `{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0,
  "message": {"role": "assistant", "content": "Let me check.", "tool_calls": [{"id": "call_2",
  "type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\":\\"Lyon\\"}"}}]},
  "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 42, "completion_tokens": 17}}`;

// ...and the events of a streamed one.
const OPENAI_CHUNKS = [
  `{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "It is "}}]}`,
  `{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"content": "sunny, 21 °C."}}]}`,
  `{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 50, "completion_tokens": 6}}`,
];

/** A user question, the assistant's tool call and the tool's result. */
function conversation(): Msg[] {
  return [
    create(MsgSchema, {
      name: "user",
      role: Role.USER,
      content: { case: "text", value: "What is the weather in Paris?" },
    }),
    create(MsgSchema, {
      name: "Friday",
      role: Role.ASSISTANT,
      content: {
        case: "blocks",
        value: {
          items: [
            { block: { case: "text", value: { text: "Let me check." } } },
            {
              block: {
                case: "toolUse",
                value: { id: "call_1", name: "get_weather", inputJson: JSON.stringify({ city: "Paris" }) },
              },
            },
          ],
        },
      },
    }),
    create(MsgSchema, {
      name: "system",
      role: Role.SYSTEM,
      content: {
        case: "blocks",
        value: {
          items: [
            {
              block: {
                case: "toolResult",
                value: { id: "call_1", name: "get_weather", output: { case: "text", value: "Sunny, 21 °C" } },
              },
            },
          ],
        },
      },
    }),
  ];
}

/** The parts of a parse result the examples compare. */
function summary(result: ParseResult | undefined) {
  const blocks = result?.msg?.content.case === "blocks" ? result.msg.content.value.items : [];
  let text = "";
  const toolCalls = [];
  for (const { block } of blocks) {
    if (block.case === "text") text += block.value.text;
    if (block.case === "toolUse") {
      const { id, name, inputJson } = block.value;
      toolCalls.push({ id, name, input: JSON.parse(inputJson) });
    }
  }
  const usage: Record<string, number> = {};
  if (result?.usage?.inputTokens !== undefined) usage.input_tokens = Number(result.usage.inputTokens);
  if (result?.usage?.outputTokens !== undefined) usage.output_tokens = Number(result.usage.outputTokens);
  return {
    text,
    tool_calls: toolCalls,
    finish_reason: "FINISH_REASON_" + FinishReason[result?.finishReason ?? FinishReason.UNSPECIFIED],
    usage,
  };
}

async function* streamRequests(mode: StreamMode): AsyncIterable<ParseStreamRequest> {
  for (const [i, chunk] of OPENAI_CHUNKS.entries()) {
    // The first request names the provider and the stream mode.
    const head = i === 0 ? { provider: Provider.OPENAI, streamMode: mode } : {};
    yield create(ParseStreamRequestSchema, { ...head, input: { case: "chunkJson", value: chunk } });
  }
}

// The hub topic the conversation is published to.
const TOPIC = "examples/weather";

/** The block kinds of a message, by their field names in the schema (`text`, `tool_use`, ...). */
function blockKinds(msg: Msg | undefined): string[] {
  const blocks = msg?.content.case === "blocks" ? msg.content.value.items : [];
  return blocks.flatMap(({ block }) => (block.case ? [ContentBlockSchema.field[block.case].name] : []));
}

/**
 * Publish the conversation to TOPIC and read it back: the question first, then a subscription
 * after its offset (a gap-free start over any protocol), then the other messages, which reach
 * the subscription with the offsets Publish returned.
 */
async function hubRoundTrip(transport: Transport) {
  const hub = createClient(HubService, transport);
  const [question, ...rest] = conversation();
  const { offset: after } = await hub.publish({ topic: TOPIC, msg: question });
  const abort = new AbortController();
  const events = hub.subscribe({ topic: TOPIC, after }, { signal: abort.signal, timeoutMs: 30_000 });
  const iterator = events[Symbol.asyncIterator]();
  const first = iterator.next(); // starts the call
  first.catch(() => {}); // awaited below: its error surfaces there
  const offsets: string[] = [];
  for (const msg of rest) offsets.push((await hub.publish({ topic: TOPIC, msg })).offset);
  const received: HubEvent[] = [];
  while (received.length < rest.length) {
    const { done, value } = await (received.length === 0 ? first : iterator.next());
    if (done) throw new Error("the subscription ended early");
    received.push(value);
  }
  // A subscription ends when its caller cancels it: the next read then fails with CANCELED.
  abort.abort();
  await iterator.next().then(
    () => {},
    (err) => {
      if (ConnectError.from(err).code !== Code.Canceled) throw err;
    },
  );
  return {
    received: received.map((event, i) => ({
      offset_matches: event.offset === offsets[i],
      msg_matches: event.msg !== undefined && equals(MsgSchema, event.msg, rest[i]),
      name: event.msg?.name ?? "",
      role: RoleSchema.value[event.msg?.role ?? Role.UNSPECIFIED].name,
      blocks: blockKinds(event.msg),
    })),
  };
}

/** A message's text: its text, or its text blocks joined. */
function msgText(msg: Msg | undefined): string {
  if (msg?.content.case === "text") return msg.content.value;
  return (msg?.content.case === "blocks" ? msg.content.value.items : [])
    .map(({ block }) => (block.case === "text" ? block.value.text : ""))
    .join("");
}

/** Allow every tool call the agent asks about, as it asked for it. */
function confirm(asked: RequireUserConfirmEvent): UserConfirmResultEvent {
  return create(UserConfirmResultEventSchema, {
    replyId: asked.replyId,
    confirmResults: asked.toolCalls.map((toolCall) => ({ confirmed: true, toolCall })),
  });
}

// How a reply is taken up after its connection dropped: at most this many Resume calls in a row
// ($AGENTSCOPE_RESUME_ATTEMPTS, default 5, as the Python client's), the first after 0.1 s, each
// wait twice the last, at most 2 s.
const RESUME_ATTEMPTS = /^\d+$/.test(process.env.AGENTSCOPE_RESUME_ATTEMPTS ?? "")
  ? Number(process.env.AGENTSCOPE_RESUME_ATTEMPTS)
  : 5;
const FIRST_WAIT_MS = 100;
const LAST_WAIT_MS = 2000;

/**
 * Where a reply stands for its caller: its id, its session and the last cursor read. The rest of
 * a reply after an answer has the same id, and its log goes on after that cursor.
 */
interface Place {
  session: string;
  replyId: string;
  cursor: string;
}

/**
 * Whether `err` is a dropped connection, after which the reply, kept running on the server, can be
 * taken up: UNAVAILABLE or CANCELED with no details (a status the server sends, such as a failed
 * reply's, carries them), once the reply's id and a cursor are known. Node's http2 ends the streams
 * of a connection that closed with RST_STREAM CANCEL, and a server stopped with the call running
 * cancels it, which Connect-ES reports as CANCELED: this client never cancels a reply itself.
 */
function dropped(err: unknown, at: Place): boolean {
  const error = ConnectError.from(err);
  const lost = error.code === Code.Unavailable || error.code === Code.Canceled;
  return lost && error.details.length === 0 && at.replyId !== "" && at.cursor !== "";
}

/**
 * The responses of the reply `request` asks for, in order and each once: when the connection
 * drops mid-reply, the reply is taken up after the last cursor (Resume), with a growing wait,
 * until it ends or the attempts run out (then an error saying so).
 */
async function* streamReply(agent: Client<typeof AgentService>, request: ReplyRequest, at: Place) {
  request.keepRunning = RESUME_ATTEMPTS > 0; // the reply goes on while this client is away
  let responses: AsyncIterable<ReplyResponse> = agent.reply(request, { timeoutMs: 30_000 });
  let tries = 0;
  for (;;) {
    try {
      for await (const response of responses) {
        tries = 0;
        if (response.event?.event.case === "replyStart") {
          ({ sessionId: at.session, replyId: at.replyId } = response.event.event.value);
        }
        at.cursor = response.cursor || at.cursor;
        yield response;
      }
      return;
    } catch (err) {
      if (!dropped(err, at)) throw err; // the server's status (a drop, even after the end, is taken up)
      if (++tries > RESUME_ATTEMPTS) {
        throw new Error(
          `the connection dropped during reply ${at.replyId} and ${RESUME_ATTEMPTS} attempts to take it up ` +
            `failed (last: ${ConnectError.from(err).rawMessage})`,
        );
      }
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(FIRST_WAIT_MS * 2 ** (tries - 1), LAST_WAIT_MS)));
    console.error(`resuming reply ${at.replyId} after cursor ${at.cursor} (attempt ${tries} of ${RESUME_ATTEMPTS})`);
    const resume = { sessionId: at.session, replyId: at.replyId, after: at.cursor };
    responses = agent.resume(resume, { timeoutMs: 30_000 });
  }
}

/**
 * Ask the agent the conversation's question; while its reply stops to ask for a confirmation,
 * answer it (in the reply's session) and go on until the reply ends. A reply whose connection
 * drops is taken up where it stopped (`streamReply`).
 */
async function askAgent(target: string) {
  const agent = createClient(AgentService, createGrpcTransport({ baseUrl: `http://${target}` }));
  const replies = [];
  const asked = [];
  const at: Place = { session: "", replyId: "", cursor: "" };
  let endedIn = "";
  let msg: Msg | undefined;
  let request: ReplyRequest | undefined = create(ReplyRequestSchema, { msgs: [conversation()[0]] });
  while (request) {
    let answer: UserConfirmResultEvent | undefined;
    const reply = { events: [] as string[], text: "", tool_result: "" };
    for await (const response of streamReply(agent, request, at)) {
      if (response.done) msg = response.msg; // the reply so far
      const event = response.event?.event;
      if (!event?.case) continue; // none, or an event kind newer than this schema
      const type = AgentEventSchema.field[event.case].name.toUpperCase();
      console.error(type); // as it arrives
      reply.events.push(type);
      switch (event.case) {
        case "textBlockDelta":
          reply.text += event.value.delta;
          break;
        case "toolResultTextDelta":
          reply.tool_result += event.value.delta;
          break;
        case "requireUserConfirm":
          asked.push(...event.value.toolCalls.map(({ name, inputJson }) => ({ name, input: JSON.parse(inputJson) })));
          answer = confirm(event.value);
          break;
        case "replyEnd":
          endedIn = event.value.sessionId;
          break;
      }
    }
    replies.push(reply);
    // The answer goes on with the same reply, in the session that asked.
    request = answer && create(ReplyRequestSchema, { sessionId: at.session, answer: { case: "userConfirmResult", value: answer } });
  }
  return {
    replies,
    asked,
    same_session: at.session !== "" && endedIn === at.session,
    reply: {
      name: msg?.name ?? "",
      role: RoleSchema.value[msg?.role ?? Role.UNSPECIFIED].name,
      text: msgText(msg),
      finished_reason: FinishedReasonSchema.value[msg?.finishedReason ?? 0].name,
    },
  };
}

/** gRPC, or the Connect protocol over HTTP/2 (ParseStream streams both ways, which needs it). */
function transport(connect: boolean, target: string): Transport {
  const baseUrl = `http://${target}`;
  return connect ? createConnectTransport({ baseUrl, httpVersion: "2" }) : createGrpcTransport({ baseUrl });
}

async function main() {
  const args = process.argv.slice(2);
  const [target = process.env.AGENTSCOPE_TARGET ?? "127.0.0.1:50051", agentTarget = process.env.AGENTSCOPE_AGENT_TARGET] =
    args.filter((arg) => !arg.startsWith("--"));
  const channel = transport(args.includes("--connect"), target);
  const client = createClient(FormatterService, channel);
  const out: Record<string, unknown> = {};

  // Format: the reply's body_json is the provider's request body as JSON.
  const providers = { openai: Provider.OPENAI, anthropic: Provider.ANTHROPIC, gemini: Provider.GEMINI };
  const bodies: Record<string, unknown> = {};
  for (const [name, provider] of Object.entries(providers)) {
    const reply = await client.format({
      provider,
      messages: conversation(),
      toolsJson: JSON.stringify(TOOLS),
      toolChoice: "auto",
    });
    bodies[name] = JSON.parse(reply.bodyJson);
  }
  out.format = bodies;

  const parsed = await client.parse({ provider: Provider.OPENAI, responseJson: OPENAI_RESPONSE });
  out.parse = summary(parsed.result);

  // ParseStream: every reply lists what changed (`deltas`); in CUMULATIVE mode it also
  // carries the result so far, in DELTAS mode only the last (`done`) reply carries the result.
  for (const [key, mode] of [["stream", StreamMode.CUMULATIVE], ["stream_deltas", StreamMode.DELTAS]] as const) {
    let responses = 0;
    let deltasText = "";
    let first: ParseResult | undefined;
    let last: ParseResult | undefined;
    for await (const reply of client.parseStream(streamRequests(mode))) {
      responses += 1;
      first ??= reply.result;
      for (const delta of reply.result?.deltas ?? []) {
        if (delta.block?.block.case === "text") deltasText += delta.block.block.value.text;
      }
      if (reply.done) last = reply.result;
    }
    // first_text is "" in DELTAS mode: the first reply carries no message.
    out[key] = { responses, first_text: summary(first).text, deltas_text: deltasText, ...summary(last) };
  }

  // A tool_choice naming no given tool is INVALID_ARGUMENT with a google.rpc.BadRequest detail.
  try {
    await client.format({
      provider: Provider.OPENAI,
      messages: conversation(),
      toolsJson: JSON.stringify(TOOLS),
      toolChoice: "get_time",
    });
  } catch (err) {
    const error = ConnectError.from(err);
    if (error.code !== Code.InvalidArgument) throw error;
    const [violation] = error.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations);
    out.error = { field: violation.field, description: violation.description };
  }

  out.hub = await hubRoundTrip(channel);
  if (agentTarget) out.agent = await askAgent(agentTarget);
  console.log(JSON.stringify(out, null, 2));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
