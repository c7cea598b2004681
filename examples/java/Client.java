// A Java client of the FormatterService, the HubService and a served agent.
//
// Builds a short tool-using conversation, formats it for three providers,
// parses a provider response and a provider stream, and shows how a bad
// request is reported; publishes the conversation to a hub topic and reads it
// back from a subscription; given an agent's address, asks the agent the
// conversation's question, printing the type of each event of its reply on
// stderr as it arrives, and confirms the tool call the agent asks about.
// Prints the results as one JSON document on stdout.
//
// Usage: java -cp ... Client [HOST:PORT [AGENT_HOST:PORT]]
//   HOST:PORT: `agentscope-proto serve` (default: $AGENTSCOPE_TARGET or 127.0.0.1:50051)
//   AGENT_HOST:PORT: `agentscope-proto serve-agent` (default: $AGENTSCOPE_AGENT_TARGET;
//   neither: no agent part)

import io.agentscope.proto.agent.v1.AgentEvent;
import io.agentscope.proto.agent.v1.AgentServiceGrpc;
import io.agentscope.proto.agent.v1.ConfirmResult;
import io.agentscope.proto.agent.v1.HubEvent;
import io.agentscope.proto.agent.v1.HubServiceGrpc;
import io.agentscope.proto.agent.v1.PublishRequest;
import io.agentscope.proto.agent.v1.ReplyRequest;
import io.agentscope.proto.agent.v1.ReplyResponse;
import io.agentscope.proto.agent.v1.RequireUserConfirmEvent;
import io.agentscope.proto.agent.v1.ResumeRequest;
import io.agentscope.proto.agent.v1.SubscribeRequest;
import io.agentscope.proto.agent.v1.UserConfirmResultEvent;
import io.agentscope.proto.formatter.v1.BlockDelta;
import io.agentscope.proto.formatter.v1.FormatRequest;
import io.agentscope.proto.formatter.v1.FormatterServiceGrpc;
import io.agentscope.proto.formatter.v1.ParseRequest;
import io.agentscope.proto.formatter.v1.ParseResult;
import io.agentscope.proto.formatter.v1.ParseStreamRequest;
import io.agentscope.proto.formatter.v1.ParseStreamResponse;
import io.agentscope.proto.formatter.v1.Provider;
import io.agentscope.proto.formatter.v1.StreamMode;
import io.agentscope.proto.message.v1.ContentBlock;
import io.agentscope.proto.message.v1.ContentBlocks;
import io.agentscope.proto.message.v1.Msg;
import io.agentscope.proto.message.v1.Role;
import io.agentscope.proto.message.v1.TextBlock;
import io.agentscope.proto.message.v1.ToolResultBlock;
import io.agentscope.proto.message.v1.ToolUseBlock;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.common.util.concurrent.Uninterruptibles;
import com.google.protobuf.Any;
import com.google.rpc.BadRequest;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

public final class Client {
  static final String TOOLS =
      "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\","
          + " \"description\": \"The current weather in a city.\","
          + " \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}]";

  // What the provider's HTTP API would answer: an OpenAI chat completion...
  static final String OPENAI_RESPONSE =
      "{\"id\": \"chatcmpl-1\", \"object\": \"chat.completion\", \"choices\": [{\"index\": 0,"
          + " \"message\": {\"role\": \"assistant\", \"content\": \"Let me check.\", \"tool_calls\":"
          + " [{\"id\": \"call_2\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\","
          + " \"arguments\": \"{\\\"city\\\":\\\"Lyon\\\"}\"}}]}, \"finish_reason\": \"tool_calls\"}],"
          + " \"usage\": {\"prompt_tokens\": 42, \"completion_tokens\": 17}}";

  // ...and the events of a streamed one.
  static final List<String> OPENAI_CHUNKS = List.of(
      "{\"id\": \"chatcmpl-2\", \"choices\": [{\"index\": 0, \"delta\": {\"role\": \"assistant\","
          + " \"content\": \"It is \"}}]}",
      "{\"id\": \"chatcmpl-2\", \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"sunny, 21 °C.\"}}]}",
      "{\"id\": \"chatcmpl-2\", \"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"stop\"}],"
          + " \"usage\": {\"prompt_tokens\": 50, \"completion_tokens\": 6}}");

