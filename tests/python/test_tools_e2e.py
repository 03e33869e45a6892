"""Tool calling and reasoning end to end: a fresh `weft serve` on the default
model (SmolLM2-135M-Instruct, whose template has no tool support: the
generic JSON format, as llama-server) driven with the official `openai` SDK.
tool_choice "required" and a named function give calls whose arguments
validate against the tool's schema, streamed and not; "none" gives content;
a forced call's tokens are the same alone and batched. A second server
serves the same model with a DeepSeek R1 template (its prompt opens
<think>): the thinking comes back as reasoning_content.

Kept short (few tokens) for a 2-core CI machine.

Env: WEFT_BINARY, WEFT_DEFAULT_MODEL, WEFT_SHARED_MODELS_DIR (set by ctest).
"""
import json
import os

import jsonschema
import pytest

from conftest import (CHAT_MODEL, SHARED, alone_and_batched, get_json, openai_client,
                      post_json as post)

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 20},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
TIME = {
    "type": "object",
    "properties": {"zone": {"type": "string", "maxLength": 10}},
    "required": ["zone"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": WEATHER}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Current time in a time zone",
        "parameters": TIME}},
]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
MSGS = [{"role": "user", "content": "What is the weather in Paris?"}]
R1_TEMPLATE = os.path.join(SHARED, "chat-templates",
                           "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja")


def chat(client, **kw):
    kw.setdefault("max_tokens", 200)
    kw.setdefault("messages", MSGS)
    kw.setdefault("tools", TOOLS)
    return client.chat.completions.create(model="weft", **kw)


def check_calls(calls, allowed):
    assert calls, "no tool calls"
    for c in calls:
        assert c.type == "function"
        assert c.id.startswith("call_") and len(c.id) > 5, c.id
        assert c.function.name in allowed, c.function.name
        jsonschema.validate(json.loads(c.function.arguments),
                            SCHEMAS[c.function.name])


def stream_calls(client, **kw):
    """Streams a request; returns (content, calls as name/arguments/id, finish)."""
    content, calls, finish = "", {}, None
    for chunk in chat(client, stream=True, **kw):
        if not chunk.choices:
            continue
        ch = chunk.choices[0]
        finish = ch.finish_reason or finish
        d = ch.delta
        content += d.content or ""
        for t in d.tool_calls or []:
            if t.index not in calls:
                # The first delta of a call: id, type, name, empty arguments.
                assert t.id and t.type == "function" and t.function.name, t
                assert t.function.arguments == "", t
                calls[t.index] = {"id": t.id, "name": t.function.name, "arguments": ""}
            else:
                assert t.id is None and t.function.name is None, t
                calls[t.index]["arguments"] += t.function.arguments or ""
    assert sorted(calls) == list(range(len(calls)))
    return content, [calls[i] for i in sorted(calls)], finish


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_required_gives_valid_calls(client, seed):
    c = chat(client, tool_choice="required", temperature=0.8, seed=seed).choices[0]
    assert c.finish_reason == "tool_calls", c
    assert c.message.content is None, c.message.content
    check_calls(c.message.tool_calls, SCHEMAS)


def test_named_function_is_called(client):
    choice = {"type": "function", "function": {"name": "get_time"}}
    c = chat(client, tool_choice=choice, temperature=0.8, seed=5).choices[0]
    assert c.finish_reason == "tool_calls"
    check_calls(c.message.tool_calls, {"get_time"})


def test_not_parallel_is_one_call(client):
    c = chat(client, tool_choice="required", parallel_tool_calls=False,
             temperature=0.8, seed=4).choices[0]
    assert len(c.message.tool_calls) == 1
    check_calls(c.message.tool_calls, SCHEMAS)


@pytest.mark.parametrize("choice", ["required", {"type": "function",
                                                 "function": {"name": "get_weather"}}])
def test_streamed_calls_equal_whole(client, choice):
    kw = dict(tool_choice=choice, temperature=0.8, seed=9)
    whole = chat(client, **kw).choices[0]
    content, calls, finish = stream_calls(client, **kw)
    assert finish == "tool_calls"
    assert content == ""
    assert [(c["name"], c["arguments"]) for c in calls] == [
        (t.function.name, t.function.arguments) for t in whole.message.tool_calls]
    for c in calls:
        jsonschema.validate(json.loads(c["arguments"]), SCHEMAS[c["name"]])


