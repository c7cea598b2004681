// A C++ client of the FormatterService, the HubService and a served agent.
//
// Builds a short tool-using conversation, formats it for three providers,
// parses a provider response and a provider stream, and shows how a bad
// request is reported; publishes the conversation to a hub topic and reads it
// back from a subscription; given an agent's address, asks the agent the
// conversation's question, printing the type of each event of its reply on
// stderr as it arrives, and confirms the tool call the agent asks about.
// Prints the results as one JSON document on stdout (JSON is read and written
// with protobuf's own google.protobuf.Value, so nothing else is needed).
//
// Usage: client [HOST:PORT [AGENT_HOST:PORT]]
//   HOST:PORT: `agentscope-proto serve` (default: $AGENTSCOPE_TARGET or 127.0.0.1:50051)
//   AGENT_HOST:PORT: `agentscope-proto serve-agent` (default: $AGENTSCOPE_AGENT_TARGET;
//   neither: no agent part)

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include "agentscope/agent/v1/agent_service.grpc.pb.h"
#include "agentscope/agent/v1/hub_service.grpc.pb.h"
#include "agentscope/formatter/v1/formatter_service.grpc.pb.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace agent = agentscope::agent::v1;
namespace fmt = agentscope::formatter::v1;
namespace msg = agentscope::message::v1;
using google::protobuf::RepeatedPtrField;
using google::protobuf::Struct;
using google::protobuf::Value;

const char* kTools = R"([{"type": "function", "function": {"name": "get_weather",
  "description": "The current weather in a city.",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])";

// What the provider's HTTP API would answer: an OpenAI chat completion...
const char* kOpenaiResponse = R"({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0,
  "message": {"role": "assistant", "content": "Let me check.", "tool_calls": [{"id": "call_2",
  "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Lyon\"}"}}]},
  "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 42, "completion_tokens": 17}})";

// ...and the events of a streamed one.
const std::vector<std::string> kOpenaiChunks = {
    R"({"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "It is "}}]})",
    R"({"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"content": "sunny, 21 °C."}}]})",
    R"({"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 50, "completion_tokens": 6}})",
};

// Any JSON text as a google.protobuf.Value.
Value Decode(const std::string& json) {
  Value value;
  if (!google::protobuf::util::JsonStringToMessage(json, &value).ok()) {
    std::cerr << "invalid JSON: " << json << "\n";
    std::exit(1);
  }
  return value;
}

Value String(const std::string& text) {
  Value value;
  value.set_string_value(text);
  return value;
}

Value Number(double number) {
  Value value;
  value.set_number_value(number);
  return value;
}

Value Bool(bool boolean) {
  Value value;
  value.set_bool_value(boolean);
  return value;
}

// A user question, the assistant's tool call and the tool's result.
void AddConversation(RepeatedPtrField<msg::Msg>* messages) {
  msg::Msg* user = messages->Add();
  user->set_name("user");
  user->set_role(msg::ROLE_USER);
  user->set_text("What is the weather in Paris?");

  msg::Msg* assistant = messages->Add();
  assistant->set_name("Friday");
  assistant->set_role(msg::ROLE_ASSISTANT);
  assistant->mutable_blocks()->add_items()->mutable_text()->set_text("Let me check.");
  msg::ToolUseBlock* call = assistant->mutable_blocks()->add_items()->mutable_tool_use();
  call->set_id("call_1");
  call->set_name("get_weather");
  call->set_input_json(R"({"city": "Paris"})");

  msg::Msg* result = messages->Add();
  result->set_name("system");
  result->set_role(msg::ROLE_SYSTEM);
  msg::ToolResultBlock* output = result->mutable_blocks()->add_items()->mutable_tool_result();
  output->set_id("call_1");
  output->set_name("get_weather");
  output->set_text("Sunny, 21 °C");
}

