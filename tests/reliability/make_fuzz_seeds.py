#!/usr/bin/env python3
"""Writes the hand-written fuzz seeds (tests/fuzz/corpus/<target>/seed_*).

The rest of each corpus comes from fuzzing (`-merge=1`, see
docs/reliability.md). Re-running this only rewrites the seed_* files.

usage: .venv/bin/python tests/reliability/make_fuzz_seeds.py [SHARED_MODELS_DIR]
"""
import glob
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', 'fuzz', 'corpus')
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, '..', '..', '..', 'shared', 'models')


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, 'seed_' + name), 'wb') as f:
        f.write(data)


def tokenizer_seeds():
    # flags byte (see tokenizer_fuzz.cc) + payload
    texts = {
        'hello': 'Hello world',
        'spaces': '   leading and  double  spaces\n\nnewlines\ttabs ',
        'unicode': 'Grüße, 世界! Привет 🦙 ¿qué? naïve café',
        'code': 'def f(x):\n    return x**2  # comment\n',
        'numbers': '3.14159 1,000,000 2024-01-01 0x1F',
        'special': '<s>Hi</s> <unk> <|endoftext|> [INST] text [/INST]',
        'contractions': "I'm you're we'll they've don't 'S 's",
        'invalid_utf8': b'ab\xff\xfe\xc3(\xe2\x82 \xf0\x9f\x98',
        'marker': 'a\u2581b \u2581 c',
        'empty': '',
    }
    for i, (k, t) in enumerate(texts.items()):
        data = t if isinstance(t, bytes) else t.encode()
        for vocab in (0, 1):
            flags = (vocab | (0x08 if i % 2 else 0) | (0x10 if i % 3 == 0 else 0)
                     | (0x20 if i % 4 == 1 else 0))
            put('tokenizer', f'enc_{k}_{vocab}', bytes([flags]) + data)
    ids = [1, 15043, 3186, 29871, 13, 0, 2, 259, 31999, 50256, 198]
    mod = b''.join(struct.pack('<I', x)[:3] for x in ids)
    for vocab in (0, 1):
        put('tokenizer', f'dec_mod_{vocab}', bytes([vocab | (2 << 1)]) + mod)
        put('tokenizer', f'dec_mod_render_{vocab}', bytes([vocab | (2 << 1) | 0x20 | 0x40]) + mod)
    euro = b''.join(struct.pack('<I', 3 + b)[:3] for b in b'\xe2\x82\xac\xe2\x82')
    put('tokenizer', 'dec_bytes_0', bytes([2 << 1]) + euro)
    raw = b''.join(struct.pack('<i', x) for x in [1, 100, -1, 2**31 - 1, 32000, 50257, -2**31])
    for vocab in (0, 1):
        put('tokenizer', f'dec_raw_{vocab}', bytes([vocab | (3 << 1)]) + raw)

def server_seeds():
    # selector byte (see server_fuzz.cc) + body
    def sel(route, vocab=2, maxn=2): return bytes([route | (vocab << 2) | (maxn << 4)])
    comp = [
     {'model': 'weft', 'prompt': 'Once upon a time', 'max_tokens': 16, 'temperature': 0.7},
     {'prompt': ['a', 'b'], 'n': 2, 'top_p': 0.9, 'top_k': 40, 'min_p': 0.05, 'seed': 42,
      'stop': ['\n', 'END'], 'echo': True, 'logprobs': 5},
     {'prompt': [1, 2, 3], 'stream': True, 'stream_options': {'include_usage': True},
      'logit_bias': {'15': -100, '7': 2.5}, 'presence_penalty': 0.5, 'frequency_penalty': -0.5,
      'repetition_penalty': 1.1, 'stop_token_ids': [2], 'ignore_eos': True, 'priority': -3,
      'user': 'u1', 'max_completion_tokens': 8},
     {'prompt': [[1, 2], [3]], 'max_tokens': 1.0, 'temperature': None},
     {'prompt': 'x', 'n': 0},
     {'prompt': 'x', 'temperature': 2.5},
     {'prompt': [], 'stop': ''},
    ]
    for i, b in enumerate(comp): put('server', f'completions_{i}', sel(0, i % 4, i % 4) + json.dumps(b).encode())
    chat = [
     {'model': 'weft', 'messages': [{'role': 'system', 'content': 'Be brief.'},
                                    {'role': 'user', 'content': 'Hi!'}], 'max_tokens': 32},
     {'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': 'a'}, {'type': 'text', 'text': 'b'}]}],
      'logprobs': True, 'top_logprobs': 3, 'stream': True},
     {'messages': [{'role': 'user', 'content': 'weather?'},
                   {'role': 'assistant', 'content': None, 'tool_calls': [
                       {'id': 'call_1', 'type': 'function', 'function': {'name': 'get', 'arguments': '{"city":"Paris"}'}}]},
                   {'role': 'tool', 'tool_call_id': 'call_1', 'content': 'sunny', 'name': 'get'}],
      'tools': [{'type': 'function', 'function': {'name': 'get', 'parameters': {'type': 'object'}}}],
      'chat_template_kwargs': {'enable_thinking': False}, 'add_generation_prompt': True},
     {'messages': [{'role': 'wizard', 'content': 'x'}]},
     {'messages': [{'role': 'user', 'content': [{'type': 'image_url', 'image_url': {}}]}]},
     {'messages': [], 'top_logprobs': 2},
    ]
    for i, b in enumerate(chat): put('server', f'chat_{i}', sel(1, i % 4, i % 4) + json.dumps(b).encode())
    tok = [
     {'prompt': 'Hello', 'add_special': False},
     {'content': 'Hello', 'add_special_tokens': True},
     {'messages': [{'role': 'user', 'content': 'Hi'}], 'add_generation_prompt': False},
     {'prompt': 5},
    ]
    for i, b in enumerate(tok): put('server', f'tokenize_{i}', sel(2) + json.dumps(b).encode())
    detok = [{'tokens': [1, 2, 3]}, {'tokens': [-1]}, {'tokens': [1.5]}, {'tokens': 'abc'}, {'tokens': [99999999999999999999]}]
    for i, b in enumerate(detok): put('server', f'detokenize_{i}', sel(3, i % 4) + json.dumps(b).encode())
    put('server', 'not_json', sel(0) + b'{"prompt": "x",')
    put('server', 'not_object', sel(1) + b'[1,2,3]')
    put('server', 'bad_utf8', sel(0) + b'{"prompt": "\xff\xfe"}')
    put('server', 'escapes', sel(0) + b'{"prompt": "\\ud83e\\udd99 \\u0000", "stop": "\\n"}')


