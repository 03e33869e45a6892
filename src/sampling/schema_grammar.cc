#include "sampling/schema_grammar.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sampling/regex_grammar.h"
#include "sampling/schema_grammar_internal.h"

namespace weft::sampling {
namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string>& Annotations() {
  static const auto* k = new std::set<std::string>{
      "title",   "description", "examples", "default",  "$schema",   "$id",
      "$comment", "deprecated", "readOnly", "writeOnly", "$defs",    "definitions"};
  return *k;
}

const std::set<std::string>& Supported() {
  static const auto* k = new std::set<std::string>{
      "type",     "properties", "required",  "additionalProperties", "enum",
      "const",    "items",      "prefixItems", "minItems",           "maxItems",
      "anyOf",    "oneOf",      "allOf",     "$ref",                 "minLength",
      "maxLength", "pattern",   "format",    "minimum",              "maximum",
      "exclusiveMinimum", "exclusiveMaximum"};
  return *k;
}

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxCount = 1000;  // minItems, maxLength, ... at most

std::string JsonTypeOf(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return std::floor(v.get<double>()) == v.get<double>() ? "integer" : "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

}  // namespace

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const Json& root) : root_(root), parts_(&b_) {}

  StatusOr<std::shared_ptr<const Grammar>> Compile() {
    ASSIGN_OR_RETURN(GrammarElement v, Value(root_, 0));
    b_.SetRoot(b_.AddRule("root", {{parts_.Ws(), v}}));
    if (b_.TooLarge()) return InvalidArgumentError("json_schema: schema is too large");
    auto g = std::move(b_).Build();
    if (!g.ok()) return InvalidArgumentError("json_schema: " + g.status().message());
    return g;
  }

 private:
  static Status Error(const std::string& what) { return InvalidArgumentError("json_schema: " + what); }

  // Keywords of s other than annotations.
  static std::vector<std::string> Constraints(const Json& s) {
    std::vector<std::string> out;
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (!Annotations().contains(it.key())) out.push_back(it.key());
    }
    return out;
  }

  StatusOr<GrammarElement> Value(const Json& s, int depth) {
    if (depth > kMaxDepth) return Error("schema nested too deeply");
    if (b_.TooLarge()) return Error("schema is too large");
    if (s.is_boolean()) {
      if (s.get<bool>()) return parts_.AnyValue();
      return Error("schema 'false' (nothing validates) is not supported here");
    }
    if (!s.is_object()) return Error("a schema must be an object or a boolean");
    const std::vector<std::string> keys = Constraints(s);
    for (const std::string& k : keys) {
      if (!Supported().contains(k)) return Error("unsupported keyword '" + k + "'");
    }
    if (s.contains("$ref")) {
      if (keys.size() > 1) return Error("'$ref' with sibling keywords");
      return Ref(s["$ref"], depth);
    }
    if (s.contains("allOf")) {
      ASSIGN_OR_RETURN(Json merged, MergeAllOf(s, depth));
      return Value(merged, depth + 1);
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      if (keys.size() > 1) return Error(std::string("'") + k + "' with sibling keywords");
      const Json& list = s[k];
      if (!list.is_array() || list.empty()) return Error(std::string("'") + k + "' must be a non-empty array");
      GrammarAlts alts;
      for (const Json& sub : list) {
        ASSIGN_OR_RETURN(GrammarElement e, Value(sub, depth + 1));
        alts.push_back({e});
      }
      return b_.Group(std::move(alts));
    }
    ASSIGN_OR_RETURN(std::vector<std::string> types, Types(s));
    if (s.contains("enum") || s.contains("const")) return Enum(s, keys, types);
    GrammarAlts alts;
    for (const std::string& t : types) {
      ASSIGN_OR_RETURN(GrammarElement e, Typed(s, t, depth));
      alts.push_back({e});
    }
    return b_.Group(std::move(alts));
  }

  StatusOr<std::vector<std::string>> Types(const Json& s) {
    static const std::set<std::string> kAll = {"null",   "boolean", "integer", "number",
                                               "string", "array",   "object"};
    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      for (const Json& one : t.is_array() ? t : Json::array({t})) {
        if (!one.is_string() || !kAll.contains(one.get<std::string>())) {
          return Error("bad 'type' " + one.dump());
        }
        types.push_back(one.get<std::string>());
      }
      if (types.empty()) return Error("empty 'type' list");
      return types;
    }
    // No type: the one the keywords describe (a subset of the valid
    // values, but never one that does not validate), else any value.
    auto has = [&](std::initializer_list<const char*> ks) {
      for (const char* k : ks) {
        if (s.contains(k)) return true;
      }
      return false;
    };
    if (has({"properties", "required", "additionalProperties"})) types.push_back("object");
    if (has({"items", "prefixItems", "minItems", "maxItems"})) types.push_back("array");
    if (has({"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
    if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) {
      types.push_back("integer");
    }
    if (types.empty() && !has({"enum", "const"})) {
      types = {"null", "boolean", "number", "string", "array", "object"};
    }
    return types;
  }

  StatusOr<GrammarElement> Enum(const Json& s, const std::vector<std::string>& keys,
                                const std::vector<std::string>& types) {
    for (const std::string& k : keys) {
      if (k != "enum" && k != "const" && k != "type") {
        return Error("'enum'/'const' with '" + k + "'");
      }
    }
    Json values = s.contains("const") ? Json::array({s["const"]}) : s["enum"];
    if (!values.is_array()) return Error("'enum' must be an array");
    if (s.contains("const") && s.contains("enum")) return Error("both 'enum' and 'const'");
    GrammarAlts alts;
    for (const Json& v : values) {
      const std::string t = JsonTypeOf(v);
      bool ok = !s.contains("type");
      for (const std::string& want : types) ok |= want == t || (want == "number" && t == "integer");
      if (ok) alts.push_back(b_.Literal(v.dump()));
    }
    if (alts.empty()) return Error("no 'enum' value has the schema's type");
    return b_.Group(std::move(alts));
  }

  StatusOr<GrammarElement> Typed(const Json& s, const std::string& t, int depth) {
    if (t == "null") return b_.Group({b_.Literal("null")});
    if (t == "boolean") return b_.Group({b_.Literal("true"), b_.Literal("false")});
    if (t == "string") return String(s);
    if (t == "integer") return Integer(s);
    if (t == "number") {
      for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (s.contains(k)) return Error(std::string("'") + k + "' on a number (only on integers)");
      }
      return parts_.Number();
    }
    if (t == "array") return Array(s, depth);
    return Object(s, depth);
  }

  StatusOr<int64_t> Count(const Json& s, const char* key, int64_t dflt) {
    if (!s.contains(key)) return dflt;
    const Json& v = s[key];
    if (!v.is_number_integer() && !v.is_number_unsigned()) {
      return Error(std::string("'") + key + "' must be a non-negative integer");
    }
    const int64_t n = v.get<int64_t>();
    if (n < 0 || n > kMaxCount) {
      return Error(std::string("'") + key + "' out of range (0.." + std::to_string(kMaxCount) + ")");
    }
    return n;
  }

  StatusOr<GrammarElement> String(const Json& s) {
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("format")) {
      if (lengths || s.contains("pattern")) return Error("'format' with other string keywords");
      if (!s["format"].is_string()) return Error("'format' must be a string");
      ASSIGN_OR_RETURN(std::string re, FormatRegex(s["format"].get<std::string>()));
      ASSIGN_OR_RETURN(GrammarElement e, AddRegex(&b_, re, true, false));
      return Quoted(e);
    }
    if (s.contains("pattern")) {
      if (lengths) return Error("'pattern' with 'minLength'/'maxLength'");
      if (!s["pattern"].is_string()) return Error("'pattern' must be a string");
      auto e = AddRegex(&b_, s["pattern"].get<std::string>(), true, true);
      if (!e.ok()) return Error("'pattern': " + e.status().message());
      return Quoted(*e);
    }
    ASSIGN_OR_RETURN(int64_t min, Count(s, "minLength", 0));
    ASSIGN_OR_RETURN(int64_t max, Count(s, "maxLength", -1));
    if (max >= 0 && max < min) return Error("'maxLength' < 'minLength'");
    if (!lengths) return parts_.String();
    return Quoted(b_.Repeat(parts_.StringChar(), static_cast<int>(min), static_cast<int>(max)));
  }

  GrammarElement Quoted(GrammarElement e) {
    GrammarSeq seq = b_.Literal("\"");
    seq.push_back(e);
    seq.push_back(b_.Literal("\"")[0]);
    return b_.Group({seq});
  }

  StatusOr<GrammarElement> Integer(const Json& s) {
    std::optional<int64_t> lo, hi;
    auto bound = [&](const char* key, bool is_min, bool exclusive) -> Status {
      if (!s.contains(key)) return OkStatus();
      const Json& v = s[key];
      if (v.is_boolean()) return OkStatus();  // draft 4 flag: read with minimum/maximum
      if (!v.is_number()) return Error(std::string("'") + key + "' must be a number");
      const double d = v.get<double>();
      if (!(std::fabs(d) < 1e18)) return Error(std::string("'") + key + "' out of range");
      const bool excl = exclusive || (s.contains(is_min ? "exclusiveMinimum" : "exclusiveMaximum") &&
                                      s[is_min ? "exclusiveMinimum" : "exclusiveMaximum"].is_boolean() &&
                                      s[is_min ? "exclusiveMinimum" : "exclusiveMaximum"].get<bool>());
      int64_t b;
      if (v.is_number_integer() || v.is_number_unsigned()) {
        b = v.get<int64_t>();
        if (excl) b += is_min ? 1 : -1;
      } else {
        b = static_cast<int64_t>(is_min ? (excl ? std::floor(d) + 1 : std::ceil(d))
                                        : (excl ? std::ceil(d) - 1 : std::floor(d)));
      }
      auto& slot = is_min ? lo : hi;
      slot = slot ? (is_min ? std::max(*slot, b) : std::min(*slot, b)) : b;
      return OkStatus();
    };
    RETURN_IF_ERROR(bound("minimum", true, false));
    RETURN_IF_ERROR(bound("exclusiveMinimum", true, true));
    RETURN_IF_ERROR(bound("maximum", false, false));
    RETURN_IF_ERROR(bound("exclusiveMaximum", false, true));
    if (lo && hi && *lo > *hi) return Error("no integer between the bounds");
    return parts_.IntegerRange(lo, hi);
  }

  // The schema a local '$ref' names ("#" or a JSON pointer after it).
  StatusOr<const Json*> Resolve(const std::string& r) const {
    if (r.empty() || r[0] != '#') return Error("'$ref' " + r + " (only local refs)");
    if (r == "#") return &root_;
    Json::json_pointer ptr;
    try {
      ptr = Json::json_pointer(r.substr(1));
    } catch (const std::exception&) {
      return Error("bad '$ref' " + r);
    }
    if (!root_.contains(ptr)) return Error("'$ref' " + r + " not found");
    return &root_.at(ptr);
  }

  StatusOr<GrammarElement> Ref(const Json& ref, int depth) {
    if (!ref.is_string()) return Error("'$ref' must be a string");
    const std::string r = ref.get<std::string>();
    if (auto it = refs_.find(r); it != refs_.end()) return b_.Ref(it->second);
    ASSIGN_OR_RETURN(const Json* target, Resolve(r));
    const int rule = b_.NewRule("ref");
    refs_[r] = rule;
    ASSIGN_OR_RETURN(GrammarElement e, Value(*target, depth + 1));
    b_.Define(rule, {{e}});
    return b_.Ref(rule);
  }

  StatusOr<Json> MergeAllOf(const Json& s, int depth);
  StatusOr<GrammarElement> Object(const Json& s, int depth);
  StatusOr<GrammarElement> Array(const Json& s, int depth);

  const Json& root_;
  GrammarBuilder b_;
  JsonParts parts_;
  std::map<std::string, int> refs_;
};

