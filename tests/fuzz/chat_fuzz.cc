// libFuzzer target: the chat template interpreter (src/chat/) on arbitrary
// template source and an arbitrary JSON context.
//
// Input layout: template source, then optionally a NUL byte and a JSON
// context. A context object is rendered with Template::Render; when it has
// "messages", RenderChat runs too (with its "tools" and
// "add_generation_prompt"). Without a usable context a small default chat
// is used. Resource limits are tightened (fewer loop iterations, smaller
// output) so that each input stays fast.
//
// Checked properties (a failed CHECK aborts = a finding):
//   * Parse and Render never crash, hang or overflow the stack;
//   * a parse failure is InvalidArgument; a render failure is
//     InvalidArgument, ResourceExhausted, or the template's own
//     raise_exception; messages are non-empty;
//   * rendering is deterministic (same template + context, same output).
//
// The same entry point (weft::fuzz::ChatFuzzOne) is replayed over the
// committed corpus by tests/reliability/fuzz_replay_test.cc.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/template.h"
#include "chat/value.h"
#include "util/check.h"

namespace weft::fuzz {

namespace {

using chat::Dict;
using chat::RenderConfig;
using chat::Template;
using chat::Value;
using ojson = nlohmann::ordered_json;

// Deeper JSON is cut off (becomes None): the interpreter bounds the values
// a template builds, and the server bounds what it hands over.
constexpr int kMaxJsonDepth = 64;

Value FromJson(const ojson& j, int depth) {
  switch (j.type()) {
    case ojson::value_t::null:
      return Value::None();
    case ojson::value_t::boolean:
      return Value(j.get<bool>());
    case ojson::value_t::number_integer:
      return Value(j.get<int64_t>());
    case ojson::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case ojson::value_t::number_float:
      return Value(j.get<double>());
    case ojson::value_t::string:
      return Value(j.get<std::string>());
    case ojson::value_t::array: {
      if (depth >= kMaxJsonDepth) return Value::None();
      Value::List items;
      for (const auto& x : j) items.push_back(FromJson(x, depth + 1));
      return Value::MakeList(std::move(items));
    }
    case ojson::value_t::object: {
      if (depth >= kMaxJsonDepth) return Value::None();
      Dict d;
      for (const auto& [k, v] : j.items()) d.Set(Value(k), FromJson(v, depth + 1));
      return Value::MakeDict(std::move(d));
    }
    default:
      return Value::None();
  }
}

const ojson& DefaultContext() {
  static const ojson* ctx = new ojson(ojson::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Hi <b>there</b>"},
      {"role": "assistant", "content": "Hello.", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "f", "arguments": {"x": 1}}}]},
      {"role": "tool", "content": "42", "tool_call_id": "call_1"},
      {"role": "user", "content": "Thanks"}],
    "tools": [{"type": "function", "function": {"name": "f",
      "description": "d", "parameters": {"type": "object",
      "properties": {"x": {"type": "integer"}}}}}],
    "add_generation_prompt": true,
    "bos_token": "<s>", "eos_token": "</s>"})"));
  return *ctx;
}

RenderConfig FuzzConfig() {
  RenderConfig c;
  c.max_loop_iterations = 20000;
  c.max_output_bytes = size_t{1} << 20;
  c.strftime_now = [](const std::string&) { return std::string("26 Jul 2024"); };
  return c;
}

void CheckRenderStatus(const Status& s) {
  CHECK(s.code() == StatusCode::kInvalidArgument ||
        s.code() == StatusCode::kResourceExhausted || chat::IsRaisedException(s))
      << s.ToString();
}

}  // namespace

int ChatFuzzOne(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);
  ojson ctx_json = DefaultContext();
  if (nul != std::string_view::npos) {
    const std::string_view text = input.substr(nul + 1);
    ojson parsed = ojson::parse(text.begin(), text.end(), nullptr, false);
    if (!parsed.is_discarded() && parsed.is_object()) ctx_json = std::move(parsed);
  }

  auto tmpl = Template::Parse(source);
  if (!tmpl.ok()) {
    CHECK(tmpl.status().code() == StatusCode::kInvalidArgument)
        << tmpl.status().ToString();
    CHECK(!tmpl.status().message().empty());
    return 0;
  }
  const RenderConfig config = FuzzConfig();
  const Value context = FromJson(ctx_json, 0);
  auto out = tmpl->Render(context, config);
  if (out.ok()) {
    CHECK_LE(out->size(), config.max_output_bytes);
    auto again = tmpl->Render(context, config);
    CHECK(again.ok() && *again == *out) << "render is not deterministic";
  } else {
    CheckRenderStatus(out.status());
  }

  if (auto m = ctx_json.find("messages"); m != ctx_json.end()) {
    Value tools;
    if (auto t = ctx_json.find("tools"); t != ctx_json.end()) tools = FromJson(*t, 1);
    bool add_gen = true;
    if (auto a = ctx_json.find("add_generation_prompt");
        a != ctx_json.end() && a->is_boolean()) {
      add_gen = a->get<bool>();
    }
    auto chat_out = chat::RenderChat(*tmpl, FromJson(*m, 1), "<s>", "</s>", add_gen,
                                     tools, Value(), config);
    if (!chat_out.ok()) CheckRenderStatus(chat_out.status());
  }
  return 0;
}

}  // namespace weft::fuzz

#ifndef WEFT_FUZZ_REPLAY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return weft::fuzz::ChatFuzzOne(data, size);
}
#endif
