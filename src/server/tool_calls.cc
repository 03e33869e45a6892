#include "server/tool_calls.h"

#include <random>
#include <utility>

#include "server/tool_call_formats.h"

namespace weft::server {

using tool_internal::BlockResult;
using tool_internal::IsJsonSpace;
using Kind = OutputEvent::Kind;

const char* ToolCallFormatName(ToolCallFormat f) {
  static const char* const kNames[] = {"generic",         "hermes",          "llama3",
                                       "mistral",         "functionary_v3.1", "functionary_v3.2",
                                       "firefunction_v2", "command_r7b",     "deepseek_r1"};
  return kNames[static_cast<size_t>(f)];
}

std::vector<ToolCallFormat> AllToolCallFormats() {
  std::vector<ToolCallFormat> out;
  for (int f = 0; f <= static_cast<int>(ToolCallFormat::kDeepSeekR1); ++f) {
    out.push_back(static_cast<ToolCallFormat>(f));
  }
  return out;
}

ChatFormat DetectChatFormat(std::string_view t) {
  auto has = [t](std::string_view m) { return t.find(m) != std::string_view::npos; };
  ChatFormat f;
  if (has("<｜tool▁calls▁begin｜>")) {
    f.tools = ToolCallFormat::kDeepSeekR1;
  } else if (has("<|START_ACTION|>")) {
    f.tools = ToolCallFormat::kCommandR7b;
  } else if (has("<tool_call>")) {
    f.tools = ToolCallFormat::kHermes;
  } else if (has(">>>all")) {
    f.tools = ToolCallFormat::kFunctionaryV32;
  } else if (has(" functools[")) {
    f.tools = ToolCallFormat::kFirefunction;
  } else if (has("<|start_header_id|>") && has("<function=")) {
    f.tools = ToolCallFormat::kFunctionaryV31;
  } else if (has("<|start_header_id|>ipython<|end_header_id|>")) {
    f.tools = ToolCallFormat::kLlama3;
  } else if (has("[TOOL_CALLS]")) {
    f.tools = ToolCallFormat::kMistral;
  }
  f.system_role = !has("System role not supported");  // Gemma's
  if (f.tools == ToolCallFormat::kCommandR7b) {
    f.think_open = "<|START_THINKING|>";
    f.think_close = "<|END_THINKING|>";
  } else if (has("<think>")) {
    f.think_open = "<think>";
    f.think_close = "</think>";
  }
  return f;
}

std::string NewToolCallId(ToolCallFormat f) {
  static constexpr char kAlnum[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlnum) - 2);
  const bool mistral = f == ToolCallFormat::kMistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[pick(rng)];
  return id;
}

namespace {

// The length of the longest proper prefix of one of `marks` that ends `s`.
size_t PartialMarkerAtEnd(std::string_view s, const std::vector<std::string>& marks) {
  size_t hold = 0;
  for (const std::string& m : marks) {
    for (size_t k = std::min(m.size() - 1, s.size()); k > hold; --k) {
      if (s.substr(s.size() - k) == std::string_view(m).substr(0, k)) {
        hold = k;
        break;
      }
    }
  }
  return hold;
}

size_t LeadingSpace(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsJsonSpace(s[i])) ++i;
  return i;
}

}  // namespace

ToolCallStreamParser::ToolCallStreamParser(ParserOptions options) : opt_(std::move(options)) {
  if (!opt_.new_id) {
    const ToolCallFormat f = opt_.format;
    opt_.new_id = [f] { return NewToolCallId(f); };
  }
  if (opt_.think_open.empty() || opt_.think_close.empty()) {
    mode_ = Mode::kContent;
  } else if (opt_.start_in_reasoning) {
    mode_ = Mode::kReasoning;
  }
}

std::vector<OutputEvent> ToolCallStreamParser::Push(std::string_view delta) {
  buf_.append(delta);
  Run(/*at_end=*/false);
  return std::exchange(out_, {});
}

std::vector<OutputEvent> ToolCallStreamParser::Finish() {
  Run(/*at_end=*/true);
  if (!ends_with_call_) Emit(Kind::kContent, std::exchange(held_ws_, {}));
  return std::exchange(out_, {});
}

void ToolCallStreamParser::Run(bool at_end) {
  while (Step(at_end)) {
  }
}

