"""Anthropic Messages and OpenAI Responses end to end: a fresh `weft serve`
on the default model (SmolLM2-135M-Instruct) driven with the official
`anthropic` and `openai` SDKs, whose own response models and stream
parsers must accept every body and event: plain and streamed text, a
forced tool round trip (tool_use -> tool_result -> final answer), stop
sequences, max_tokens, count_tokens, and a client that leaves mid-stream
aborts the engine request.

Kept short (few tokens) for a 2-core CI machine.

Env: WEFT_BINARY, WEFT_DEFAULT_MODEL (set by ctest).
"""
import json
import time

import pytest

from conftest import get_json, openai_client

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}},
    "required": ["city"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def claude(smol):
    import anthropic
    return anthropic.Anthropic(base_url=smol.url, api_key="unused", max_retries=0, timeout=300)


def test_messages_text_and_max_tokens(claude):
    m = claude.messages.create(model="weft", max_tokens=8, system="Be brief.",
                               messages=[{"role": "user", "content": "Count: 1, 2, 3,"}])
    assert m.type == "message" and m.role == "assistant"
    assert m.content[0].type == "text" and m.content[0].text
    assert m.stop_reason in ("max_tokens", "end_turn")
    assert m.usage.input_tokens > 0 and 0 < m.usage.output_tokens <= 8
    if m.stop_reason == "max_tokens":
        assert m.usage.output_tokens == 8


def test_messages_stream_equals_whole(claude):
    # Greedy (this SDK version no longer takes `temperature` as an argument).
    kw = dict(model="weft", max_tokens=12, extra_body={"temperature": 0},
              messages=[{"role": "user", "content": "Name three colors."}])
    whole = claude.messages.create(**kw)
    with claude.messages.stream(**kw) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text == whole.content[0].text
    assert final.content[0].text == text
    assert final.stop_reason == whole.stop_reason
    assert final.usage.output_tokens == whole.usage.output_tokens


def test_messages_stop_sequence(claude):
    kw = dict(model="weft", max_tokens=24, extra_body={"temperature": 0},
              messages=[{"role": "user", "content": "Count from 1 to 10."}])
    text = claude.messages.create(**kw).content[0].text
    stop = next(d for d in "5432" if d in text)
    m = claude.messages.create(stop_sequences=[stop], **kw)
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop
    assert m.content[0].text == text[:text.index(stop)]
    with claude.messages.stream(stop_sequences=[stop], **kw) as s:
        final = s.get_final_message()
    assert final.stop_reason == "stop_sequence" and final.stop_sequence == stop


def test_messages_tool_round_trip(claude):
    tools = [{"name": "get_weather", "description": "Current weather in a city",
              "input_schema": WEATHER}]
    # One call, greedy: with parallel calls allowed this model keeps adding
    # calls (16 may be forced) and runs into max_tokens before the JSON ends.
    forced = {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}
    greedy = {"temperature": 0}
    m = claude.messages.create(model="weft", max_tokens=200, tools=tools, tool_choice=forced,
                               messages=ASK, extra_body=greedy)
    assert m.stop_reason == "tool_use"
    call = next(b for b in m.content if b.type == "tool_use")
    assert call.name == "get_weather" and isinstance(call.input["city"], str)
    with claude.messages.stream(model="weft", max_tokens=200, tools=tools, tool_choice=forced,
                                messages=ASK, extra_body=greedy) as s:
        streamed = s.get_final_message()
    scall = next(b for b in streamed.content if b.type == "tool_use")
    assert scall.name == "get_weather" and isinstance(scall.input["city"], str)
    follow = ASK + [{"role": "assistant", "content": m.content},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                                  "content": "Sunny, 21 C"}]}]
    final = claude.messages.create(model="weft", max_tokens=30, tools=tools, messages=follow,
                                   tool_choice={"type": "none"})
    assert final.content[0].type == "text" and final.content[0].text
    assert final.stop_reason in ("end_turn", "max_tokens")


def test_count_tokens_and_errors(claude):
    import anthropic
    n = claude.messages.count_tokens(model="weft", messages=ASK)
    assert n.input_tokens > 5
    m = claude.messages.create(model="weft", max_tokens=1, messages=ASK)
    assert m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0) == n.input_tokens
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model="weft", max_tokens=5, messages=ASK + [
            {"role": "assistant", "content": "It is"}])
    assert "prefill" in str(e.value)


def test_responses_text_stream_and_tools(smol):
    client = openai_client(smol)
    r = client.responses.create(model="weft", input="Name three colors.", instructions="Be brief.",
                                max_output_tokens=12, temperature=0)
    assert r.status in ("completed", "incomplete") and r.output_text
    with client.responses.stream(model="weft", input="Name three colors.",
                                 instructions="Be brief.", max_output_tokens=12,
                                 temperature=0) as s:
        events = list(s)
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    # The SDK's get_final_response() wants response.completed; a response cut
    # at max_output_tokens ends with response.incomplete, as OpenAI's does.
    assert events[-1].type in ("response.completed", "response.incomplete")
    assert deltas == r.output_text == events[-1].response.output_text
    tools = [{"type": "function", "name": "get_weather", "parameters": WEATHER,
              "description": "Current weather in a city"}]
    r = client.responses.create(model="weft", input=ASK, tools=tools, max_output_tokens=200,
                                tool_choice={"type": "function", "name": "get_weather"},
                                temperature=0, parallel_tool_calls=False)
    call = next(o for o in r.output if o.type == "function_call")
    assert isinstance(json.loads(call.arguments)["city"], str)
    with client.responses.stream(model="weft", input=ASK, tools=tools, max_output_tokens=200,
                                 tool_choice="required", temperature=0,
                                 parallel_tool_calls=False) as s:
        final = s.get_final_response()
    assert any(o.type == "function_call" for o in final.output)
    follow = ASK + [{"type": "function_call", "call_id": call.call_id, "name": call.name,
                     "arguments": call.arguments},
                    {"type": "function_call_output", "call_id": call.call_id,
                     "output": "Sunny, 21 C"}]
    r = client.responses.create(model="weft", input=follow, tools=tools, tool_choice="none",
                                max_output_tokens=30)
    assert r.output_text


def test_disconnect_aborts(smol, claude):
    def aborts():
        return get_json(smol, "/v1/effective-config")["counters"]["aborts"]
    long = [{"role": "user", "content": "Count from 1 to 500, one number per line."}]
    client = openai_client(smol)
    for leave in (
            lambda: claude.messages.stream(model="weft", max_tokens=400, messages=long),
            lambda: client.responses.stream(model="weft", input=long, max_output_tokens=400)):
        before = aborts()
        with leave() as s:
            for i, _ in enumerate(s):
                if i == 5:
                    break
        deadline = time.monotonic() + 30
        while aborts() == before:
            assert time.monotonic() < deadline, "the engine request was not aborted"
            time.sleep(0.1)