// The parts of a parse result the examples compare.
Struct Summary(const fmt::ParseResult& result) {
  std::string text;
  Value tool_calls;
  tool_calls.mutable_list_value();
  for (const msg::ContentBlock& block : result.msg().blocks().items()) {
    if (block.has_text()) text += block.text().text();
    if (block.has_tool_use()) {
      auto& call = *tool_calls.mutable_list_value()->add_values()->mutable_struct_value()->mutable_fields();
      call["id"] = String(block.tool_use().id());
      call["name"] = String(block.tool_use().name());
      call["input"] = Decode(block.tool_use().input_json());
    }
  }
  Value usage;
  auto& tokens = *usage.mutable_struct_value()->mutable_fields();
  if (result.usage().has_input_tokens()) tokens["input_tokens"] = Number(result.usage().input_tokens());
  if (result.usage().has_output_tokens()) tokens["output_tokens"] = Number(result.usage().output_tokens());
  Struct out;
  auto& fields = *out.mutable_fields();
  fields["text"] = String(text);
  fields["tool_calls"] = tool_calls;
  fields["finish_reason"] = String(fmt::FinishReason_Name(result.finish_reason()));
  fields["usage"] = usage;
  return out;
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return context;
}

void Check(const grpc::Status& status) {
  if (!status.ok()) {
    std::cerr << "RPC failed: " << status.error_code() << " " << status.error_message() << "\n";
    std::exit(1);
  }
}

Struct ParseStream(fmt::FormatterService::Stub* stub, fmt::StreamMode mode) {
  auto context = Context();
  auto stream = stub->ParseStream(context.get());
  for (size_t i = 0; i < kOpenaiChunks.size(); ++i) {
    fmt::ParseStreamRequest request;
    if (i == 0) {  // the first request names the provider and the stream mode
      request.set_provider(fmt::PROVIDER_OPENAI);
      request.set_stream_mode(mode);
    }
    request.set_chunk_json(kOpenaiChunks[i]);
    stream->Write(request);
  }
  stream->WritesDone();
  fmt::ParseStreamResponse reply;
  fmt::ParseResult first, last;
  int responses = 0;
  std::string deltas_text;
  while (stream->Read(&reply)) {
    if (++responses == 1) first = reply.result();
    for (const fmt::BlockDelta& delta : reply.result().deltas()) deltas_text += delta.block().text().text();
    if (reply.done()) last = reply.result();
  }
  Check(stream->Finish());
  Struct streamed = Summary(last);
  (*streamed.mutable_fields())["responses"] = Number(responses);
  // "" in DELTAS mode: the first reply carries no message.
  (*streamed.mutable_fields())["first_text"] = Summary(first).fields().at("text");
  (*streamed.mutable_fields())["deltas_text"] = String(deltas_text);
  return streamed;
}

// The hub topic the conversation is published to.
const char* kTopic = "examples/weather";

// The schema's name of the field a oneof holds (e.g. "tool_use"): a case is its field's number.
template <typename Message>
std::string CaseName(int number) {
  return Message::descriptor()->FindFieldByNumber(number)->name();
}

// A message's block kinds by their field names in the schema.
Value BlockKinds(const msg::Msg& message) {
  Value kinds;
  kinds.mutable_list_value();
  for (const msg::ContentBlock& block : message.blocks().items()) {
    *kinds.mutable_list_value()->add_values() = String(CaseName<msg::ContentBlock>(block.block_case()));
  }
  return kinds;
}

