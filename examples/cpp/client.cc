// A C++ client of the FormatterService.
//
// Builds a short tool-using conversation, formats it for three providers,
// parses a provider response and a provider stream, and shows how a bad
// request is reported. Prints the results as one JSON document (JSON is read
// and written with protobuf's own google.protobuf.Value, so nothing else is
// needed).
//
// Usage: client [HOST:PORT]   (default: $AGENTSCOPE_TARGET or 127.0.0.1:50051)

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include "agentscope/formatter/v1/formatter_service.grpc.pb.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace fmt = agentscope::formatter::v1;
namespace msg = agentscope::message::v1;
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

// A user question, the assistant's tool call and the tool's result.
void AddConversation(fmt::FormatRequest* request) {
  msg::Msg* user = request->add_messages();
  user->set_name("user");
  user->set_role(msg::ROLE_USER);
  user->set_text("What is the weather in Paris?");

  msg::Msg* assistant = request->add_messages();
  assistant->set_name("Friday");
  assistant->set_role(msg::ROLE_ASSISTANT);
  assistant->mutable_blocks()->add_items()->mutable_text()->set_text("Let me check.");
  msg::ToolUseBlock* call = assistant->mutable_blocks()->add_items()->mutable_tool_use();
  call->set_id("call_1");
  call->set_name("get_weather");
  call->set_input_json(R"({"city": "Paris"})");

  msg::Msg* result = request->add_messages();
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

int main(int argc, char** argv) {
  const char* env = std::getenv("AGENTSCOPE_TARGET");
  std::string target = argc > 1 ? argv[1] : env ? env : "127.0.0.1:50051";
  auto stub = fmt::FormatterService::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  Struct out;
  auto& fields = *out.mutable_fields();

  // Format: the reply's body_json is the provider's request body as JSON.
  const std::map<std::string, fmt::Provider> providers = {{"openai", fmt::PROVIDER_OPENAI},
      {"anthropic", fmt::PROVIDER_ANTHROPIC}, {"gemini", fmt::PROVIDER_GEMINI}};
  auto& bodies = *fields["format"].mutable_struct_value()->mutable_fields();
  for (const auto& [name, provider] : providers) {
    fmt::FormatRequest request;
    request.set_provider(provider);
    AddConversation(&request);
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
  AddConversation(&bad);
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

  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  google::protobuf::util::MessageToJsonString(out, &json, options);
  std::cout << json;
  return 0;
}
