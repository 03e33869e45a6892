"""The first run chats: a fresh `weft serve` on the default model
(SmolLM2-135M-Instruct, Q4_1) answers chat completions through the openai
SDK, and agrees with llama.cpp's llama-server token by token when fed
llama-server's own answers (tests/data/chat/smollm2_llama_server.json, made
by tools/make_chat_goldens.py).

Env: WEFT_BINARY, WEFT_DEFAULT_MODEL (set by ctest).
"""
import http.client
import json
import os
import re

import pytest

from conftest import CHAT_MODEL, post_json as post

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "chat",
                      "smollm2_llama_server.json")
# Any chat-template control marker: ChatML, Llama 3, Gemma, <s>-style.
MARKER = re.compile(r"<\|[A-Za-z_]+\|>|<(start|end)_of_turn>|</?s>")


@pytest.fixture(scope="module")
def golden():
    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def smol(weft_serve_factory):
    return weft_serve_factory(CHAT_MODEL, "--kv-memory", "256M", "--ctx",
                              "2048", "--max-seqs", "4", "--threads", "2")


def test_default_model_uses_its_own_template(smol):
    conn = http.client.HTTPConnection("127.0.0.1", smol.port, timeout=60)
    conn.request("GET", "/v1/effective-config")
    cfg = json.loads(conn.getresponse().read())
    conn.close()
    assert cfg["model"]["chat_template"] == "gguf"
    assert cfg["model"]["quantization"] == "Q4_1"


def test_three_chats_answer_and_stop(client, golden):
    """Every chat gets an answer free of template markers, and at least two
    of the three end their turn by themselves. Not all three: at
    temperature 0 this 135M model may loop on a line of a poem, and which
    prompt does is a near tie that rounding flips (the haiku's first token
    is "The" at -1.56 against "In" at -1.68 with f16 KV; "In" wins with f32
    KV and in llama-server). test_chats_stop_after_their_answers checks
    every chat's end of turn."""
    stopped = 0
    for chat in golden["chats"]:
        r = client.chat.completions.create(
            model="weft", messages=chat["messages"], temperature=0,
            max_tokens=golden["max_tokens"])
        choice = r.choices[0]
        text = choice.message.content
        assert text and text.strip(), chat["messages"]
        assert choice.finish_reason in ("stop", "length"), choice.finish_reason
        assert not MARKER.search(text), text
        stopped += choice.finish_reason == "stop"
    assert stopped >= 2


def test_chats_stop_after_their_answers(smol, golden):
    """Fed llama-server's answer to each chat, the model ends its turn
    within a few tokens and the server stops there."""
    for chat in golden["chats"]:
        assert chat["finish_reason"] == "stop"
        status, body = post(smol, "/v1/completions", {
            "prompt": chat["prompt_ids"] + chat["answer_ids"],
            "max_tokens": 4, "temperature": 0})
        assert status == 200, body
        choice = body["choices"][0]
        assert choice["finish_reason"] == "stop", (chat["messages"], choice)
        assert not choice["text"].strip(), choice["text"]


def test_prompt_tokens_match_llama_server(smol, golden):
    for chat in golden["chats"]:
        status, body = post(smol, "/tokenize", {
            "messages": chat["messages"], "add_generation_prompt": True})
        assert status == 200, body
        assert body["tokens"] == chat["prompt_ids"]


def test_teacher_forced_agreement_with_llama_server(smol, golden):
    agree = positions = 0
    diff_sum = 0.0
    for chat in golden["chats"]:
        prompt, answer = chat["prompt_ids"], chat["answer_ids"]
        status, body = post(smol, "/v1/completions", {
            "prompt": prompt + answer, "max_tokens": 1, "temperature": 0,
            "echo": True, "logprobs": 1})
        assert status == 200, body
        lp = body["choices"][0]["logprobs"]
        for k, ref in enumerate(chat["answer_logprobs"]):
            pos = len(prompt) + k
            top = lp["top_logprobs"][pos]
            best = max(top.items(), key=lambda kv: kv[1])[0]
            # Weft's own text for llama-server's token at this position.
            agree += best == lp["tokens"][pos]
            diff_sum += abs(lp["token_logprobs"][pos] - ref)
            positions += 1
    assert positions > 0
    top1 = agree / positions
    mean_diff = diff_sum / positions
    print(f"top-1 agreement {top1:.3f} over {positions} positions, "
          f"mean |logprob diff| {mean_diff:.4f}")
    assert top1 >= 0.90
    assert mean_diff <= 0.15
