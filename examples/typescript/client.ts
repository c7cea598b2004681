// A TypeScript client of the FormatterService, with Connect-ES over gRPC.
//
// Builds a short tool-using conversation, formats it for three providers,
// parses a provider response and a provider stream, and shows how a bad
// request is reported. Prints the results as one JSON document.
//
// Usage: node build/client.js [--connect] [HOST:PORT]   (default: $AGENTSCOPE_TARGET or
// 127.0.0.1:50051). With --connect it speaks the Connect protocol to `agentscope-proto serve
// --http-port` (HOST:PORT is then the HTTP port) and prints the same document.

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
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
import { MsgSchema, Role, type Msg } from "./gen/agentscope/message/v1/message_pb.js";
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

/** gRPC, or the Connect protocol over HTTP/2 (ParseStream streams both ways, which needs it). */
function transport(connect: boolean, target: string): Transport {
  const baseUrl = `http://${target}`;
  return connect ? createConnectTransport({ baseUrl, httpVersion: "2" }) : createGrpcTransport({ baseUrl });
}

async function main() {
  const args = process.argv.slice(2);
  const target = args.find((arg) => !arg.startsWith("--")) ?? process.env.AGENTSCOPE_TARGET ?? "127.0.0.1:50051";
  const client = createClient(FormatterService, transport(args.includes("--connect"), target));
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
  console.log(JSON.stringify(out, null, 2));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
