"""Checks docs/openapi.yaml against the server's C++ sources.

* the document parses and is OpenAPI 3.x with resolvable $refs;
* its (path, method) pairs are exactly the routes src/server/server.cc
  registers, and routes that need the API key are the ones with security;
* each request body schema's properties are exactly the fields
  src/server/openai_request.cc reads (fields documented but ignored carry
  `x-weft-ignored: true`), its required fields are the ones the parser
  demands, and numeric bounds match the literal bounds in the parser;
* every error status the server can produce is documented with the OpenAI
  error schema; generation routes document SSE; /metrics is text/plain;
* the effective-config schema lists every key the handler writes.

Adding a route, a request field or a range in C++ without documenting it
fails this test.
"""

import os
import re
from pathlib import Path

import pytest
import yaml  # PyYAML: installed with gguf (a dependency of it)

SRC = Path(os.environ.get("WEFT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
SERVER = SRC / "src" / "server"
INT32_MAX = 2147483647
# The request-body parser: openai_request.cc, and the chat `messages` list
# in openai_messages.cc.
PARSER_SOURCES = ("openai_request.cc", "openai_messages.cc", "openai_constraints.cc",
                  "tool_request.cc")


def parser_text():
    return "\n".join((SERVER / name).read_text() for name in PARSER_SOURCES)


@pytest.fixture(scope="module")
def doc():
    with open(SRC / "docs" / "openapi.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def resolve(doc, node):
    """Follows a local $ref."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        target = doc
        for part in ref[2:].split("/"):
            assert part in target, f"dangling $ref {ref}"
            target = target[part]
        node = target
    return node


def flatten(doc, schema):
    """Merges allOf parts: returns (properties, required, anyOf-required)."""
    schema = resolve(doc, schema)
    props, required, any_of = {}, set(), []
    for part in schema.get("allOf", []):
        p, r, a = flatten(doc, part)
        props.update(p)
        required |= r
        any_of += a
    props.update(schema.get("properties", {}))
    required |= set(schema.get("required", []))
    for alt in schema.get("anyOf", []):
        any_of.append(set(alt.get("required", [])))
    return props, required, any_of


def read_keys(props):
    return {k for k, v in props.items() if not (isinstance(v, dict) and v.get("x-weft-ignored"))}


# ---- parsing the C++ sources ----

def routes_from_source():
    text = (SERVER / "server.cc").read_text()
    table = text[text.index("const Route kRoutes[]"):]
    table = table[: table.index("\n};")]
    routes = re.findall(r'\{"(/[^"]*)",\s*"([A-Z]+)",\s*(true|false),', table)
    assert routes, "no routes found in server.cc"
    return {(p, m.lower()): auth == "true" for p, m, auth in routes}


def functions(text):
    """Top-level function name -> body (the file's Google style: the
    definition starts in column 0 and ends with a '}' line)."""
    out = {}
    for m in re.finditer(r"^[A-Za-z][\w:<>, ]*?[\s*&](\w+)\(", text, re.M):
        if m.group(0).startswith(("class", "struct", "namespace", "return", "using")):
            continue
        end = text.find("\n}\n", m.end())
        body = text[m.end(): end]
        if "{" not in body.split(")")[0] + body[: body.find("{") + 1]:
            continue
        out.setdefault(m.group(1), body)
    return out


PARSER = None


def parser_info():
    """For each parse function: {receiver -> keys read}, required keys and
    literal numeric bounds, over the function and everything it calls."""
    global PARSER
    if PARSER is not None:
        return PARSER
    text = parser_text()
    funcs = functions(text)
    direct = {}
    for name, body in funcs.items():
        keys = {}

        def add(recv, key):
            keys.setdefault(recv, set()).add(key)

        for recv, key in re.findall(r'\b(\w+)\.(?:Bool|String|Float|Int32|Int|Get)\("([^"]+)"', body):
            add(recv, key)
        for recv, key in re.findall(r'\b(\w+)(?:->|\.)find\("([^"]+)"\)', body):
            add(recv, key)
        for recv, key in re.findall(r'\b(\w+)(?:\.contains\(|\[)"([^"]+)"', body):
            add(recv, key)
        for group in re.findall(r'for \(const char\* key : \{([^}]*)\}\)', body):
            for key in re.findall(r'"([^"]+)"', group):
                add("f", key)
        required = set(re.findall(r"\"'(\w+)' is required\"", body))
        # A list field that must be present: `it == j->end() || ...` + BadRequest.
        for key in re.findall(r'auto it = j->find\("(\w+)"\);\s*if \(it == j->end\(\)', body):
            required.add(key)
        bounds = {}
        for kind, key, lo, hi, rest in re.findall(
                r'f\.(Float|Int32|Int)\("(\w+)",\s*([^,]+),\s*([^,)]+)(.*?)\)', body):
            bounds[key] = (kind, lo.strip(), hi.strip(), rest)
        calls = {c for c in re.findall(r"\b(\w+)\(", body) if c in funcs and c != name}
        direct[name] = (keys, required, bounds, calls)

    # A route's required keys are those its own parser file checks (the
    # route function and the openai_request.cc helpers it calls); the other
    # files' checks are of nested objects (a message's 'content', ...).
    route_file = set(functions((SERVER / "openai_request.cc").read_text()))

    def closure(name, seen=None):
        seen = seen or set()
        keys, required, bounds, calls = direct[name]
        keys = {k: set(v) for k, v in keys.items()}
        required, bounds = set(required), dict(bounds)
        for c in calls:
            if c in seen:
                continue
            seen.add(c)
            k2, r2, b2 = closure(c, seen)
            for r, v in k2.items():
                keys.setdefault(r, set()).update(v)
            bounds.update(b2)
            if c in route_file:
                required.update(r2)
        return keys, required, bounds

    PARSER = {n: closure(n) for n in funcs}
    return PARSER


def literal(v):
    v = v.strip()
    if v == "kInt32Max":
        return INT32_MAX
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return None  # symbolic (e.g. limits.max_n): not checked


# ---- tests ----

def test_document_is_openapi_3(doc):
    assert str(doc["openapi"]).startswith("3.")
    assert doc["info"]["title"]
    # Every $ref resolves.
    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node:
                resolve(doc, node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(doc)


def test_paths_match_registered_routes(doc):
    source = routes_from_source()
    documented = {(p, m) for p, ops in doc["paths"].items() for m in ops
                  if m in ("get", "post", "put", "delete", "patch")}
    assert documented == set(source), (
        f"undocumented: {sorted(set(source) - documented)}; "
        f"not served: {sorted(documented - set(source))}")


def test_security_matches_auth(doc):
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    for (path, method), needs_auth in routes_from_source().items():
        op = doc["paths"][path][method]
        has = any("bearerAuth" in s for s in op.get("security", []))
        assert has == needs_auth, f"{method.upper()} {path}: security {op.get('security')}"
        if needs_auth:
            assert "401" in op["responses"], f"{path} needs auth but has no 401"


BODY_ROUTES = {
    "/v1/completions": ("ParseCompletionRequest", "CompletionRequest"),
    "/v1/chat/completions": ("ParseChatRequest", "ChatCompletionRequest"),
    "/tokenize": ("ParseTokenizeRequest", "TokenizeRequest"),
    "/detokenize": ("ParseDetokenizeRequest", "DetokenizeRequest"),
}


# Routes whose body is translated into a chat completions body: the
# translator, its source file and the schema.
TRANSLATED_ROUTES = {
    "/v1/messages": ("TranslateAnthropicRequest", "anthropic_request.cc", "MessagesRequest"),
    "/v1/messages/count_tokens": ("TranslateAnthropicRequest", "anthropic_request.cc",
                                  "MessagesRequest"),
    "/v1/responses": ("TranslateResponsesRequest", "responses_request.cc", "ResponsesRequest"),
}


@pytest.mark.parametrize("path", sorted(TRANSLATED_ROUTES))
def test_translated_fields_match_translator(doc, path):
    translator, source, schema = TRANSLATED_ROUTES[path]
    handlers = "\n".join(p.read_text() for p in SERVER.glob("routes_*.cc"))
    assert translator + "(" in handlers
    body = doc["paths"][path]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"]["$ref"].endswith("/" + schema)
    # The top-level keys the translator reads: Field(j, "key") and the
    # for (const char* k : {...}) loops over Field(j, k).
    text = (SERVER / source).read_text()
    keys = set(re.findall(r'Field\(j, "(\w+)"\)', text))
    for group in re.findall(r'for \(const char\* k : \{([^}]*)\}\) \{\s*if \(const json\* v = '
                            r'Field\(j, k\)', text):
        keys |= set(re.findall(r'"(\w+)"', group))
    props = doc["components"]["schemas"][schema]["properties"]
    assert set(props) == keys, (
        f"{schema}: documented-only {sorted(set(props) - keys)}, undocumented {sorted(keys - set(props))}")


def test_every_post_route_has_a_checked_body(doc):
    handlers = "\n".join(p.read_text() for p in SERVER.glob("routes_*.cc"))
    for (path, method) in routes_from_source():
        if method != "post" or path in TRANSLATED_ROUTES:
            continue
        assert path in BODY_ROUTES, f"POST {path}: add it to BODY_ROUTES"
        parser, schema = BODY_ROUTES[path]
        assert parser + "(" in handlers, f"{parser} not used by the handlers"
        body = doc["paths"][path]["post"]["requestBody"]
        ref = body["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/" + schema)


@pytest.mark.parametrize("path", sorted(BODY_ROUTES))
def test_request_fields_match_parser(doc, path):
    parser, schema = BODY_ROUTES[path]
    keys, required, _ = parser_info()[parser]
    top = keys.get("f", set()) | keys.get("j", set())
    props, req, any_of = flatten(doc, {"$ref": f"#/components/schemas/{schema}"})
    assert read_keys(props) == top, (
        f"{schema}: documented-only {sorted(read_keys(props) - top)}, "
        f"undocumented {sorted(top - read_keys(props))}")
    assert req == required, f"{schema}: required {sorted(req)} vs parser {sorted(required)}"
    if path == "/tokenize":
        alternatives = {k for alt in any_of for k in alt}
        assert {"prompt", "messages"} <= alternatives


def test_nested_schemas_match_parser(doc):
    keys, _, _ = parser_info()["ParseChatRequest"]
    schemas = doc["components"]["schemas"]
    nested = {
        "m": "ChatMessage",          # messages[i]
        "part": "ContentPart",       # messages[i].content[j]
        "call": "ToolCall",          # messages[i].tool_calls[j]
        "fn": "ToolCallFunction",    # ...function
    }
    for recv, name in nested.items():
        props, _, _ = flatten(doc, schemas[name])
        assert read_keys(props) == keys.get(recv, set()), (
            f"{name}: documented {sorted(read_keys(props))}, parser reads {sorted(keys.get(recv, set()))}")
    so_keys = keys.get("so", set())
    so_props = schemas["SamplingParams"]["properties"]["stream_options"]["properties"]
    assert set(so_props) == so_keys
    roles = re.search(r"kRoles\[\] = \{([^}]*)\}", parser_text())
    source_roles = set(re.findall(r'"(\w+)"', roles.group(1)))
    assert set(schemas["ChatMessage"]["properties"]["role"]["enum"]) == source_roles


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_ranges_match_parser(doc, path):
    parser, schema = BODY_ROUTES[path]
    _, _, bounds = parser_info()[parser]
    props, _, _ = flatten(doc, {"$ref": f"#/components/schemas/{schema}"})
    assert bounds, "no bounds parsed"
    for key, (kind, lo, hi, rest) in bounds.items():
        p = props[key]
        lo_v, hi_v = literal(lo), literal(hi)
        if kind == "Int" and lo.startswith("std::numeric_limits"):
            assert p["type"] == "integer" and p.get("format") == "int64", key
            continue
        assert p["type"] == ("number" if kind == "Float" else "integer"), key
        if lo_v is not None:
            assert p.get("minimum") == lo_v, f"{key}: minimum {p.get('minimum')} vs {lo}"
        if hi_v is not None:
            assert p.get("maximum") == hi_v, f"{key}: maximum {p.get('maximum')} vs {hi}"
        if kind == "Float":
            lo_open = rest.split(",")[1].strip() == "true"
            assert bool(p.get("exclusiveMinimum", False)) == lo_open, key
    # Limits that are not literal arguments: named constants in the header.
    text = parser_text()
    header = (SERVER / "openai_request.h").read_text()

    def const(name):
        m = re.search(rf"constexpr int {name} = (\d+);", header)
        assert m, f"{name} not found in openai_request.h"
        assert name in text, f"{name} not used by the parser"
        return int(m.group(1))

    stop = props["stop"]["oneOf"]
    assert stop[1]["maxItems"] == const("kMaxStopStrings")
    assert stop[0]["maxLength"] == const("kMaxStopChars")
    assert stop[1]["items"]["maxLength"] == const("kMaxStopChars")
    assert props["logit_bias"]["maxProperties"] == const("kMaxLogitBiasEntries")
    if path == "/v1/chat/completions":
        assert props["messages"]["maxItems"] == const("kMaxMessages")
    bias = re.search(r"bias\.get<double>\(\) < (-?\d+)[^\n]*\n[^\n]*> (\d+)", text)
    assert props["logit_bias"]["additionalProperties"]["minimum"] == int(bias.group(1))
    assert props["logit_bias"]["additionalProperties"]["maximum"] == int(bias.group(2))
    cfg = (SERVER / "server_config.h").read_text()
    max_n = int(re.search(r"int max_n = (\d+);", cfg).group(1))
    assert props["n"]["maximum"] == max_n
    max_seqs = int(re.search(r"int max_sequences = (\d+);", cfg).group(1))
    assert f"`max_sequences` (default {max_seqs})" in " ".join(props["n"]["description"].split())
    if path == "/v1/completions":
        assert props["prompt"]["oneOf"][1]["maxItems"] == const("kMaxPrompts")


def test_error_responses(doc):
    text = (SERVER / "api_error.cc").read_text()
    statuses = {int(s) for s in re.findall(r"return Make\((\d{3}),", text)}
    statuses.add(431)  # http_session.cc: headers over max_header_bytes
    assert "431" in (SERVER / "http_session.cc").read_text()
    responses = doc["components"]["responses"]
    documented = set()
    for path_ops in doc["paths"].values():
        for op in path_ops.values():
            for code, r in op["responses"].items():
                documented.add(int(code))
                r = resolve(doc, r)
                if int(code) >= 400 and r is not responses["NotReady"]:
                    schema = r["content"]["application/json"]["schema"]
                    # Anthropic's routes answer in Anthropic's error shape.
                    want = "AnthropicError" if r is responses["AnthropicError"] else "Error"
                    assert schema["$ref"] == "#/components/schemas/" + want, code
    documented.add(404)  # unmatched paths: components/responses/NotFound
    assert "NotFound" in responses
    assert statuses <= documented, f"undocumented statuses {sorted(statuses - documented)}"
    types = set(re.findall(r'Make\(\d{3}, [^,]+,\s*"(\w+)"', text))
    err = doc["components"]["schemas"]["Error"]["properties"]["error"]
    assert types == set(err["properties"]["type"]["enum"])
    codes = set(re.findall(r'"\w+_error", \{\}, "(\w+)"', text))
    assert codes <= set(err["properties"]["code"]["enum"])
    for name in ("TooManyRequests", "Unavailable"):
        assert "Retry-After" in responses[name]["headers"]
    assert "Allow" in responses["MethodNotAllowed"]["headers"]


def test_content_types(doc):
    for path in ("/v1/completions", "/v1/chat/completions"):
        content = doc["paths"][path]["post"]["responses"]["200"]["content"]
        assert {"application/json", "text/event-stream"} <= set(content)
    assert "text/event-stream" in (SERVER / "routes_generate.cc").read_text()
    metrics = doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    assert list(metrics) == ["text/plain"]
    assert '"text/plain' in (SERVER / "routes_info.cc").read_text()


def test_effective_config_keys(doc):
    text = (SERVER / "routes_info.cc").read_text()
    body = text[text.index("void HandleEffectiveConfig"):]
    written = set(re.findall(r'\{"(\w+)",', body))
    schema = doc["components"]["schemas"]["EffectiveConfig"]
    documented = set(schema["properties"])
    for section in schema["properties"].values():
        documented |= set(section.get("properties", {}))
    assert written == documented, (
        f"undocumented {sorted(written - documented)}, stale {sorted(documented - written)}")