def test_none_gives_content(client):
    c = chat(client, tool_choice="none", temperature=0, max_tokens=16).choices[0]
    assert not c.message.tool_calls
    assert c.finish_reason in ("stop", "length")
    assert c.message.content


def test_auto_is_content_or_calls_without_markup(client):
    for seed in (1, 2):
        c = chat(client, tool_choice="auto", temperature=0.8, seed=seed).choices[0]
        if c.message.tool_calls:
            assert c.finish_reason == "tool_calls"
            check_calls(c.message.tool_calls, SCHEMAS)
        else:
            assert '"response"' not in (c.message.content or "")


def test_auto_streamed_equals_whole(client):
    # The generic format's {"response": "..."} streams its text as content.
    kw = dict(tool_choice="auto", temperature=0, max_tokens=40)
    whole = chat(client, **kw).choices[0]
    content, calls, finish = stream_calls(client, **kw)
    assert content == (whole.message.content or "")
    assert [(c["name"], c["arguments"]) for c in calls] == [
        (t.function.name, t.function.arguments) for t in whole.message.tool_calls or []]
    assert finish == whole.finish_reason


def test_forced_call_same_alone_and_batched(client):
    def forced():
        return chat(client, tool_choice="required", temperature=0.8, seed=21,
                    logprobs=True).choices[0]

    def other(i):
        return client.chat.completions.create(
            model="weft", messages=MSGS, temperature=0.8, seed=100 + i, max_tokens=30)

    alone, batched = alone_and_batched(forced, other)
    tokens = lambda c: [t.token for t in c.logprobs.content]
    assert tokens(batched) == tokens(alone)
    assert batched.message.tool_calls[0].function == alone.message.tool_calls[0].function


def test_bad_tool_requests_are_400(smol):
    bad_schema = [{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object", "patternProperties": {"^a": {}}}}}]
    for body, param in [
        ({"tool_choice": "required", "tools": bad_schema}, "tools"),
        ({"tool_choice": {"type": "function", "function": {"name": "nope"}},
          "tools": TOOLS}, "tool_choice"),
        ({"tool_choice": "required"}, "tool_choice"),
    ]:
        status, out = post(smol, "/v1/chat/completions",
                           {"messages": MSGS, "max_tokens": 4, **body})
        assert status == 400 and out["error"]["param"] == param, out


def test_effective_config_lists_tool_calling(smol):
    cfg = get_json(smol, "/v1/effective-config")["tool_calling"]
    assert cfg["tool_choice"] == ["none", "auto", "required", "function"]
    assert cfg["format"] == "generic"
    assert {"hermes", "llama3", "mistral", "functionary_v3.1", "functionary_v3.2",
            "firefunction_v2", "command_r7b"} <= set(cfg["formats"])


@pytest.fixture(scope="module")
def r1(weft_serve_factory):
    if not os.path.exists(R1_TEMPLATE):
        pytest.skip("no DeepSeek R1 template in " + SHARED)
    s = weft_serve_factory(CHAT_MODEL, "--kv-memory", "128M", "--ctx", "512",
                           "--threads", "2", "--chat-template", R1_TEMPLATE)
    return openai_client(s)


def test_reasoning_content_streamed_and_not(r1):
    kw = dict(model="weft", messages=[{"role": "user", "content": "What is 2+2?"}],
              temperature=0, max_tokens=12)
    whole = r1.chat.completions.create(**kw).choices[0]
    reasoning = whole.message.model_extra.get("reasoning_content")
    # The prompt opened <think> and 12 tokens do not close it.
    assert reasoning, whole.message
    assert not whole.message.content
    streamed_reasoning, streamed_content = "", ""
    for chunk in r1.chat.completions.create(stream=True, **kw):
        if chunk.choices:
            d = chunk.choices[0].delta
            streamed_reasoning += (d.model_extra or {}).get("reasoning_content") or ""
            streamed_content += d.content or ""
    assert streamed_reasoning == reasoning
    assert streamed_content == ""