StatusOr<Json> SchemaCompiler::MergeAllOf(const Json& s, int depth) {
  const Json& list = s["allOf"];
  if (!list.is_array() || list.empty()) return Error("'allOf' must be a non-empty array");
  Json merged = s;
  merged.erase("allOf");
  std::vector<const Json*> parts = {&merged};
  std::vector<Json> resolved;
  resolved.reserve(list.size());
  for (const Json& sub : list) {
    Json part = sub;
    for (int hops = 0; part.is_object() && part.contains("$ref"); ++hops) {
      if (hops > kMaxDepth || part.size() > 1) return Error("'allOf' member with '$ref' and siblings");
      const std::string r = part["$ref"].is_string() ? part["$ref"].get<std::string>() : "";
      if (r == "#") return Error("'allOf' with a recursive '$ref'");
      ASSIGN_OR_RETURN(const Json* target, Resolve(r));
      part = *target;
    }
    if (!part.is_object()) return Error("'allOf' members must be schema objects");
    if (part.contains("allOf")) {
      ASSIGN_OR_RETURN(part, MergeAllOf(part, depth + 1));
    }
    resolved.push_back(std::move(part));
  }
  Json merged_copy = merged;
  for (const Json& part : resolved) {
    for (auto it = part.begin(); it != part.end(); ++it) {
      const std::string& k = it.key();
      if (Annotations().contains(k)) continue;
      if (k == "properties") {
        if (!it->is_object()) return Error("'properties' must be an object");
        for (auto p = it->begin(); p != it->end(); ++p) {
          Json& slot = merged_copy["properties"][p.key()];
          if (!slot.is_null() && slot != *p) return Error("'allOf' with conflicting property '" + p.key() + "'");
          slot = *p;
        }
      } else if (k == "required") {
        if (!it->is_array()) return Error("'required' must be an array");
        for (const Json& name : *it) {
          Json& req = merged_copy["required"];
          if (std::find(req.begin(), req.end(), name) == req.end()) req.push_back(name);
        }
      } else if (!merged_copy.contains(k)) {
        merged_copy[k] = *it;
      } else if (merged_copy[k] != *it) {
        return Error("'allOf' with conflicting '" + k + "'");
      }
    }
  }
  // A member closed to additional properties would refuse the others'.
  const size_t total = merged_copy.contains("properties") ? merged_copy["properties"].size() : 0;
  for (const Json& part : resolved) {
    const size_t own = part.contains("properties") ? part["properties"].size() : 0;
    if (part.contains("additionalProperties") && part["additionalProperties"] != Json(true) &&
        own < total) {
      return Error("'allOf' member with 'additionalProperties' and others' properties");
    }
  }
  return merged_copy;
}

