// The chat: one AG-UI thread with the served agent through the official
// client (@ag-ui/client's HttpAgent), its runs drawn as their events come.
import { HttpAgent } from "@ag-ui/client";

// The agent's AG-UI address (serve.py puts it in the page's address).
const url = new URLSearchParams(location.search).get("agent") ?? "http://127.0.0.1:8081/";
const agent = new HttpAgent({ url });
const log = document.getElementById("log");
const form = document.getElementById("ask");
const input = document.getElementById("text");

// A new entry at the end of the conversation.
function entry(className, text = "", tag = "div") {
  const element = document.createElement(tag);
  element.className = className;
  element.textContent = text;
  log.append(element);
  element.scrollIntoView({ block: "end" });
  return element;
}

// Each event's place on the page, by the id the event stream gives it.
const texts = new Map();
const thoughts = new Map();
const tools = new Map();

// Thinking, folded: a closed <details> its reader may open.
function thinking(id) {
  const details = entry("thinking", "", "details");
  details.append(Object.assign(document.createElement("summary"), { textContent: "Thinking" }));
  const body = details.appendChild(document.createElement("div"));
  thoughts.set(id, body);
}

// A tool call: its name and arguments as they stream, later its result.
function toolCall(id, name) {
  const element = entry("tool", `${name} `);
  const args = element.appendChild(document.createElement("code"));
  const result = element.appendChild(document.createElement("div"));
  result.className = "result";
  tools.set(id, { args, result });
}

// A confirmation the run stopped for: Allow / Deny resume the run with the answer.
function confirmation(interrupt) {
  const element = entry("confirm", interrupt.message ?? `${interrupt.reason}?`);
  element.append(document.createElement("br"));
  for (const [label, confirmed] of [["Allow", true], ["Deny", false]]) {
    const button = document.createElement("button");
    button.textContent = label;
    button.onclick = () => {
      element.querySelectorAll("button").forEach((b) => (b.disabled = true));
      entry("user", label);
      const resume = [{ interruptId: interrupt.id, status: "resolved", payload: { confirmed } }];
      run({ resume });
    };
    element.append(button);
  }
}

// The callbacks @ag-ui/client calls for each event of a run.
const subscriber = {
  onTextMessageStartEvent: ({ event }) => texts.set(event.messageId, entry("assistant")),
  onTextMessageContentEvent: ({ event }) => {
    texts.get(event.messageId).textContent += event.delta;
  },
  onReasoningMessageStartEvent: ({ event }) => thinking(event.messageId),
  onReasoningMessageContentEvent: ({ event }) => {
    thoughts.get(event.messageId).textContent += event.delta;
  },
  onToolCallStartEvent: ({ event }) => toolCall(event.toolCallId, event.toolCallName),
  onToolCallArgsEvent: ({ event }) => {
    tools.get(event.toolCallId).args.textContent += event.delta;
  },
  onToolCallResultEvent: ({ event }) => {
    // A result may come in a later run than its call (after a confirmation).
    if (!tools.has(event.toolCallId)) toolCall(event.toolCallId, "result of");
    tools.get(event.toolCallId).result.textContent = `→ ${event.content}`;
  },
  onRunFinishedEvent: ({ outcome, interrupts }) => {
    if (outcome === "interrupt") interrupts.forEach(confirmation);
  },
  onRunErrorEvent: ({ event }) => entry("error", `The run failed: ${event.message}`),
};

// One run of the thread; the form waits while it runs.
async function run(parameters) {
  form.querySelector("button").disabled = true;
  try {
    await agent.runAgent(parameters, subscriber);
  } catch (error) {
    entry("error", `The agent could not be reached: ${error.message ?? error}`);
  } finally {
    form.querySelector("button").disabled = false;
  }
}

form.addEventListener("submit", (submitted) => {
  submitted.preventDefault();
  const content = input.value.trim();
  if (!content) return;
  entry("user", content);
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content });
  input.value = "";
  run({});
});