// Publishes the conversation to the topic and reads it back: the question first, then a
// subscription after its offset (a gap-free start over any protocol), then the other
// messages, which reach the subscription with the offsets Publish returned.
Struct HubRoundTrip(const std::shared_ptr<grpc::Channel>& channel) {
  auto hub = agent::HubService::NewStub(channel);
  RepeatedPtrField<msg::Msg> conversation;
  AddConversation(&conversation);
  agent::PublishRequest publish;
  publish.set_topic(kTopic);
  *publish.mutable_msg() = conversation[0];
  agent::PublishResponse first;
  Check(hub->Publish(Context().get(), publish, &first));
  agent::SubscribeRequest subscribe;
  subscribe.set_topic(kTopic);
  subscribe.set_after(first.offset());
  auto subscribed = Context();  // a subscription ends when cancelled
  auto events = hub->Subscribe(subscribed.get(), subscribe);
  std::vector<std::string> offsets;
  for (int i = 1; i < conversation.size(); ++i) {
    *publish.mutable_msg() = conversation[i];
    agent::PublishResponse reply;
    Check(hub->Publish(Context().get(), publish, &reply));
    offsets.push_back(reply.offset());
  }
  Value received;
  received.mutable_list_value();
  for (int i = 1; i < conversation.size(); ++i) {
    agent::HubEvent event;
    if (!events->Read(&event)) {
      Check(events->Finish());
      std::cerr << "the subscription ended early\n";
      std::exit(1);
    }
    auto& item = *received.mutable_list_value()->add_values()->mutable_struct_value()->mutable_fields();
    item["offset_matches"] = Bool(event.offset() == offsets[i - 1]);
    item["msg_matches"] = Bool(google::protobuf::util::MessageDifferencer::Equals(event.msg(), conversation[i]));
    item["name"] = String(event.msg().name());
    item["role"] = String(msg::Role_Name(event.msg().role()));
    item["blocks"] = BlockKinds(event.msg());
  }
  subscribed->TryCancel();
  events->Finish();  // CANCELLED, as asked
  Struct out;
  (*out.mutable_fields())["received"] = received;
  return out;
}

// A message's text: its text, or its text blocks joined.
std::string MsgText(const msg::Msg& message) {
  std::string text = message.text();
  for (const msg::ContentBlock& block : message.blocks().items()) text += block.text().text();
  return text;
}

// Allows every tool call the agent asks about, as it asked for it.
agent::UserConfirmResultEvent Confirm(const agent::RequireUserConfirmEvent& asked) {
  agent::UserConfirmResultEvent answer;
  answer.set_reply_id(asked.reply_id());
  for (const msg::ToolUseBlock& call : asked.tool_calls()) {
    agent::ConfirmResult* result = answer.add_confirm_results();
    result->set_confirmed(true);
    *result->mutable_tool_call() = call;
  }
  return answer;
}

// How a reply is taken up after its connection dropped: at most this many Resume calls in a
// row ($AGENTSCOPE_RESUME_ATTEMPTS, default 5, as the Python client's), the first after 0.1 s,
// each wait twice the last, at most 2 s.
int ResumeAttempts() {
  const char* env = std::getenv("AGENTSCOPE_RESUME_ATTEMPTS");
  const std::string value = env ? env : "";
  bool number = !value.empty() && value.size() < 6 && std::all_of(value.begin(), value.end(), ::isdigit);
  return number ? std::stoi(value) : 5;
}
const std::chrono::milliseconds kFirstWait(100), kLastWait(2000);

// Where a reply stands for its caller: its id, its session and the last cursor read. The rest
// of a reply after an answer has the same id, and its log goes on after that cursor.
struct Place {
  std::string session, reply_id, cursor;
};

// Whether a call was cut off, after which the reply, kept running on the server, can be taken
// up: UNAVAILABLE (a dropped connection) or CANCELLED (a server stopped with the call running)
// with no details (a status the server sends, such as a failed reply's, carries them), once the
// reply's id and a cursor are known.
bool Dropped(const grpc::Status& status, const Place& at) {
  const bool cut = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                   status.error_code() == grpc::StatusCode::CANCELLED;
  return cut && status.error_details().empty() &&
         !at.reply_id.empty() && !at.cursor.empty();
}

