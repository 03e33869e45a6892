// The grammar of a forced tool call (tool_choice "required" or a named
// function): literal text around JSON texts that validate against JSON
// Schemas, in the shape a chat template's tool-call format writes.
//
//   ToolCallGrammarSpec spec;
//   spec.calls = {{"<tool_call>\n", R"({"type": "object", ...})", "\n</tool_call>"}};
//   spec.separator = "\n";
//   StatusOr<std::shared_ptr<const Grammar>> g = CompileToolCallGrammar(spec);
//
// The language: begin, then 1..max_calls calls separated by `separator`,
// then end; each call is one of `calls` (its prefix, a JSON text of its
// schema as schema_grammar.h accepts it, its suffix). Compiled grammars are
// cached (grammar_cache.h) by the spec's text.
//
// Thread safety: a function of its argument (the cache is thread-safe).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sampling/grammar.h"
#include "util/status.h"

namespace weft::sampling {

// One way to write a call: literal prefix, a JSON Schema (its text), suffix.
struct FramedJson {
  std::string prefix;  // e.g. "<function=get_weather>"
  std::string schema;  // JSON Schema text of the JSON part
  std::string suffix;  // e.g. "</function>"
};

struct ToolCallGrammarSpec {
  std::string begin;              // before the first call
  std::vector<FramedJson> calls;  // alternatives for each call; >= 1
  std::string separator;          // between calls
  std::string end;                // after the last call
  int max_calls = 1;              // >= 1
};

// INVALID_ARGUMENT for an empty spec or a schema the compiler rejects
// (its message names the keyword).
StatusOr<std::shared_ptr<const Grammar>> CompileToolCallGrammar(const ToolCallGrammarSpec& spec);

}  // namespace weft::sampling
