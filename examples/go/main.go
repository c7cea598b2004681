// A Go client of the FormatterService, the HubService and a served agent.
//
// Builds a short tool-using conversation, formats it for three providers,
// parses a provider response and a provider stream, and shows how a bad
// request is reported; publishes the conversation to a hub topic and reads it
// back from a subscription; given an agent's address, asks the agent the
// conversation's question, printing the type of each event of its reply on
// stderr as it arrives, and confirms the tool call the agent asks about.
// Prints the results as one JSON document on stdout.
//
// Usage: client [HOST:PORT [AGENT_HOST:PORT]]
//
//	HOST:PORT: `agentscope-proto serve` (default: $AGENTSCOPE_TARGET or 127.0.0.1:50051)
//	AGENT_HOST:PORT: `agentscope-proto serve-agent` (default: $AGENTSCOPE_AGENT_TARGET;
//	neither: no agent part)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	agentv1 "github.com/agentscope-ai/agentscope-proto/gen/go/agentscope/agent/v1"
	formatterv1 "github.com/agentscope-ai/agentscope-proto/gen/go/agentscope/formatter/v1"
	messagev1 "github.com/agentscope-ai/agentscope-proto/gen/go/agentscope/message/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

const tools = `[{"type": "function", "function": {"name": "get_weather",
  "description": "The current weather in a city.",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]`

// What the provider's HTTP API would answer: an OpenAI chat completion...
const openaiResponse = `{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0,
  "message": {"role": "assistant", "content": "Let me check.", "tool_calls": [{"id": "call_2",
  "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Lyon\"}"}}]},
  "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 42, "completion_tokens": 17}}`

// ...and the events of a streamed one.
var openaiChunks = []string{
	`{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "It is "}}]}`,
	`{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"content": "sunny, 21 °C."}}]}`,
	`{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 50, "completion_tokens": 6}}`,
}

func ptr(s string) *string { return &s }

func blocks(items ...*messagev1.ContentBlock) *messagev1.Msg_Blocks {
	return &messagev1.Msg_Blocks{Blocks: &messagev1.ContentBlocks{Items: items}}
}

// conversation is a user question, the assistant's tool call and the tool's result.
func conversation() []*messagev1.Msg {
	input, _ := json.Marshal(map[string]string{"city": "Paris"})
	return []*messagev1.Msg{
		{Name: ptr("user"), Role: messagev1.Role_ROLE_USER,
			Content: &messagev1.Msg_Text{Text: "What is the weather in Paris?"}},
		{Name: ptr("Friday"), Role: messagev1.Role_ROLE_ASSISTANT, Content: blocks(
			&messagev1.ContentBlock{Block: &messagev1.ContentBlock_Text{
				Text: &messagev1.TextBlock{Text: "Let me check."}}},
			&messagev1.ContentBlock{Block: &messagev1.ContentBlock_ToolUse{
				ToolUse: &messagev1.ToolUseBlock{Id: "call_1", Name: "get_weather", InputJson: string(input)}}},
		)},
		{Name: ptr("system"), Role: messagev1.Role_ROLE_SYSTEM, Content: blocks(
			&messagev1.ContentBlock{Block: &messagev1.ContentBlock_ToolResult{
				ToolResult: &messagev1.ToolResultBlock{Id: "call_1", Name: "get_weather",
					Output: &messagev1.ToolResultBlock_Text{Text: "Sunny, 21 °C"}}}},
		)},
	}
}

// decode parses provider JSON, keeping numbers exact.
func decode(text string) any {
	var value any
	decoder := json.NewDecoder(strings.NewReader(text))
	decoder.UseNumber()
	if err := decoder.Decode(&value); err != nil {
		log.Fatalf("invalid JSON from the server: %v", err)
	}
	return value
}

// summary holds the parts of a parse result the examples compare.
func summary(result *formatterv1.ParseResult) map[string]any {
	text := ""
	toolCalls := []any{}
	for _, block := range result.GetMsg().GetBlocks().GetItems() {
		if t := block.GetText(); t != nil {
			text += t.Text
		}
		if call := block.GetToolUse(); call != nil {
			toolCalls = append(toolCalls, map[string]any{
				"id": call.Id, "name": call.Name, "input": decode(call.InputJson)})
		}
	}
	usage := map[string]int64{}
	if u := result.GetUsage(); u != nil {
		if u.InputTokens != nil {
			usage["input_tokens"] = *u.InputTokens
		}
		if u.OutputTokens != nil {
			usage["output_tokens"] = *u.OutputTokens
		}
	}
	return map[string]any{"text": text, "tool_calls": toolCalls,
		"finish_reason": result.GetFinishReason().String(), "usage": usage}
}