// Sends the request and hands each response of the reply to `handle`, in order and once: when
// the connection drops mid-reply, takes the reply up after the last cursor (Resume), with a
// growing wait, until the reply ends or the attempts run out (then exits saying so).
void Reply(agent::AgentService::Stub* stub, agent::ReplyRequest request, Place* at,
           const std::function<void(const agent::ReplyResponse&)>& handle) {
  const int attempts = ResumeAttempts();
  request.set_keep_running(attempts > 0);  // the reply goes on while this client is away
  auto context = Context();
  auto stream = stub->Reply(context.get(), request);
  int tries = 0;
  for (;;) {
    agent::ReplyResponse response;
    while (stream->Read(&response)) {
      tries = 0;
      if (response.event().has_reply_start()) {
        at->session = response.event().reply_start().session_id();
        at->reply_id = response.event().reply_start().reply_id();
      }
      if (!response.cursor().empty()) at->cursor = response.cursor();
      handle(response);
    }
    grpc::Status status = stream->Finish();
    if (status.ok()) return;
    if (!Dropped(status, *at)) Check(status);  // the server's status (a drop after the end: taken up)
    if (++tries > attempts) {
      std::cerr << "the connection dropped during reply " << at->reply_id << " and " << attempts
                << " attempts to take it up failed (last: " << status.error_message() << ")" << std::endl;
      std::exit(1);
    }
    std::this_thread::sleep_for(std::min(kFirstWait * (1 << std::min(tries - 1, 5)), kLastWait));
    std::cerr << "resuming reply " << at->reply_id << " after cursor " << at->cursor << " (attempt " << tries
              << " of " << attempts << ")" << std::endl;
    agent::ResumeRequest resume;
    resume.set_session_id(at->session);
    resume.set_reply_id(at->reply_id);
    resume.set_after(at->cursor);
    auto next = Context();
    stream = stub->Resume(next.get(), resume);  // the old stream goes before its context
    context = std::move(next);
  }
}

// Asks the agent the conversation's question; while its reply stops to ask for a
// confirmation, answers it (in the reply's session) and goes on until the reply ends. A reply
// whose connection drops is taken up where it stopped (`Reply` above).
Struct AskAgent(const std::string& target) {
  auto stub = agent::AgentService::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  Value replies, asked;
  replies.mutable_list_value();
  asked.mutable_list_value();
  Place at;
  std::string ended_in;
  msg::Msg last;
  RepeatedPtrField<msg::Msg> conversation;
  AddConversation(&conversation);
  std::optional<agent::ReplyRequest> request = agent::ReplyRequest();
  *request->add_msgs() = conversation[0];
  while (request) {
    agent::ReplyRequest next = *request;
    request.reset();
    Value events;
    events.mutable_list_value();
    std::string text, tool_result;
    Reply(stub.get(), next, &at, [&](const agent::ReplyResponse& response) {
      if (response.done()) last = response.msg();  // the reply so far
      const agent::AgentEvent& event = response.event();
      if (event.event_case() == agent::AgentEvent::EVENT_NOT_SET) return;  // none, or newer than this schema
      std::string type = CaseName<agent::AgentEvent>(event.event_case());
      std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::toupper(c); });
      std::cerr << type << std::endl;  // as it arrives
      *events.mutable_list_value()->add_values() = String(type);
      switch (event.event_case()) {
        case agent::AgentEvent::kTextBlockDelta:
          text += event.text_block_delta().delta();
          break;
        case agent::AgentEvent::kToolResultTextDelta:
          tool_result += event.tool_result_text_delta().delta();
          break;
        case agent::AgentEvent::kRequireUserConfirm:
          for (const msg::ToolUseBlock& call : event.require_user_confirm().tool_calls()) {
            auto& item = *asked.mutable_list_value()->add_values()->mutable_struct_value()->mutable_fields();
            item["name"] = String(call.name());
            item["input"] = Decode(call.input_json());
          }
          // The answer goes on with the same reply, in the session that asked.
          request = agent::ReplyRequest();
          request->set_session_id(at.session);
          *request->mutable_user_confirm_result() = Confirm(event.require_user_confirm());
          break;
        case agent::AgentEvent::kReplyEnd:
          ended_in = event.reply_end().session_id();
          break;
        default:
          break;
      }
    });
    auto& reply = *replies.mutable_list_value()->add_values()->mutable_struct_value()->mutable_fields();
    reply["events"] = events;
    reply["text"] = String(text);
    reply["tool_result"] = String(tool_result);
  }
  Struct out;
  auto& fields = *out.mutable_fields();
  fields["replies"] = replies;
  fields["asked"] = asked;
  fields["same_session"] = Bool(!at.session.empty() && ended_in == at.session);
  auto& reply = *fields["reply"].mutable_struct_value()->mutable_fields();
  reply["name"] = String(last.name());
  reply["role"] = String(msg::Role_Name(last.role()));
  reply["text"] = String(MsgText(last));
  reply["finished_reason"] = String(msg::FinishedReason_Name(last.finished_reason()));
  return out;
}

