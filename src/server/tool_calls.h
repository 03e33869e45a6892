// Tool calls and reasoning in generated chat text: which format a chat
// template's model writes (DetectChatFormat), and a parser that splits the
// output into content, reasoning and tool calls, incrementally
// (ToolCallStreamParser) or at once (ParseToolCalls). Plain structs, no
// JSON in the interface: any route (chat completions, and later Messages
// or Responses) turns the events into its own wire shape.
//
//   ParserOptions opt;
//   opt.format = DetectChatFormat(template_text).tools;
//   ToolCallStreamParser p(opt);
//   for (...) for (const OutputEvent& e : p.Push(delta)) Send(e);
//   for (const OutputEvent& e : p.Finish()) Send(e);
//
// Content never carries tool-call markup: text that could be the start of
// a marker is held back until decided. A call is emitted once its text is
// complete and parsed (start, then its whole arguments, then end); a call
// whose JSON is malformed turns the rest of the output into content, and a
// call cut short by the end of the output is dropped. The generic format's
// {"response": "..."} streams its string as content. The
// events do not depend on how the text was split into deltas, so the
// stream's result equals ParseToolCalls on the whole text.
//
// Thread safety: DetectChatFormat and ParseToolCalls are pure; a
// ToolCallStreamParser is used by one thread at a time.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::server {

namespace tool_internal {
struct BlockResult;
}  // namespace tool_internal

// How a model writes tool calls (after llama.cpp's common/chat.cpp).
enum class ToolCallFormat {
  kGeneric,         // no template support: {"tool_calls": [...]} or
                    // {"response": "..."} (llama-server's generic format)
  kHermes,          // <tool_call>{"name", "arguments"}</tool_call> (Qwen 2.5)
  kLlama3,          // {"name", "parameters"}; <|python_tag|>
  kMistral,         // [TOOL_CALLS][{"name", "arguments"}, ...]
  kFunctionaryV31,  // <function=name>{...}</function>; <|python_tag|>
  kFunctionaryV32,  // name\n{...}>>>name\n{...} (after the prompt's >>>)
  kFirefunction,    // functools[{"name", "arguments"}, ...]
  kCommandR7b,      // <|START_ACTION|>[{"tool_name", "parameters"}]<|END_ACTION|>
  kDeepSeekR1,      // <｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜>
};

// "generic", "hermes", "llama3", ... (for logs and /v1/effective-config).
const char* ToolCallFormatName(ToolCallFormat f);
// Every format, in enum order.
std::vector<ToolCallFormat> AllToolCallFormats();

// What a chat template's model writes.
struct ChatFormat {
  ToolCallFormat tools = ToolCallFormat::kGeneric;
  std::string think_open;   // opens reasoning ("<think>"); empty: none
  std::string think_close;  // ends it ("</think>")
  bool system_role = true;  // false: the template refuses system messages
};

// Chooses by marker strings in the template's source.
ChatFormat DetectChatFormat(std::string_view template_text);

// A new call id: "call_" and 24 letters or digits; Mistral's templates
// require exactly 9 letters or digits.
std::string NewToolCallId(ToolCallFormat f);

struct ParserOptions {
  ToolCallFormat format = ToolCallFormat::kGeneric;
  bool parse_tools = true;          // false: no tool calls, only content
  std::string think_open;           // ChatFormat's; empty: no reasoning
  std::string think_close;
  bool start_in_reasoning = false;  // the prompt ended inside think_open
  std::function<std::string()> new_id;  // null: NewToolCallId(format)
};

struct ParsedToolCall {
  std::string id;         // "call_..."
  std::string name;       // function name
  std::string arguments;  // a JSON object's text (compact)
};

struct ParsedOutput {
  std::string content;
  std::string reasoning;
  std::vector<ParsedToolCall> calls;
};

struct OutputEvent {
  enum class Kind { kContent, kReasoning, kCallStart, kArguments, kCallEnd };
  Kind kind = Kind::kContent;
  std::string text;  // kContent, kReasoning, kArguments: the new text
  int index = 0;     // kCall*, kArguments: the call's index
  std::string id;    // kCallStart
  std::string name;  // kCallStart
};

class ToolCallStreamParser {
 public:
  static constexpr size_t kEagerBlockBytes = 4096;

  explicit ToolCallStreamParser(ParserOptions options);

  // Events that `delta` decides (maybe none).
  std::vector<OutputEvent> Push(std::string_view delta);
  // End of output: everything still held back.
  std::vector<OutputEvent> Finish();
  // Calls emitted so far.
  int num_calls() const { return next_index_; }

 private:
  // kResponse: inside the generic format's {"response": "..."} string,
  // whose characters are content; kResponseEnd: its closing brace.
  enum class Mode { kStart, kReasoning, kContent, kFallback, kResponse, kResponseEnd };
  // Decides as much of buf_ as it can.
  void Run(bool at_end);
  // One decision; false when it needs more input.
  bool Step(bool at_end);
  bool StepStart(bool at_end);
  bool StepReasoning(bool at_end);
  bool StepContent(bool at_end);
  bool StepResponse(bool at_end);
  bool StepResponseEnd(bool at_end);
  // A block without a marker at a call position.
  bool StepUnmarked(bool at_end);
  // After a block that does not parse: drops it if it was cut short (the
  // output ended inside it), else makes the rest content.
  bool Unparsed(bool at_end, std::string_view block, bool unmarked);
  // Emits a parsed block's calls (and content); `skip` bytes of whitespace
  // came before it.
  void TakeBlock(size_t skip, tool_internal::BlockResult block);
  // An unfinished block at the start of buf_ is parsed again only once
  // the text grew by a quarter past kEagerBlockBytes (or at the end): a
  // long call costs linear time, not quadratic. The result is the same.
  bool Deferred(bool at_end) const;
  void Defer();
  void EmitContent(std::string_view text);
  void Emit(OutputEvent::Kind kind, std::string text);

  ParserOptions opt_;
  Mode mode_ = Mode::kStart;
  std::string buf_;              // text not yet decided
  std::string held_ws_;          // content's trailing whitespace
  bool drop_ws_ = false;         // drop whitespace before the next content
  bool ends_with_call_ = false;  // no content since the last call
  bool call_position_ = true;    // an unmarked call may start here
  bool first_block_ = true;      // nothing has been parsed as a block yet
  int next_index_ = 0;
  size_t retry_at_ = 0;          // Defer(): parse again at this size
  std::vector<OutputEvent> out_;
};

// The whole output at once: the stream parser over `text`.
ParsedOutput ParseToolCalls(const ParserOptions& options, std::string_view text);
// Folds events into a ParsedOutput (appending to *out).
void ApplyEvents(const std::vector<OutputEvent>& events, ParsedOutput* out);

}  // namespace weft::server