StatusOr<GrammarElement> SchemaCompiler::Object(const Json& s, int depth) {
  struct Prop {
    std::string key;  // JSON-encoded, without quotes
    const Json* schema;
    bool required;
  };
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return Error("'required' must be an array");
    for (const Json& r : s["required"]) {
      if (!r.is_string()) return Error("'required' must list strings");
      required.insert(r.get<std::string>());
    }
  }
  static const Json kTrue = true;
  const Json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : &kTrue;
  const bool closed = extra->is_boolean() && !extra->get<bool>();
  std::vector<Prop> props;
  std::set<std::string> declared;
  if (s.contains("properties")) {
    if (!s["properties"].is_object()) return Error("'properties' must be an object");
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
      const std::string enc = Json(it.key()).dump();
      props.push_back({enc.substr(1, enc.size() - 2), &*it, required.contains(it.key())});
      declared.insert(it.key());
    }
  }
  for (const std::string& r : required) {
    if (declared.contains(r)) continue;
    if (closed) return Error("required property '" + r + "' is not allowed");
    const std::string enc = Json(r).dump();
    props.push_back({enc.substr(1, enc.size() - 2), extra, true});
  }
  const GrammarElement ws = parts_.Ws();
  const GrammarSeq comma = {ws, b_.Literal(",")[0], ws};
  const GrammarElement close = b_.Literal("}")[0];
  // first[i] / rest[i]: the members from property i on, none / some before.
  const size_t n = props.size();
  std::vector<int> first(n + 1), rest(n + 1);
  for (size_t i = 0; i <= n; ++i) {
    first[i] = b_.NewRule("obj-first");
    rest[i] = b_.NewRule("obj-rest");
  }
  GrammarAlts first_end = {{close}}, rest_end = {{ws, close}};
  if (!closed) {
    ASSIGN_OR_RETURN(GrammarElement v, Value(*extra, depth + 1));
    std::vector<std::string> keys;
    for (const Prop& p : props) keys.push_back(p.key);
    const GrammarElement kv = b_.Group({{parts_.KeyNotIn(keys), ws, b_.Literal(":")[0], ws, v}});
    first_end.push_back({kv, b_.Ref(rest[n])});
    GrammarSeq more = comma;
    more.push_back(kv);
    more.push_back(b_.Ref(rest[n]));
    rest_end.push_back(more);
  }
  b_.Define(first[n], std::move(first_end));
  b_.Define(rest[n], std::move(rest_end));
  for (size_t i = n; i-- > 0;) {
    ASSIGN_OR_RETURN(GrammarElement v, Value(*props[i].schema, depth + 1));
    GrammarSeq kv = b_.Literal("\"" + props[i].key + "\"");
    kv.insert(kv.end(), {ws, b_.Literal(":")[0], ws, v});
    const GrammarElement member = b_.Group({kv});
    GrammarAlts f = {{member, b_.Ref(rest[i + 1])}};
    GrammarSeq r = comma;
    r.insert(r.end(), {member, b_.Ref(rest[i + 1])});
    GrammarAlts ra = {r};
    if (!props[i].required) {
      f.push_back({b_.Ref(first[i + 1])});
      ra.push_back({b_.Ref(rest[i + 1])});
    }
    b_.Define(first[i], std::move(f));
    b_.Define(rest[i], std::move(ra));
  }
  return b_.Group({{b_.Literal("{")[0], ws, b_.Ref(first[0])}});
}