bool ToolCallStreamParser::Step(bool at_end) {
  switch (mode_) {
    case Mode::kStart:
      return StepStart(at_end);
    case Mode::kReasoning:
      return StepReasoning(at_end);
    case Mode::kContent:
      return StepContent(at_end);
    case Mode::kFallback:
      EmitContent(buf_);
      buf_.clear();
      return false;
    case Mode::kResponse:
      return StepResponse(at_end);
    case Mode::kResponseEnd:
      return StepResponseEnd(at_end);
  }
  return false;
}

bool ToolCallStreamParser::StepResponse(bool at_end) {
  std::string text;
  bool closed = false;
  buf_.erase(0, tool_internal::DecodeJsonString(buf_, &text, &closed));
  EmitContent(text);
  if (closed) mode_ = Mode::kResponseEnd;
  if (!closed && at_end) buf_.clear();  // cut short: an unfinished escape
  return closed;
}

bool ToolCallStreamParser::StepResponseEnd(bool at_end) {
  const size_t skip = LeadingSpace(buf_);
  if (skip == buf_.size() && !at_end) return false;
  if (skip < buf_.size() && buf_[skip] == '}') buf_.erase(0, skip + 1);
  mode_ = Mode::kContent;
  drop_ws_ = true;
  return true;
}

bool ToolCallStreamParser::Unparsed(bool at_end, std::string_view block, bool unmarked) {
  const bool cut_short =
      at_end && tool_internal::ParseBlock(opt_.format, block, /*at_end=*/false, unmarked).status ==
                    BlockResult::Status::kIncomplete;
  if (cut_short) {
    buf_.clear();
    held_ws_.clear();
    return false;
  }
  mode_ = Mode::kFallback;
  return true;
}

// Reasoning opens only at the start of the output.
bool ToolCallStreamParser::StepStart(bool at_end) {
  const std::string_view rest = std::string_view(buf_).substr(LeadingSpace(buf_));
  const std::string_view open = opt_.think_open;
  if (rest.starts_with(open)) {
    buf_.erase(0, buf_.size() - rest.size() + open.size());
    mode_ = Mode::kReasoning;
    return true;
  }
  if (!at_end && open.starts_with(rest)) return false;  // undecided
  mode_ = Mode::kContent;
  return true;
}

bool ToolCallStreamParser::StepReasoning(bool at_end) {
  const size_t pos = buf_.find(opt_.think_close);
  if (pos != std::string::npos) {
    Emit(Kind::kReasoning, buf_.substr(0, pos));
    buf_.erase(0, pos + opt_.think_close.size());
    mode_ = Mode::kContent;
    drop_ws_ = true;
    return true;
  }
  const size_t hold = at_end ? 0 : PartialMarkerAtEnd(buf_, {opt_.think_close});
  Emit(Kind::kReasoning, buf_.substr(0, buf_.size() - hold));
  buf_.erase(0, buf_.size() - hold);
  return false;
}

void ToolCallStreamParser::TakeBlock(size_t skip, BlockResult block) {
  buf_.erase(0, skip + block.consumed);
  first_block_ = false;
  call_position_ = true;
  if (!block.content.empty()) EmitContent(block.content);
  for (ParsedToolCall& c : block.calls) {
    const int index = next_index_++;
    out_.push_back({Kind::kCallStart, "", index, opt_.new_id(), std::move(c.name)});
    out_.push_back({Kind::kArguments, std::move(c.arguments), index, "", ""});
    out_.push_back({Kind::kCallEnd, "", index, "", ""});
  }
  if (!block.calls.empty()) drop_ws_ = ends_with_call_ = true;
}

bool ToolCallStreamParser::Deferred(bool at_end) const {
  return !at_end && buf_.size() < retry_at_;
}

void ToolCallStreamParser::Defer() {
  retry_at_ = buf_.size() < kEagerBlockBytes ? 0 : buf_.size() + buf_.size() / 4;
}