  /** A user question, the assistant's tool call and the tool's result. */
  static List<Msg> conversation() {
    JsonObject input = new JsonObject();
    input.addProperty("city", "Paris");
    return List.of(
        Msg.newBuilder().setName("user").setRole(Role.ROLE_USER)
            .setText("What is the weather in Paris?").build(),
        Msg.newBuilder().setName("Friday").setRole(Role.ROLE_ASSISTANT)
            .setBlocks(ContentBlocks.newBuilder()
                .addItems(ContentBlock.newBuilder()
                    .setText(TextBlock.newBuilder().setText("Let me check.")))
                .addItems(ContentBlock.newBuilder()
                    .setToolUse(ToolUseBlock.newBuilder().setId("call_1").setName("get_weather")
                        .setInputJson(input.toString()))))
            .build(),
        Msg.newBuilder().setName("system").setRole(Role.ROLE_SYSTEM)
            .setBlocks(ContentBlocks.newBuilder()
                .addItems(ContentBlock.newBuilder()
                    .setToolResult(ToolResultBlock.newBuilder().setId("call_1").setName("get_weather")
                        .setText("Sunny, 21 °C"))))
            .build());
  }

  static FormatRequest formatRequest(Provider provider, String toolChoice) {
    return FormatRequest.newBuilder().setProvider(provider).addAllMessages(conversation())
        .setToolsJson(TOOLS).setToolChoice(toolChoice).build();
  }

  /** The parts of a parse result the examples compare. */
  static JsonObject summary(ParseResult result) {
    StringBuilder text = new StringBuilder();
    JsonArray toolCalls = new JsonArray();
    for (ContentBlock block : result.getMsg().getBlocks().getItemsList()) {
      if (block.hasText()) {
        text.append(block.getText().getText());
      } else if (block.hasToolUse()) {
        JsonObject call = new JsonObject();
        call.addProperty("id", block.getToolUse().getId());
        call.addProperty("name", block.getToolUse().getName());
        call.add("input", JsonParser.parseString(block.getToolUse().getInputJson()));
        toolCalls.add(call);
      }
    }
    JsonObject usage = new JsonObject();
    if (result.getUsage().hasInputTokens()) {
      usage.addProperty("input_tokens", result.getUsage().getInputTokens());
    }
    if (result.getUsage().hasOutputTokens()) {
      usage.addProperty("output_tokens", result.getUsage().getOutputTokens());
    }
    JsonObject out = new JsonObject();
    out.addProperty("text", text.toString());
    out.add("tool_calls", toolCalls);
    out.addProperty("finish_reason", result.getFinishReason().name());
    out.add("usage", usage);
    return out;
  }

  /** ParseStream: the replies, collected from the async stub (the blocking one is unary only). */
  static List<ParseStreamResponse> parseStream(FormatterServiceGrpc.FormatterServiceStub stub,
      StreamMode mode) throws InterruptedException {
    LinkedBlockingQueue<Object> done = new LinkedBlockingQueue<>();
    List<ParseStreamResponse> replies = new java.util.ArrayList<>();
    StreamObserver<ParseStreamRequest> requests = stub.parseStream(new StreamObserver<>() {
      public void onNext(ParseStreamResponse reply) { replies.add(reply); }
      public void onError(Throwable error) { done.add(error); }
      public void onCompleted() { done.add(replies); }
    });
    for (int i = 0; i < OPENAI_CHUNKS.size(); i++) {
      ParseStreamRequest.Builder request = ParseStreamRequest.newBuilder()
          .setChunkJson(OPENAI_CHUNKS.get(i));
      if (i == 0) { // the first request names the provider and the stream mode
        request.setProvider(Provider.PROVIDER_OPENAI).setStreamMode(mode);
      }
      requests.onNext(request.build());
    }
    requests.onCompleted();
    Object outcome = done.take();
    if (outcome instanceof Throwable error) {
      throw new RuntimeException(error);
    }
    return replies;
  }

  // The hub topic the conversation is published to.
  static final String TOPIC = "examples/weather";

  /** A message's block kinds by their field names in the schema (a case's name is its field's in upper case). */
  static JsonArray blockKinds(Msg msg) {
    JsonArray kinds = new JsonArray();
    for (ContentBlock block : msg.getBlocks().getItemsList()) {
      kinds.add(block.getBlockCase().name().toLowerCase(Locale.ROOT));
    }
    return kinds;
  }

