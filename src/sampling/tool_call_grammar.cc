#include "sampling/tool_call_grammar.h"

#include <utility>

#include "sampling/grammar_cache.h"

namespace weft::sampling {
namespace {

// Most calls a grammar may allow (each is a copy of the call rule).
constexpr int kMaxCalls = 64;

// The cache key: every field, length-prefixed so that no two specs collide.
std::string Key(const ToolCallGrammarSpec& spec) {
  std::string key = "tool_calls:";
  key.append(std::to_string(spec.max_calls));
  auto add = [&key](const std::string& s) {
    key.push_back(':');
    key.append(std::to_string(s.size()));
    key.push_back(':');
    key.append(s);
  };
  add(spec.begin);
  add(spec.separator);
  add(spec.end);
  for (const FramedJson& c : spec.calls) {
    add(c.prefix);
    add(c.schema);
    add(c.suffix);
  }
  return key;
}

StatusOr<std::shared_ptr<const Grammar>> Compile(const ToolCallGrammarSpec& spec) {
  GrammarBuilder b;
  GrammarAlts alts;
  for (const FramedJson& c : spec.calls) {
    ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> json,
                     CompileConstraint(ConstraintKind::kJsonSchema, c.schema));
    GrammarSeq seq = b.Literal(c.prefix);
    seq.push_back(b.Ref(b.Import(*json)));
    GrammarSeq suffix = b.Literal(c.suffix);
    seq.insert(seq.end(), suffix.begin(), suffix.end());
    alts.push_back(std::move(seq));
    if (b.TooLarge()) return InvalidArgumentError("tools: the tools' schemas are too large");
  }
  const GrammarElement call = b.Ref(b.AddRule("call", std::move(alts)));
  GrammarSeq more = b.Literal(spec.separator);
  more.push_back(call);
  GrammarSeq root = b.Literal(spec.begin);
  root.push_back(call);
  if (spec.max_calls > 1) root.push_back(b.Repeat(b.Group({more}), 0, spec.max_calls - 1));
  GrammarSeq end = b.Literal(spec.end);
  root.insert(root.end(), end.begin(), end.end());
  b.SetRoot(b.AddRule("root", {std::move(root)}));
  return std::move(b).Build();
}

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> CompileToolCallGrammar(const ToolCallGrammarSpec& spec) {
  if (spec.calls.empty()) return InvalidArgumentError("tools: no tool to call");
  if (spec.max_calls < 1 || spec.max_calls > kMaxCalls) {
    return InvalidArgumentError("tools: max_calls out of range");
  }
  return GrammarCache::Global().GetOrCompile(Key(spec), [&] { return Compile(spec); });
}

}  // namespace weft::sampling
