#include "server/openai_constraints.h"

#include <utility>

#include "sampling/grammar_cache.h"
#include "util/strings.h"

namespace weft::server {
namespace {

// Ordered: a schema's properties keep the order written (the request body
// was parsed into sorted maps).
using json = nlohmann::ordered_json;
using sampling::ConstraintKind;

// One constraint a request asked for, before compiling.
struct Requested {
  std::string param;  // the field that gave it, e.g. "structured_outputs.regex"
  ConstraintKind kind = ConstraintKind::kJsonSchema;
  std::string spec;   // the compiler's input text
};

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A JSON Schema given as an object (or a boolean schema) or as its text.
std::optional<ApiError> SchemaSpec(const json& v, const std::string& param, Requested* r) {
  r->param = param;
  r->kind = ConstraintKind::kJsonSchema;
  if (v.is_string()) {
    r->spec = v.get<std::string>();
  } else if (v.is_object() || v.is_boolean()) {
    r->spec = Dump(v);
  } else {
    return BadRequest("'" + param + "' must be a JSON Schema (an object or its text)", param);
  }
  return std::nullopt;
}

std::optional<ApiError> StringSpec(const json& v, const std::string& param, ConstraintKind kind,
                                   Requested* r) {
  r->param = param;
  r->kind = kind;
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    return BadRequest("'" + param + "' must be a non-empty string", param);
  }
  r->spec = v.get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> ChoiceSpec(const json& v, const std::string& param, Requested* r) {
  r->param = param;
  r->kind = ConstraintKind::kChoice;
  bool ok = v.is_array() && !v.empty();
  for (const json& c : v) ok = ok && c.is_string();
  if (!ok) return BadRequest("'" + param + "' must be a non-empty list of strings", param);
  r->spec = Dump(v);
  return std::nullopt;
}

// The value of `key` in the form named by `param` (json/regex/choice/grammar).
std::optional<ApiError> FormSpec(const std::string& key, const json& v, const std::string& param,
                                 Requested* r) {
  if (key == "json") return SchemaSpec(v, param, r);
  if (key == "regex") return StringSpec(v, param, ConstraintKind::kRegex, r);
  if (key == "choice") return ChoiceSpec(v, param, r);
  if (key == "grammar") return StringSpec(v, param, ConstraintKind::kGbnf, r);
  return BadRequest("'" + param + "' is not supported; json, regex, choice and grammar are",
                    param);
}

// response_format json_schema: {"name", "schema", "strict"} (OpenAI).
std::optional<ApiError> ResponseFormatSchema(const json& rf, std::vector<Requested>* out) {
  const std::string param = "response_format.json_schema";
  auto it = rf.find("json_schema");
  if (it == rf.end() || !it->is_object()) {
    return BadRequest("'response_format' of type 'json_schema' needs a 'json_schema' object",
                      param);
  }
  const json& js = *it;
  if (js.contains("name") && !js["name"].is_string()) {
    return BadRequest("'" + param + ".name' must be a string", param + ".name");
  }
  if (js.contains("strict") && !js["strict"].is_boolean() && !js["strict"].is_null()) {
    return BadRequest("'" + param + ".strict' must be a boolean", param + ".strict");
  }
  auto schema = js.find("schema");
  if (schema == js.end() || schema->is_null()) {
    return BadRequest("'" + param + ".schema' is required", param + ".schema");
  }
  Requested r;
  if (auto e = SchemaSpec(*schema, param + ".schema", &r)) return e;
  out->push_back(std::move(r));
  return std::nullopt;
}

// vLLM's structured_outputs object: exactly one of its forms.
std::optional<ApiError> StructuredOutputs(const json& so, std::vector<Requested>* out) {
  if (!so.is_object()) {
    return BadRequest("'structured_outputs' must be an object", "structured_outputs");
  }
  for (const auto& [key, v] : so.items()) {
    if (v.is_null()) continue;
    const std::string param = "structured_outputs." + key;
    Requested r;
    if (auto e = FormSpec(key, v, param, &r)) return e;
    out->push_back(std::move(r));
  }
  return std::nullopt;
}

// The form a top-level field names: guided_json -> json, grammar -> grammar.
std::string TopLevelForm(const std::string& field) {
  const std::string form = field.rfind("guided_", 0) == 0 ? field.substr(7) : field;
  return form == "json_schema" ? "json" : form;
}

// Every constraint field present in the body `j`, in a fixed order.
std::optional<ApiError> Collect(const json& j, std::vector<Requested>* out) {
  auto rf = j.find("response_format");
  if (rf != j.end() && rf->is_object() && rf->value("type", json()) == "json_schema") {
    if (auto e = ResponseFormatSchema(*rf, out)) return e;
  }
  auto so = j.find("structured_outputs");
  if (so != j.end() && !so->is_null()) {
    if (auto e = StructuredOutputs(*so, out)) return e;
  }
  // vLLM's older fields, then llama-server's.
  for (const char* key : {"guided_json", "guided_regex", "guided_choice", "guided_grammar",
                          "json_schema", "grammar"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    Requested r;
    if (auto e = FormSpec(TopLevelForm(key), *it, key, &r)) return e;
    out->push_back(std::move(r));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseStructuredOutput(std::string_view body, const nlohmann::json& j,
                                              SamplingFields* s) {
  if (!j.is_object()) return std::nullopt;
  bool any = false;
  for (const char* key : {"response_format", "structured_outputs", "guided_json",
                          "guided_regex", "guided_choice", "guided_grammar", "json_schema",
                          "grammar"}) {
    any = any || j.contains(key);
  }
  if (!any) return std::nullopt;
  // Again, keeping the order of keys (only for requests with a constraint).
  const json ordered = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!ordered.is_object()) return std::nullopt;
  std::vector<Requested> found;
  if (auto e = Collect(ordered, &found)) return e;
  if (found.empty()) return std::nullopt;
  if (found.size() > 1 || s->json_object) {
    const std::string first = s->json_object ? "response_format.json_object" : found[0].param;
    const std::string second = found[s->json_object ? 0 : 1].param;
    return BadRequest("at most one structured-output constraint per request; got '" + first +
                          "' and '" + second + "'",
                      second);
  }
  const Requested& r = found[0];
  StatusOr<std::shared_ptr<const sampling::Grammar>> g =
      sampling::CompileConstraint(r.kind, r.spec);
  if (!g.ok()) {
    return BadRequest(StrFormat("'%s' cannot be enforced: %s", r.param.c_str(),
                                g.status().message().c_str()),
                      r.param);
  }
  s->structured = {r.kind, std::move(*g)};
  return std::nullopt;
}

std::vector<std::string> StructuredOutputForms() {
  return {"response_format.json_object",   "response_format.json_schema",
          "structured_outputs.json",       "structured_outputs.regex",
          "structured_outputs.choice",     "structured_outputs.grammar",
          "guided_json",                   "guided_regex",
          "guided_choice",                 "guided_grammar",
          "json_schema",                   "grammar"};
}

}  // namespace weft::server