  /**
   * Publish the conversation to TOPIC and read it back: the question first, then a subscription
   * after its offset (a gap-free start over any protocol), then the other messages, which reach
   * the subscription with the offsets Publish returned.
   */
  static JsonObject hubRoundTrip(ManagedChannel channel) throws Exception {
    var hub = HubServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
    List<Msg> rest = conversation().subList(1, 3);
    String after = hub.publish(PublishRequest.newBuilder().setTopic(TOPIC)
        .setMsg(conversation().get(0)).build()).getOffset();
    // A subscription ends when cancelled: it runs in a context of its own.
    Context.CancellableContext subscribed = Context.current().withCancellation();
    try {
      Iterator<HubEvent> events = subscribed.call(() -> hub.subscribe(
          SubscribeRequest.newBuilder().setTopic(TOPIC).setAfter(after).build()));
      List<String> offsets = new ArrayList<>();
      for (Msg msg : rest) {
        offsets.add(hub.publish(PublishRequest.newBuilder().setTopic(TOPIC).setMsg(msg).build())
            .getOffset());
      }
      JsonArray received = new JsonArray();
      for (int i = 0; i < rest.size(); i++) {
        HubEvent event = events.next();
        JsonObject item = new JsonObject();
        item.addProperty("offset_matches", event.getOffset().equals(offsets.get(i)));
        item.addProperty("msg_matches", event.getMsg().equals(rest.get(i)));
        item.addProperty("name", event.getMsg().getName());
        item.addProperty("role", event.getMsg().getRole().name());
        item.add("blocks", blockKinds(event.getMsg()));
        received.add(item);
      }
      JsonObject out = new JsonObject();
      out.add("received", received);
      return out;
    } finally {
      subscribed.cancel(null);
    }
  }

  /** A message's text: its text, or its text blocks joined. */
  static String msgText(Msg msg) {
    StringBuilder text = new StringBuilder(msg.getText());
    for (ContentBlock block : msg.getBlocks().getItemsList()) {
      text.append(block.getText().getText());
    }
    return text.toString();
  }

  /** Allow every tool call the agent asks about, as it asked for it. */
  static UserConfirmResultEvent confirm(RequireUserConfirmEvent asked) {
    UserConfirmResultEvent.Builder answer = UserConfirmResultEvent.newBuilder()
        .setReplyId(asked.getReplyId());
    for (ToolUseBlock call : asked.getToolCallsList()) {
      answer.addConfirmResults(ConfirmResult.newBuilder().setConfirmed(true).setToolCall(call));
    }
    return answer.build();
  }

  // How a reply is taken up after its connection dropped: at most this many Resume calls in a
  // row ($AGENTSCOPE_RESUME_ATTEMPTS, default 5, as the Python client's), the first after 0.1 s,
  // each wait twice the last, at most 2 s.
  static final int RESUME_ATTEMPTS = resumeAttempts();
  static final long FIRST_WAIT_MS = 100;
  static final long LAST_WAIT_MS = 2000;

  static int resumeAttempts() {
    String value = System.getenv().getOrDefault("AGENTSCOPE_RESUME_ATTEMPTS", "");
    return value.matches("\\d+") ? Integer.parseInt(value) : 5;
  }

  /**
   * Where a reply stands for its caller: its id, its session and the last cursor read. The rest of
   * a reply after an answer has the same id, and its log goes on after that cursor.
   */
  static final class Place {
    String session = "";
    String replyId = "";
    String cursor = "";
  }

  /**
   * The responses of the reply a request asks for, in order and each once: when the connection
   * drops mid-reply, the reply is taken up after the last cursor (Resume), with a growing wait,
   * until it ends or the attempts run out (then UNAVAILABLE saying so).
   */
  static final class ResumingReply implements Iterator<ReplyResponse> {
    private final AgentServiceGrpc.AgentServiceBlockingStub agent;
    private final Place at;
    private Iterator<ReplyResponse> responses;
    private int tries;

    ResumingReply(AgentServiceGrpc.AgentServiceBlockingStub agent, ReplyRequest request, Place at) {
      this.agent = agent;
      this.at = at;
      // The reply goes on while this client is away.
      responses = agent.reply(request.toBuilder().setKeepRunning(RESUME_ATTEMPTS > 0).build());
    }

    /**
     * Whether the call was cut off, after which the reply, kept running on the server, can be
     * taken up: UNAVAILABLE (a dropped connection) or CANCELLED (a server stopped with the call
     * running) with no details (a status the server sends, such as a failed reply's, carries
     * them), once the reply's id and a cursor are known.
     */
    private boolean dropped(StatusRuntimeException error) {
      com.google.rpc.Status details = StatusProto.fromThrowable(error); // null or bare: none sent
      Status.Code code = error.getStatus().getCode();
      return (code == Status.Code.UNAVAILABLE || code == Status.Code.CANCELLED)
          && (details == null || details.getDetailsCount() == 0)
          && !at.replyId.isEmpty() && !at.cursor.isEmpty();
    }

