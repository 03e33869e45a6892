"""Structured outputs end to end: a fresh `weft serve` on the default model
(SmolLM2-135M-Instruct) driven with the official `openai` SDK. json_schema
output parses and validates (the `jsonschema` package) at temperature 0.8
over 20 seeds (issue #33); regex and choice outputs match; the vLLM and
llama-server field forms work; an unsupported keyword, or two constraints,
is a 400; a constrained request gives the same tokens alone and next to
others.

Kept short (small schemas, few tokens, requests sent concurrently) for a
2-core CI machine.

Env: WEFT_BINARY, WEFT_DEFAULT_MODEL (set by ctest).
"""
import concurrent.futures
import http.client
import json
import re

import jsonschema
import openai
import pytest

from conftest import alone_and_batched, post_json as post

# Also bench/grammar_schemas.json's "fruit" (weft bench grammar --schema fruit).
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 12},
        "color": {"enum": ["red", "green", "blue"]},
        "size": {
            "type": "object",
            "properties": {
                "w": {"type": "integer", "minimum": 0, "maximum": 99},
                "h": {"type": "integer", "minimum": 0, "maximum": 99},
            },
            "required": ["w", "h"],
            "additionalProperties": False,
        },
        "tags": {"type": "array", "items": {"enum": ["new", "old"]}, "maxItems": 2},
    },
    "required": ["name", "color", "size", "tags"],
    "additionalProperties": False,
}
MSGS = [{"role": "user", "content": "Describe a fruit as JSON."}]


def chat(client, **kw):
    kw.setdefault("max_tokens", 24)
    kw.setdefault("temperature", 0)
    return client.chat.completions.create(model="weft", messages=MSGS, **kw)


def test_json_schema_validates_over_seeds(client):
    fmt = {"type": "json_schema",
           "json_schema": {"name": "fruit", "schema": SCHEMA, "strict": True}}

    def one(seed):
        return chat(client, response_format=fmt, temperature=0.8, seed=seed,
                    max_tokens=200).choices[0]

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        choices = list(pool.map(one, range(20)))
    for seed, c in enumerate(choices):
        assert c.finish_reason == "stop", (seed, c.message.content)
        value = json.loads(c.message.content)
        jsonschema.validate(value, SCHEMA)


def test_regex_and_choice_match(client, smol):
    r = chat(client, extra_body={"structured_outputs": {"regex": r"[A-Z][a-z]{2,8}-\d{3}"}})
    assert r.choices[0].finish_reason == "stop"
    assert re.fullmatch(r"[A-Z][a-z]{2,8}-\d{3}", r.choices[0].message.content)
    choices = ["apple", "banana", "cherry"]
    for body in ({"structured_outputs": {"choice": choices}}, {"guided_choice": choices}):
        r = chat(client, temperature=0.8, seed=3, extra_body=body)
        assert r.choices[0].message.content in choices
    # Completions, and llama-server's GBNF `grammar` and `json_schema` fields.
    r = client.completions.create(model="weft", prompt="Yes or no?", max_tokens=8,
                                  temperature=0, extra_body={"grammar": 'root ::= "yes" | "no"'})
    assert r.choices[0].text in ("yes", "no")
    status, body = post(smol, "/v1/completions", {
        "prompt": "A number:", "max_tokens": 8, "temperature": 0,
        "json_schema": {"type": "integer", "minimum": 10, "maximum": 99}})
    assert status == 200, body
    assert 10 <= json.loads(body["choices"][0]["text"]) <= 99


def test_cut_short_is_length(client):
    r = chat(client, max_tokens=3, extra_body={"guided_regex": "[a-z]{20}"})
    assert r.choices[0].finish_reason == "length"
    assert re.fullmatch(r"[a-z]*", r.choices[0].message.content)


def test_unsupported_and_conflicts_are_400(smol, client):
    bad = {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "string", "contentEncoding": "base64"}}}
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, response_format=bad)
    assert "contentEncoding" in str(e.value)
    status, body = post(smol, "/v1/chat/completions", {
        "messages": MSGS, "guided_regex": "a+", "grammar": 'root ::= "a"'})
    assert status == 400 and body["error"]["param"] == "grammar", body
    status, body = post(smol, "/v1/completions", {
        "prompt": "x", "guided_regex": "(a)\\1"})
    assert status == 400 and body["error"]["param"] == "guided_regex", body


def test_constrained_tokens_same_alone_and_batched(client):
    fmt = {"type": "json_schema", "json_schema": {"name": "fruit", "schema": SCHEMA}}

    def constrained():
        return chat(client, response_format=fmt, temperature=0.8, seed=11,
                    max_tokens=40, logprobs=True).choices[0]

    def other(i):
        return chat(client, temperature=0.8, seed=100 + i, max_tokens=30)

    alone, batched = alone_and_batched(constrained, other)
    tokens = lambda c: [t.token for t in c.logprobs.content]
    assert tokens(batched) == tokens(alone)
    assert batched.message.content == alone.message.content


def test_effective_config_lists_forms(smol):
    conn = http.client.HTTPConnection("127.0.0.1", smol.port, timeout=60)
    conn.request("GET", "/v1/effective-config")
    cfg = json.loads(conn.getresponse().read())
    conn.close()
    assert {"response_format.json_schema", "structured_outputs.regex", "guided_choice",
            "json_schema", "grammar"} <= set(cfg["structured_outputs"])