CHAT_CTX = {
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                 {"role": "assistant", "content": "Hello!"},
                 {"role": "user", "content": "Weather in Paris?"}],
    "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>"}


def chat_seeds():
    # template source + NUL + JSON context (see chat_fuzz.cc)
    ctx = CHAT_CTX
    ctx_tools = dict(ctx, tools=[{"type": "function", "function": {
        "name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}])
    ctx_tools["messages"] = ctx["messages"] + [
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny"}]
    for i, path in enumerate(sorted(glob.glob(os.path.join(SHARED, 'chat-templates', '*.jinja')))):
        with open(path, 'rb') as f:
            src = f.read()
        c = ctx_tools if 'tool' in path or i % 2 else ctx
        put('chat', os.path.basename(path)[:-6], src + b'\0' + json.dumps(c).encode())
    small = {
        'vars': '{{ bos_token }}{% for m in messages %}{{ m.role | upper }}: {{ m.content | trim }}\n{% endfor %}',
        'if_else': '{% if x is defined and x > 3 %}big{% elif x == 3 %}three{% else %}{{ x | default("none") }}{% endif %}',
        'macro': '{% macro f(a, b=2) %}{{ a ~ b }}{% if a < 5 %}{{ f(a + 1) }}{% endif %}{% endmacro %}{{ f(0) }}',
        'namespace': '{% set ns = namespace(n=0) %}{% for i in range(10) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}',
        'filters': '{{ [3,1,2] | sort | join(",") }} {{ "a b c".split(" ") | length }} {{ {"k": [1, 2.5, none, true]} | tojson }} {{ "x" * 3 }} {{ "%d-%s" % (1, "a") }}',
        'slices': '{{ "hello"[1:-1] }}{{ [1,2,3][::-1] }}{{ messages[0]["content"][:3] }}{{ (1, 2) }}',
        'raise': '{% if messages | length > 1 %}{{ raise_exception("too many messages") }}{% endif %}',
        'loop': '{% for k, v in d.items() if v %}{{ loop.index }}{{ k }}={{ v }}{% if not loop.last %},{% endif %}{% endfor %}',
        'strings': '{{ "Abc".lower() }}{{ "x".startswith("x") }}{{ " a ".strip() }}{{ "a,b".replace(",", ";") }}{{ "%s" | format(1) }}',
        'whitespace': '  {%- if true -%}  a  {%- endif -%}  \n{# comment #}{% raw %}{{ raw }}{% endraw %}',
        'call_block': '{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}inner{% endcall %}',
        'now': '{{ strftime_now("%d %b %Y") }}{{ x.y.z is undefined }}{{ none is none }}',
    }
    for k, v in small.items():
        c = {"x": 4, "d": {"a": 1, "b": 0, "c": "s"}, "messages": ctx["messages"]}
        put('chat', k, v.encode() + b'\0' + json.dumps(c).encode())


if __name__ == '__main__':
    tokenizer_seeds()
    server_seeds()
    chat_seeds()