    @Override
    public boolean hasNext() {
      while (true) {
        try {
          return responses.hasNext();
        } catch (StatusRuntimeException error) {
          if (!dropped(error)) {
            throw error; // the server's status (a drop, even after the end, is taken up)
          }
          if (++tries > RESUME_ATTEMPTS) {
            throw Status.UNAVAILABLE.withDescription(String.format(
                "the connection dropped during reply %s and %d attempts to take it up failed (last: %s)",
                at.replyId, RESUME_ATTEMPTS, error.getStatus().getDescription())).asRuntimeException();
          }
        }
        Uninterruptibles.sleepUninterruptibly(
            Math.min(FIRST_WAIT_MS << (tries - 1), LAST_WAIT_MS), TimeUnit.MILLISECONDS);
        System.err.printf("resuming reply %s after cursor %s (attempt %d of %d)%n",
            at.replyId, at.cursor, tries, RESUME_ATTEMPTS);
        responses = agent.resume(ResumeRequest.newBuilder().setSessionId(at.session)
            .setReplyId(at.replyId).setAfter(at.cursor).build());
      }
    }

    @Override
    public ReplyResponse next() {
      ReplyResponse response = responses.next();
      tries = 0;
      if (response.getEvent().hasReplyStart()) {
        at.session = response.getEvent().getReplyStart().getSessionId();
        at.replyId = response.getEvent().getReplyStart().getReplyId();
      }
      if (!response.getCursor().isEmpty()) {
        at.cursor = response.getCursor();
      }
      return response;
    }
  }

  /**
   * Ask the agent the conversation's question; while its reply stops to ask for a confirmation,
   * answer it (in the reply's session) and go on until the reply ends. A reply whose connection
   * drops is taken up where it stopped ({@link ResumingReply}).
   */
  static JsonObject askAgent(String target) throws InterruptedException {
    ManagedChannel channel = ManagedChannelBuilder.forTarget(target).usePlaintext().build();
    var agent = AgentServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
    JsonArray replies = new JsonArray();
    JsonArray asked = new JsonArray();
    Place at = new Place();
    String endedIn = "";
    Msg msg = Msg.getDefaultInstance();
    ReplyRequest request = ReplyRequest.newBuilder().addMsgs(conversation().get(0)).build();
    while (request != null) {
      Iterator<ReplyResponse> responses = new ResumingReply(agent, request, at);
      request = null;
      JsonArray events = new JsonArray();
      StringBuilder text = new StringBuilder();
      StringBuilder toolResult = new StringBuilder();
      while (responses.hasNext()) {
        ReplyResponse response = responses.next();
        if (response.getDone()) {
          msg = response.getMsg(); // the reply so far
        }
        AgentEvent event = response.getEvent();
        if (event.getEventCase() == AgentEvent.EventCase.EVENT_NOT_SET) {
          continue; // none, or an event kind newer than this schema
        }
        String type = event.getEventCase().name(); // the field's name in upper case: 2.x's type
        System.err.println(type); // as it arrives
        events.add(type);
        switch (event.getEventCase()) {
          case TEXT_BLOCK_DELTA -> text.append(event.getTextBlockDelta().getDelta());
          case TOOL_RESULT_TEXT_DELTA -> toolResult.append(event.getToolResultTextDelta().getDelta());
          case REQUIRE_USER_CONFIRM -> {
            for (ToolUseBlock call : event.getRequireUserConfirm().getToolCallsList()) {
              JsonObject item = new JsonObject();
              item.addProperty("name", call.getName());
              item.add("input", JsonParser.parseString(call.getInputJson()));
              asked.add(item);
            }
            // The answer goes on with the same reply, in the session that asked.
            request = ReplyRequest.newBuilder().setSessionId(at.session)
                .setUserConfirmResult(confirm(event.getRequireUserConfirm())).build();
          }
          case REPLY_END -> endedIn = event.getReplyEnd().getSessionId();
          default -> { }
        }
      }
      JsonObject reply = new JsonObject();
      reply.add("events", events);
      reply.addProperty("text", text.toString());
      reply.addProperty("tool_result", toolResult.toString());
      replies.add(reply);
    }
    channel.shutdown().awaitTermination(5, TimeUnit.SECONDS);
    JsonObject last = new JsonObject();
    last.addProperty("name", msg.getName());
    last.addProperty("role", msg.getRole().name());
    last.addProperty("text", msgText(msg));
    last.addProperty("finished_reason", msg.getFinishedReason().name());
    JsonObject out = new JsonObject();
    out.add("replies", replies);
    out.add("asked", asked);
    out.addProperty("same_session", !at.session.isEmpty() && endedIn.equals(at.session));
    out.add("reply", last);
    return out;
  }

