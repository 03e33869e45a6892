// JSON Schema (the subset structured outputs need) compiled to the byte
// grammar of grammar.h: the grammar accepts JSON texts (leading whitespace,
// then one value; whitespace between tokens bounded as in json_grammar.h)
// that validate against the schema.
//
//   StatusOr<std::shared_ptr<const Grammar>> g = CompileJsonSchema(R"({"type": "integer"})");
//
// Supported: type (each, and lists), properties (in the order written),
// required, additionalProperties (absent/true, false, a schema), enum and
// const (with type), items (a schema or false), prefixItems, minItems,
// maxItems, anyOf and oneOf (as alternatives; oneOf's exclusivity is not
// enforced, so its branches should not overlap), allOf (merged; of
// objects), $ref to "#", "#/$defs/..." or any local JSON pointer
// (recursion too), $defs/definitions, minLength/maxLength, pattern
// (unanchored unless ^/$; not with minLength/maxLength), format (date,
// time, date-time, uuid, email), minimum/maximum/exclusiveMinimum/
// exclusiveMaximum on integers. Annotations (title, description, examples,
// default, $schema, $id, $comment, deprecated, readOnly, writeOnly) are
// ignored. Any other keyword, and any combination the grammar could not
// enforce exactly (bounds on non-integers, $ref or anyOf with sibling
// constraints, ...), is an INVALID_ARGUMENT naming it.
//
// The grammar accepts a canonical subset of the valid JSON texts: properties
// in schema order, no \u escapes in keys not declared, enum values as
// compact JSON, integers without a fraction or exponent, dates without
// Feb 29, times without leap seconds. Every text it accepts validates.
//
// Thread safety: a function of its argument.
#pragma once

#include <memory>
#include <string_view>

#include "sampling/grammar.h"
#include "util/status.h"

namespace weft::sampling {

StatusOr<std::shared_ptr<const Grammar>> CompileJsonSchema(std::string_view schema_json);

}  // namespace weft::sampling
