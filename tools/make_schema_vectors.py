#!/usr/bin/env python3
"""Writes tests/sampling/testdata/schema_vectors.json: per JSON Schema keyword
the engine supports, a schema with valid and invalid JSON texts, and schemas
with unsupported keywords. Each label is checked with the `jsonschema`
package (Draft 2020-12, with format checking) where it is installed; the
C++ test (grammar_test.cc) then requires the automaton to accept every
valid text and reject every invalid one.

Usage: tools/make_schema_vectors.py [--check]  (--check: fail if the file differs)
"""
import json
import os
import sys

CASES = [
    ("type string", {"type": "string"}, ['"abc"', '""', '"h\\u00e9 \\n"'], ['1', 'null', '"a']),
    ("type list", {"type": ["integer", "null"]}, ['1', 'null', '-20'], ['"x"', '1.5', 'true']),
    ("boolean", {"type": "boolean"}, ['true', 'false'], ['1', '"true"']),
    ("number", {"type": "number"}, ['1', '-0.5', '2e10', '3.25E-2'], ['01', '.5', '1.', '"1"']),
    ("object properties", {"type": "object", "properties": {"a": {"type": "integer"},
                                                             "b": {"type": "string"}},
                           "required": ["a"], "additionalProperties": False},
     ['{"a": 1}', '{"a": 1, "b": "x"}', '{ "a" : 2 ,"b":"" }'],
     ['{}', '{"b": "x"}', '{"a": "1"}', '{"a": 1, "c": 2}']),
    ("additionalProperties schema", {"type": "object", "properties": {"a": {"type": "integer"}},
                                     "additionalProperties": {"type": "boolean"}},
     ['{"a": 1, "z": true}', '{"q": false}', '{}'], ['{"z": 1}', '{"a": true}']),
    ("additionalProperties default", {"type": "object", "properties": {"a": {"type": "integer"}}},
     ['{"a": 1, "ab": "x"}', '{"b": [1, {"c": null}]}'], ['{"a": "x"}']),
    ("enum", {"enum": ["red", "green", 3, None]}, ['"red"', '3', 'null'], ['"blue"', '4']),
    ("const", {"const": {"k": [1, 2]}}, ['{"k":[1,2]}'], ['{"k":[1]}']),
    ("items", {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
     ['[1]', '[1, 2, 3]'], ['[]', '[1, 2, 3, 4]', '["a"]']),
    ("prefixItems", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                     "items": False}, ['["a", 1]', '["a"]', '[]'], ['[1, "a"]', '["a", 1, 2]']),
    ("anyOf", {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]},
     ['"x"', '5', '100'], ['4', 'null']),
    ("oneOf", {"oneOf": [{"type": "boolean"}, {"type": "null"}]}, ['true', 'null'], ['0']),
    ("allOf", {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}},
                          "required": ["a"]},
                         {"properties": {"b": {"type": "string"}}, "required": ["b"]}]},
     ['{"a": 1, "b": "x"}'], ['{"a": 1}', '{"b": "x"}']),
    ("$ref recursion", {"$defs": {"node": {"type": "object",
                                           "properties": {"v": {"type": "integer"},
                                                          "next": {"$ref": "#/$defs/node"}},
                                           "required": ["v"], "additionalProperties": False}},
                        "$ref": "#/$defs/node"},
     ['{"v": 1}', '{"v": 1, "next": {"v": 2, "next": {"v": 3}}}'],
     ['{"v": 1, "next": {}}', '{"next": {"v": 1}}']),
    ("string lengths", {"type": "string", "minLength": 2, "maxLength": 3},
     ['"ab"', '"abc"', '"\\u00e9\\u00e9"'], ['"a"', '"abcd"']),
    ("pattern unanchored", {"type": "string", "pattern": "[0-9]{3}"},
     ['"123"', '"ab456cd"'], ['"12"', '"ab"']),
    ("pattern anchored", {"type": "string", "pattern": "^[a-z]+-\\d+$"},
     ['"abc-1"', '"x-42"'], ['"abc-"', '"1-1"', '" abc-1"']),
    ("format date", {"type": "string", "format": "date"}, ['"2024-01-31"', '"1999-12-01"'],
     ['"2024-13-01"', '"2024-02-30"', '"24-01-01"']),
    ("format time", {"type": "string", "format": "time"}, ['"12:30:00Z"', '"23:59:59.5+02:00"'],
     ['"24:00:00Z"', '"12:30"']),
    ("format date-time", {"type": "string", "format": "date-time"},
     ['"2024-01-31T12:30:00Z"'], ['"2024-01-31 12:30:00Z"', '"2024-01-31"']),
    ("format uuid", {"type": "string", "format": "uuid"},
     ['"123e4567-e89b-12d3-a456-426614174000"'], ['"123e4567e89b12d3a456426614174000"', '"x"']),
    ("format email", {"type": "string", "format": "email"}, ['"a.b@example.com"'],
     ['"example.com"']),
    ("integer range", {"type": "integer", "minimum": -15, "maximum": 120},
     ['-15', '-1', '0', '9', '10', '99', '100', '120'], ['-16', '121', '200', '1000', '01']),
    ("integer exclusive", {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
     ['1', '9'], ['0', '10']),
    ("integer open", {"type": "integer", "minimum": 37}, ['37', '99', '100', '123456'],
     ['36', '-37', '0']),
]

UNSUPPORTED = [
    ("multipleOf", {"type": "integer", "multipleOf": 3}),
    ("minimum", {"type": "number", "minimum": 0.5}),
    ("patternProperties", {"type": "object", "patternProperties": {"^a": {}}}),
    ("uniqueItems", {"type": "array", "uniqueItems": True}),
    ("not", {"not": {"type": "string"}}),
    ("if", {"if": {"type": "string"}, "then": {"minLength": 1}}),
    ("dependentRequired", {"type": "object", "dependentRequired": {"a": ["b"]}}),
    ("format 'ipv4'", {"type": "string", "format": "ipv4"}),
    ("lookaround", {"type": "string", "pattern": "a(?=b)"}),
    ("'$ref' http", {"$ref": "http://example.com/s.json"}),
]


def check(out):
    try:
        import jsonschema
    except ImportError:
        print("jsonschema not installed: labels not checked", file=sys.stderr)
        return
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for case in out["cases"]:
        v = jsonschema.Draft202012Validator(case["schema"], format_checker=checker)
        for text in case["valid"]:
            errs = list(v.iter_errors(json.loads(text)))
            assert not errs, (case["name"], text, errs[0].message)
        for text in case["invalid"]:
            try:
                inst = json.loads(text)
            except ValueError:
                continue  # not JSON at all: invalid
            fmt = case["schema"].get("format")
            if fmt and fmt not in checker.checkers:
                continue  # jsonschema cannot check this format here
            assert list(v.iter_errors(inst)), (case["name"], text, "validates")


def main():
    out = {"cases": [{"name": n, "schema": s, "valid": v, "invalid": i}
                     for n, s, v, i in CASES],
           "unsupported": [{"name": n, "schema": s} for n, s in UNSUPPORTED]}
    check(out)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "sampling", "testdata",
                        "schema_vectors.json")
    text = json.dumps(out, indent=1) + "\n"
    if "--check" in sys.argv:
        with open(path) as f:
            sys.exit(0 if f.read() == text else "schema_vectors.json is stale")
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