int main(int argc, char** argv) {
  const char* env = std::getenv("AGENTSCOPE_TARGET");
  const char* agent_env = std::getenv("AGENTSCOPE_AGENT_TARGET");
  std::string target = argc > 1 ? argv[1] : env ? env : "127.0.0.1:50051";
  std::string agent_target = argc > 2 ? argv[2] : agent_env ? agent_env : "";
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  auto stub = fmt::FormatterService::NewStub(channel);
  Struct out;
  auto& fields = *out.mutable_fields();

  // Format: the reply's body_json is the provider's request body as JSON.
  const std::map<std::string, fmt::Provider> providers = {{"openai", fmt::PROVIDER_OPENAI},
      {"anthropic", fmt::PROVIDER_ANTHROPIC}, {"gemini", fmt::PROVIDER_GEMINI}};
  auto& bodies = *fields["format"].mutable_struct_value()->mutable_fields();
  for (const auto& [name, provider] : providers) {
    fmt::FormatRequest request;
    request.set_provider(provider);
    AddConversation(request.mutable_messages());
    request.set_tools_json(kTools);
    request.set_tool_choice("auto");
    fmt::FormatResponse reply;
    Check(stub->Format(Context().get(), request, &reply));
    bodies[name] = Decode(reply.body_json());
  }

  fmt::ParseRequest parse_request;
  parse_request.set_provider(fmt::PROVIDER_OPENAI);
  parse_request.set_response_json(kOpenaiResponse);
  fmt::ParseResponse parsed;
  Check(stub->Parse(Context().get(), parse_request, &parsed));
  *fields["parse"].mutable_struct_value() = Summary(parsed.result());

  // ParseStream: every reply lists what changed (deltas); in CUMULATIVE mode it also
  // carries the result so far, in DELTAS mode only the last (done) reply carries the result.
  *fields["stream"].mutable_struct_value() = ParseStream(stub.get(), fmt::STREAM_MODE_CUMULATIVE);
  *fields["stream_deltas"].mutable_struct_value() = ParseStream(stub.get(), fmt::STREAM_MODE_DELTAS);

  // A tool_choice naming no given tool is INVALID_ARGUMENT with a google.rpc.BadRequest detail.
  fmt::FormatRequest bad;
  bad.set_provider(fmt::PROVIDER_OPENAI);
  AddConversation(bad.mutable_messages());
  bad.set_tools_json(kTools);
  bad.set_tool_choice("get_time");
  fmt::FormatResponse unused;
  grpc::Status status = stub->Format(Context().get(), bad, &unused);
  if (status.error_code() != grpc::StatusCode::INVALID_ARGUMENT) {
    std::cerr << "expected INVALID_ARGUMENT, got " << status.error_code() << "\n";
    return 1;
  }
  google::rpc::Status details;
  details.ParseFromString(status.error_details());
  for (const google::protobuf::Any& detail : details.details()) {
    google::rpc::BadRequest bad_request;
    if (detail.UnpackTo(&bad_request)) {
      auto& error = *fields["error"].mutable_struct_value()->mutable_fields();
      error["field"] = String(bad_request.field_violations(0).field());
      error["description"] = String(bad_request.field_violations(0).description());
    }
  }

  *fields["hub"].mutable_struct_value() = HubRoundTrip(channel);
  if (!agent_target.empty()) *fields["agent"].mutable_struct_value() = AskAgent(agent_target);

  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  google::protobuf::util::MessageToJsonString(out, &json, options);
  std::cout << json;
  return 0;
}