StatusOr<GrammarElement> SchemaCompiler::Array(const Json& s, int depth) {
  static const Json kTrue = true;
  const Json* items = s.contains("items") ? &s["items"] : &kTrue;
  if (items->is_array()) return Error("'items' as an array (use 'prefixItems')");
  std::vector<const Json*> prefix;
  if (s.contains("prefixItems")) {
    if (!s["prefixItems"].is_array()) return Error("'prefixItems' must be an array");
    for (const Json& p : s["prefixItems"]) prefix.push_back(&p);
  }
  ASSIGN_OR_RETURN(int64_t min, Count(s, "minItems", 0));
  ASSIGN_OR_RETURN(int64_t max, Count(s, "maxItems", -1));
  const bool no_more = items->is_boolean() && !items->get<bool>();
  const int64_t p = static_cast<int64_t>(prefix.size());
  if (no_more && (max < 0 || max > p)) max = p;
  if (max >= 0 && max < min) return Error("no array length satisfies the item counts");
  std::optional<GrammarElement> item;
  auto element = [&](int64_t i) -> StatusOr<GrammarElement> {
    if (i < p) return Value(*prefix[i], depth + 1);
    if (!item) {
      ASSIGN_OR_RETURN(GrammarElement e, Value(*items, depth + 1));
      item = e;
    }
    return *item;
  };
  const GrammarElement ws = parts_.Ws();
  const GrammarElement comma = b_.Literal(",")[0];
  const GrammarElement close = b_.Literal("]")[0];
  // after[i]: what may follow i >= 1 elements; the last one repeats if unbounded.
  const int64_t last = max >= 0 ? max : std::max<int64_t>({p, min, 1});
  std::vector<int> after(static_cast<size_t>(last) + 1);
  for (int64_t i = 1; i <= last; ++i) after[i] = b_.NewRule("arr");
  for (int64_t i = last; i >= 1; --i) {
    GrammarAlts alts;
    if (i >= min) alts.push_back({ws, close});
    if (max < 0 || i < max) {
      ASSIGN_OR_RETURN(GrammarElement e, element(i));
      alts.push_back({ws, comma, ws, e, b_.Ref(i == last ? after[i] : after[i + 1])});
    }
    b_.Define(after[i], std::move(alts));
  }
  GrammarAlts body;
  if (min == 0) body.push_back({close});
  if (max != 0) {
    ASSIGN_OR_RETURN(GrammarElement e, element(0));
    body.push_back({e, b_.Ref(after[1])});
  }
  return b_.Group({{b_.Literal("[")[0], ws, b_.Group(std::move(body))}});
}


StatusOr<std::shared_ptr<const Grammar>> CompileJsonSchema(std::string_view schema_json) {
  Json schema = Json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return InvalidArgumentError("json_schema: not valid JSON");
  return SchemaCompiler(schema).Compile();
}

}  // namespace weft::sampling