  public static void main(String[] args) throws Exception {
    String target = args.length > 0 ? args[0]
        : System.getenv().getOrDefault("AGENTSCOPE_TARGET", "127.0.0.1:50051");
    String agentTarget = args.length > 1 ? args[1]
        : System.getenv().getOrDefault("AGENTSCOPE_AGENT_TARGET", "");
    ManagedChannel channel = ManagedChannelBuilder.forTarget(target).usePlaintext().build();
    var client = FormatterServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
    JsonObject out = new JsonObject();

    // Format: the reply's body_json is the provider's request body as JSON.
    JsonObject bodies = new JsonObject();
    for (var entry : Map.of("openai", Provider.PROVIDER_OPENAI, "anthropic",
        Provider.PROVIDER_ANTHROPIC, "gemini", Provider.PROVIDER_GEMINI).entrySet()) {
      var reply = client.format(formatRequest(entry.getValue(), "auto"));
      bodies.add(entry.getKey(), JsonParser.parseString(reply.getBodyJson()));
    }
    out.add("format", bodies);

    var parsed = client.parse(ParseRequest.newBuilder().setProvider(Provider.PROVIDER_OPENAI)
        .setResponseJson(OPENAI_RESPONSE).build());
    out.add("parse", summary(parsed.getResult()));

    // ParseStream: every reply lists what changed (deltas); in CUMULATIVE mode it also
    // carries the result so far, in DELTAS mode only the last (done) reply carries the result.
    var stub = FormatterServiceGrpc.newStub(channel);
    for (var mode : Map.of("stream", StreamMode.STREAM_MODE_CUMULATIVE,
        "stream_deltas", StreamMode.STREAM_MODE_DELTAS).entrySet()) {
      var replies = parseStream(stub.withDeadlineAfter(30, TimeUnit.SECONDS), mode.getValue());
      StringBuilder deltasText = new StringBuilder();
      ParseResult last = null;
      for (ParseStreamResponse reply : replies) {
        for (BlockDelta delta : reply.getResult().getDeltasList()) {
          deltasText.append(delta.getBlock().getText().getText());
        }
        if (reply.getDone()) {
          last = reply.getResult();
        }
      }
      JsonObject streamed = summary(last);
      streamed.addProperty("responses", replies.size());
      // "" in DELTAS mode: the first reply carries no message.
      streamed.add("first_text", summary(replies.get(0).getResult()).get("text"));
      streamed.addProperty("deltas_text", deltasText.toString());
      out.add(mode.getKey(), streamed);
    }

    // A tool_choice naming no given tool is INVALID_ARGUMENT with a google.rpc.BadRequest detail.
    try {
      client.format(formatRequest(Provider.PROVIDER_OPENAI, "get_time"));
    } catch (StatusRuntimeException error) {
      if (error.getStatus().getCode() != Status.Code.INVALID_ARGUMENT) {
        throw error;
      }
      for (Any detail : StatusProto.fromThrowable(error).getDetailsList()) {
        if (detail.is(BadRequest.class)) {
          var violation = detail.unpack(BadRequest.class).getFieldViolations(0);
          JsonObject field = new JsonObject();
          field.addProperty("field", violation.getField());
          field.addProperty("description", violation.getDescription());
          out.add("error", field);
        }
      }
    }

    out.add("hub", hubRoundTrip(channel));
    if (!agentTarget.isEmpty()) {
      try {
        out.add("agent", askAgent(agentTarget));
      } catch (StatusRuntimeException error) { // e.g. the reply could not be taken up: one line, exit 1
        System.err.println(error.getMessage());
        System.exit(1);
      }
    }
    channel.shutdown().awaitTermination(5, TimeUnit.SECONDS);
    System.out.println(new GsonBuilder().setPrettyPrinting().serializeNulls().disableHtmlEscaping().create().toJson(out));
  }
}