func parseStream(ctx context.Context, client formatterv1.FormatterServiceClient,
	mode formatterv1.StreamMode) map[string]any {
	stream, err := client.ParseStream(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for i, chunk := range openaiChunks {
		request := &formatterv1.ParseStreamRequest{
			Input: &formatterv1.ParseStreamRequest_ChunkJson{ChunkJson: chunk}}
		if i == 0 { // the first request names the provider and the stream mode
			request.Provider, request.StreamMode = formatterv1.Provider_PROVIDER_OPENAI, mode
		}
		if err := stream.Send(request); err != nil {
			log.Fatal(err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		log.Fatal(err)
	}
	responses, deltasText := 0, ""
	var first, last *formatterv1.ParseResult
	for {
		reply, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			log.Fatal(err)
		}
		responses++
		if first == nil {
			first = reply.Result
		}
		for _, delta := range reply.Result.GetDeltas() {
			deltasText += delta.GetBlock().GetText().GetText()
		}
		if reply.Done {
			last = reply.Result
		}
	}
	streamed := summary(last)
	streamed["responses"], streamed["deltas_text"] = responses, deltasText
	streamed["first_text"] = summary(first)["text"] // "" in DELTAS mode: the first reply carries no message
	return streamed
}

// The hub topic the conversation is published to.
const topic = "examples/weather"

// oneofName is the schema's name of the field set in a oneof (e.g. "tool_use"), "" for none.
func oneofName(message proto.Message, oneof protoreflect.Name) string {
	reflected := message.ProtoReflect()
	if field := reflected.WhichOneof(reflected.Descriptor().Oneofs().ByName(oneof)); field != nil {
		return string(field.Name())
	}
	return ""
}

// blockKinds lists a message's block kinds by their field names in the schema.
func blockKinds(msg *messagev1.Msg) []string {
	kinds := []string{}
	for _, block := range msg.GetBlocks().GetItems() {
		kinds = append(kinds, oneofName(block, "block"))
	}
	return kinds
}

// hubRoundTrip publishes the conversation to the topic and reads it back: the question
// first, then a subscription after its offset (a gap-free start over any protocol), then
// the other messages, which reach the subscription with the offsets Publish returned.
func hubRoundTrip(ctx context.Context, conn *grpc.ClientConn) map[string]any {
	hub := agentv1.NewHubServiceClient(conn)
	msgs := conversation()
	question, rest := msgs[0], msgs[1:]
	first, err := hub.Publish(ctx, &agentv1.PublishRequest{Topic: topic, Msg: question})
	if err != nil {
		log.Fatal(err)
	}
	subscribed, unsubscribe := context.WithCancel(ctx) // a subscription ends when cancelled
	defer unsubscribe()
	stream, err := hub.Subscribe(subscribed, &agentv1.SubscribeRequest{Topic: topic, After: first.Offset})
	if err != nil {
		log.Fatal(err)
	}
	offsets := []string{}
	for _, msg := range rest {
		reply, err := hub.Publish(ctx, &agentv1.PublishRequest{Topic: topic, Msg: msg})
		if err != nil {
			log.Fatal(err)
		}
		offsets = append(offsets, reply.Offset)
	}
	received := []any{}
	for i, msg := range rest {
		event, err := stream.Recv()
		if err != nil {
			log.Fatal(err)
		}
		received = append(received, map[string]any{
			"offset_matches": event.Offset == offsets[i], "msg_matches": proto.Equal(event.Msg, msg),
			"name": event.Msg.GetName(), "role": event.Msg.GetRole().String(), "blocks": blockKinds(event.Msg)})
	}
	return map[string]any{"received": received}
}

// msgText is a message's text: its text, or its text blocks joined.
func msgText(msg *messagev1.Msg) string {
	text := msg.GetText()
	for _, block := range msg.GetBlocks().GetItems() {
		text += block.GetText().GetText()
	}
	return text
}

// confirm allows every tool call the agent asks about, as it asked for it.
func confirm(asked *agentv1.RequireUserConfirmEvent) *agentv1.UserConfirmResultEvent {
	results := []*agentv1.ConfirmResult{}
	for _, call := range asked.ToolCalls {
		results = append(results, &agentv1.ConfirmResult{Confirmed: true, ToolCall: call})
	}
	return &agentv1.UserConfirmResultEvent{ReplyId: asked.ReplyId, ConfirmResults: results}
}

// How a reply is taken up after its connection dropped: at most this many Resume calls in a
// row ($AGENTSCOPE_RESUME_ATTEMPTS, default 5, as the Python client's), the first after
// 0.1 s, each wait twice the last, at most 2 s.
const (
	defaultResumeAttempts = 5
	firstWait, lastWait   = 100 * time.Millisecond, 2 * time.Second
)

func resumeAttempts() int {
	if n, err := strconv.Atoi(os.Getenv("AGENTSCOPE_RESUME_ATTEMPTS")); err == nil && n >= 0 {
		return n
	}
	return defaultResumeAttempts
}

// place is where a reply stands for its caller: its id, its session and the last cursor read.
// The rest of a reply after an answer has the same id, and its log goes on after that cursor.
type place struct{ session, replyID, cursor string }

// dropped says whether err is a call cut off, after which the reply, kept running on the
// server, can be taken up: UNAVAILABLE (a dropped connection) or CANCELLED (a server stopped
// with the call running) with no details (a status the server sends, such as a failed reply's,
// carries them), once the reply's id and a cursor are known.
func (at *place) dropped(err error) bool {
	st := status.Convert(err)
	cut := st.Code() == codes.Unavailable || st.Code() == codes.Canceled
	return cut && len(st.Proto().GetDetails()) == 0 &&
		at.replyID != "" && at.cursor != ""
}

// reply sends request and hands each response of the reply to handle, in order and once:
// when the connection drops mid-reply it takes the reply up after the last cursor (Resume),
// with a growing wait, until the reply ends or the attempts run out (then it exits).
func reply(ctx context.Context, agent agentv1.AgentServiceClient, request *agentv1.ReplyRequest,
	at *place, handle func(*agentv1.ReplyResponse)) {
	attempts, tries := resumeAttempts(), 0
	request.KeepRunning = attempts > 0 // the reply goes on while this client is away
	stream, err := agent.Reply(ctx, request)
	for {
		var response *agentv1.ReplyResponse
		if err == nil {
			if response, err = stream.Recv(); errors.Is(err, io.EOF) {
				return
			}
		}
		if err == nil {
			tries = 0
			if start := response.GetEvent().GetReplyStart(); start != nil {
				at.session, at.replyID = start.SessionId, start.ReplyId
			}
			if response.Cursor != "" {
				at.cursor = response.Cursor
			}
			handle(response)
			continue
		}
		if !at.dropped(err) { // a status the server sent; a drop, even after the end, is taken up
			log.Fatal(err)
		}
		if tries++; tries > attempts {
			log.Fatalf("the connection dropped during reply %q and %d attempts to take it up failed (last: %v)",
				at.replyID, attempts, status.Convert(err).Message())
		}
		wait := firstWait << (tries - 1)
		if wait <= 0 || wait > lastWait { // past lastWait (or past int64, for a huge attempts)
			wait = lastWait
		}
		time.Sleep(wait)
		fmt.Fprintf(os.Stderr, "resuming reply %s after cursor %s (attempt %d of %d)\n", at.replyID, at.cursor, tries, attempts)
		stream, err = agent.Resume(ctx, &agentv1.ResumeRequest{SessionId: at.session, ReplyId: at.replyID, After: at.cursor})
	}
}

// askAgent asks the agent the conversation's question; while its reply stops to ask for a
// confirmation, it answers (in the reply's session) and goes on until the reply ends.
func askAgent(ctx context.Context, target string) map[string]any {
	conn, err := grpc.Dial(target, grpc.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	agent := agentv1.NewAgentServiceClient(conn)
	replies, asked := []any{}, []any{}
	endedIn := ""
	at := &place{}
	var msg *messagev1.Msg
	request := &agentv1.ReplyRequest{Msgs: conversation()[:1]}
	for request != nil {
		next := request
		request = nil
		events, text, toolResult := []string{}, "", ""
		reply(ctx, agent, next, at, func(response *agentv1.ReplyResponse) {
			if response.Done {
				msg = response.Msg // the reply so far
			}
			kind := strings.ToUpper(oneofName(response.GetEvent(), "event"))
			if kind == "" {
				return // none, or an event kind newer than this schema
			}
			fmt.Fprintln(os.Stderr, kind) // as it arrives
			events = append(events, kind)
			switch event := response.Event.Event.(type) {
			case *agentv1.AgentEvent_TextBlockDelta:
				text += event.TextBlockDelta.Delta
			case *agentv1.AgentEvent_ToolResultTextDelta:
				toolResult += event.ToolResultTextDelta.Delta
			case *agentv1.AgentEvent_RequireUserConfirm:
				for _, call := range event.RequireUserConfirm.ToolCalls {
					asked = append(asked, map[string]any{"name": call.Name, "input": decode(call.InputJson)})
				}
				// The answer goes on with the same reply, in the session that asked.
				request = &agentv1.ReplyRequest{SessionId: at.session, Answer: &agentv1.ReplyRequest_UserConfirmResult{
					UserConfirmResult: confirm(event.RequireUserConfirm)}}
			case *agentv1.AgentEvent_ReplyEnd:
				endedIn = event.ReplyEnd.SessionId
			}
		})
		replies = append(replies, map[string]any{"events": events, "text": text, "tool_result": toolResult})
	}
	return map[string]any{
		"replies": replies, "asked": asked, "same_session": at.session != "" && endedIn == at.session,
		"reply": map[string]any{"name": msg.GetName(), "role": msg.GetRole().String(), "text": msgText(msg),
			"finished_reason": msg.GetFinishedReason().String()},
	}
}

func main() {
	target, agentTarget := os.Getenv("AGENTSCOPE_TARGET"), os.Getenv("AGENTSCOPE_AGENT_TARGET")
	if len(os.Args) > 1 {
		target = os.Args[1]
	} else if target == "" {
		target = "127.0.0.1:50051"
	}
	if len(os.Args) > 2 {
		agentTarget = os.Args[2]
	}
	conn, err := grpc.Dial(target, grpc.WithInsecure()) // plaintext, as Debian's grpc-go 1.33 spells it
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := formatterv1.NewFormatterServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string]any{}

	// Format: the reply's body_json is the provider's request body as JSON.
	bodies := map[string]any{}
	providers := map[string]formatterv1.Provider{"openai": formatterv1.Provider_PROVIDER_OPENAI,
		"anthropic": formatterv1.Provider_PROVIDER_ANTHROPIC, "gemini": formatterv1.Provider_PROVIDER_GEMINI}
	for name, provider := range providers {
		reply, err := client.Format(ctx, &formatterv1.FormatRequest{Provider: provider,
			Messages: conversation(), ToolsJson: tools, ToolChoice: "auto"})
		if err != nil {
			log.Fatal(err)
		}
		bodies[name] = decode(reply.BodyJson)
	}
	out["format"] = bodies

	parsed, err := client.Parse(ctx, &formatterv1.ParseRequest{
		Provider: formatterv1.Provider_PROVIDER_OPENAI, ResponseJson: openaiResponse})
	if err != nil {
		log.Fatal(err)
	}
	out["parse"] = summary(parsed.Result)

	// ParseStream: every reply lists what changed (deltas); in CUMULATIVE mode it also
	// carries the result so far, in DELTAS mode only the last (done) reply carries the result.
	out["stream"] = parseStream(ctx, client, formatterv1.StreamMode_STREAM_MODE_CUMULATIVE)
	out["stream_deltas"] = parseStream(ctx, client, formatterv1.StreamMode_STREAM_MODE_DELTAS)

	// A tool_choice naming no given tool is INVALID_ARGUMENT with a google.rpc.BadRequest detail.
	_, err = client.Format(ctx, &formatterv1.FormatRequest{Provider: formatterv1.Provider_PROVIDER_OPENAI,
		Messages: conversation(), ToolsJson: tools, ToolChoice: "get_time"})
	if st := status.Convert(err); st.Code() == codes.InvalidArgument {
		for _, detail := range st.Details() {
			if badRequest, ok := detail.(*errdetails.BadRequest); ok {
				violation := badRequest.FieldViolations[0]
				out["error"] = map[string]string{"field": violation.Field, "description": violation.Description}
			}
		}
	} else {
		log.Fatalf("expected INVALID_ARGUMENT, got %v", err)
	}

	out["hub"] = hubRoundTrip(ctx, conn)
	if agentTarget != "" {
		out["agent"] = askAgent(ctx, agentTarget)
	}

	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(out); err != nil {
		log.Fatal(err)
	}
}
