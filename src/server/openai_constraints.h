// Structured-output request fields -> one compiled constraint
// (SamplingFields::structured), at parse time: the engine never compiles.
//
// Accepted forms (at most one per request; two -> 400):
//   response_format {"type": "json_schema", "json_schema": {"name",
//       "schema", "strict"}}                                  (OpenAI)
//   structured_outputs {"json": schema | string, "regex": str,
//       "choice": [str], "grammar": str}                      (vLLM)
//   guided_json, guided_regex, guided_choice, guided_grammar  (older vLLM)
//   json_schema (object), grammar (GBNF string)               (llama-server)
// response_format json_object (JSON mode, parsed in openai_request.cc)
// counts as one too. A constraint the engine cannot enforce (an unsupported
// JSON Schema keyword, regex feature or GBNF construct) is a 400 naming it:
// never unconstrained output.
//
// Thread safety: pure functions (the grammar cache is thread-safe).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/backend.h"

namespace weft::server {

// Reads the fields above from a request body (`body`, already parsed as
// `j`, a JSON object) into s->structured; s->json_object must already be
// parsed. A schema's properties keep the order written in `body`. Returns
// the 400 of a malformed field, a conflict, or a constraint that does not
// compile.
std::optional<ApiError> ParseStructuredOutput(std::string_view body, const nlohmann::json& j,
                                              SamplingFields* s);

// The request forms above, for /v1/effective-config.
std::vector<std::string> StructuredOutputForms();

}  // namespace weft::server