bool ToolCallStreamParser::StepUnmarked(bool at_end) {
  const size_t skip = LeadingSpace(buf_);
  if ((skip == buf_.size() && !at_end) || Deferred(at_end)) return false;
  const std::string_view rest = std::string_view(buf_).substr(skip);
  if (opt_.format == ToolCallFormat::kGeneric) {
    const size_t n = tool_internal::GenericResponsePrefix(rest);
    if (n == 0 && !at_end) return false;  // undecided
    if (n != 0 && n != std::string_view::npos) {
      buf_.erase(0, skip + n);
      first_block_ = false;
      mode_ = Mode::kResponse;
      return true;
    }
  }
  BlockResult b = tool_internal::ParseBlock(opt_.format, rest, at_end, /*unmarked=*/true);
  retry_at_ = 0;
  switch (b.status) {
    case BlockResult::Status::kIncomplete:
      Defer();
      return false;
    case BlockResult::Status::kNotHere:
      call_position_ = false;
      return true;
    case BlockResult::Status::kInvalid:
      return Unparsed(at_end, rest, /*unmarked=*/true);
    case BlockResult::Status::kDone:
      TakeBlock(skip, std::move(b));
      return true;
  }
  return false;
}

bool ToolCallStreamParser::StepContent(bool at_end) {
  if (!opt_.parse_tools) {
    EmitContent(buf_);
    buf_.clear();
    return false;
  }
  if (call_position_ && tool_internal::HasUnmarkedStart(opt_.format, first_block_)) {
    return StepUnmarked(at_end);
  }
  if (Deferred(at_end)) return false;  // buf_ starts with an unfinished block
  retry_at_ = 0;
  const std::vector<std::string>& marks = tool_internal::Markers(opt_.format);
  size_t pos = std::string::npos;
  for (const std::string& m : marks) pos = std::min(pos, buf_.find(m));
  if (pos == std::string::npos) {
    const size_t hold = at_end ? 0 : PartialMarkerAtEnd(buf_, marks);
    EmitContent(std::string_view(buf_).substr(0, buf_.size() - hold));
    buf_.erase(0, buf_.size() - hold);
    return false;
  }
  EmitContent(std::string_view(buf_).substr(0, pos));
  buf_.erase(0, pos);
  BlockResult b = tool_internal::ParseBlock(opt_.format, buf_, at_end, /*unmarked=*/false);
  if (b.status == BlockResult::Status::kIncomplete) {
    Defer();
    return false;
  }
  if (b.status != BlockResult::Status::kDone) return Unparsed(at_end, buf_, /*unmarked=*/false);
  TakeBlock(0, std::move(b));
  return true;
}

// Content keeps its text, except whitespace next to a tool call: trailing
// whitespace waits in held_ws_ until more content comes (so text, call,
// text keeps the whitespace before the call), and whitespace after a call
// or at the end after one is dropped.
void ToolCallStreamParser::EmitContent(std::string_view text) {
  if (drop_ws_) {
    const size_t skip = LeadingSpace(text);
    text.remove_prefix(skip);
    if (text.empty()) return;
    drop_ws_ = false;
  }
  size_t body = text.size();
  while (body > 0 && IsJsonSpace(text[body - 1])) --body;
  if (body == 0) {
    held_ws_.append(text);
    return;
  }
  call_position_ = ends_with_call_ = false;
  Emit(Kind::kContent, std::exchange(held_ws_, {}) + std::string(text.substr(0, body)));
  held_ws_.assign(text.substr(body));
}

void ToolCallStreamParser::Emit(Kind kind, std::string text) {
  if (text.empty()) return;
  OutputEvent e;
  e.kind = kind;
  e.text = std::move(text);
  out_.push_back(std::move(e));
}

void ApplyEvents(const std::vector<OutputEvent>& events, ParsedOutput* out) {
  for (const OutputEvent& e : events) {
    switch (e.kind) {
      case Kind::kContent:
        out->content += e.text;
        break;
      case Kind::kReasoning:
        out->reasoning += e.text;
        break;
      case Kind::kCallStart:
        out->calls.push_back({e.id, e.name, ""});
        break;
      case Kind::kArguments:
        if (!out->calls.empty()) out->calls.back().arguments += e.text;
        break;
      case Kind::kCallEnd:
        break;
    }
  }
}

ParsedOutput ParseToolCalls(const ParserOptions& options, std::string_view text) {
  ToolCallStreamParser p(options);
  ParsedOutput out;
  ApplyEvents(p.Push(text), &out);
  ApplyEvents(p.Finish(), &out);
  return out;
}

}  // namespace weft::server
