#!/usr/bin/env python3
"""Makes tests/data/chat/template_goldens.json: reference renders of real chat
templates by the Python jinja2 package, set up exactly as Hugging Face
transformers' chat_template_utils._compile_jinja_template does:

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[AssistantTracker, loopcontrols])
  filters["tojson"] = json.dumps(x, ensure_ascii=False, indent=None,
                                 separators=None, sort_keys=False)
  globals["raise_exception"] raises TemplateError(message)
  globals["strftime_now"] = datetime.now().strftime  (fixed to FIXED_NOW here)

and rendered like apply_chat_template: render(messages=..., tools=<list or
None>, documents=None, add_generation_prompt=..., bos_token=..., eos_token=...,
**extra_kwargs).

Every template in the shared chat-templates folder (deduplicated by content)
is rendered over every case below, with add_generation_prompt true and
false. Weft's built-in templates (src/chat/builtin_templates.cc, copied here
as BUILTINS) are rendered too. Outputs: the rendered string, or the message of a
raise_exception (kind "raise"), or any other jinja2/Python error (kind
"error"; the C++ renderer must fail too, the message is not compared).

Usage: .venv/bin/python tools/make_template_goldens.py [TEMPLATE_DIR] [OUT]
"""
import datetime
import hashlib
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE_DIR = os.path.join(ROOT, "..", "shared", "models", "chat-templates")
OUT = os.path.join(ROOT, "tests", "data", "chat", "template_goldens.json")
FIXED_NOW = datetime.datetime(2024, 7, 26, 12, 0, 0)
BOS = "<s>"
EOS = "</s>"

# Copies of Weft's built-in templates (src/chat/builtin_templates.cc), for
# the models whose GGUF has none; tests/chat/golden_test.cc checks that they
# are the same text.
CONTENT = "(message['content'] if message['content'] is string else '')"
BUILTINS = {
    "gemma": (
        "{%- if messages and messages[0]['role'] == 'system' -%}\n"
        "{%- set message = messages[0] -%}\n"
        "{%- set prefix = " + CONTENT + " + '\\n\\n' -%}\n"
        "{%- set loop_messages = messages[1:] -%}\n"
        "{%- else -%}\n"
        "{%- set prefix = '' -%}\n"
        "{%- set loop_messages = messages -%}\n"
        "{%- endif -%}\n"
        "{%- for message in loop_messages -%}\n"
        "{%- set role = 'model' if message['role'] == 'assistant' "
        "else message['role'] -%}\n"
        "{{- '<start_of_turn>' + role + '\\n' + (prefix if loop.first else '') + "
        + CONTENT + " | trim + '<end_of_turn>\\n' -}}\n"
        "{%- endfor -%}\n"
        "{%- if add_generation_prompt -%}\n"
        "{{- '<start_of_turn>model\\n' -}}\n"
        "{%- endif -%}\n"),
    "llama3": (
        "{%- for message in messages -%}\n"
        "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
        + CONTENT + " | trim + '<|eot_id|>' -}}\n"
        "{%- endfor -%}\n"
        "{%- if add_generation_prompt -%}\n"
        "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
        "{%- endif -%}\n"),
    "chatml": (
        "{%- for message in messages -%}\n"
        "{{- '<|im_start|>' + message['role'] + '\\n' + " + CONTENT
        + " + '<|im_end|>\\n' -}}\n"
        "{%- endfor -%}\n"
        "{%- if add_generation_prompt -%}\n"
        "{{- '<|im_start|>assistant\\n' -}}\n"
        "{%- endif -%}\n"),
    "plain": (
        "{%- for message in messages -%}\n"
        "{%- if message['role'] == 'system' -%}\n"
        "{{- " + CONTENT + " | trim + '\\n\\n' -}}\n"
        "{%- elif message['role'] == 'user' -%}\n"
        "{{- 'User: ' + " + CONTENT + " | trim + '\\n' -}}\n"
        "{%- elif message['role'] == 'assistant' -%}\n"
        "{{- 'Assistant: ' + " + CONTENT + " | trim + '\\n' -}}\n"
        "{%- else -%}\n"
        "{{- message['role'] | capitalize + ': ' + " + CONTENT
        + " | trim + '\\n' -}}\n"
        "{%- endif -%}\n"
        "{%- endfor -%}\n"
        "{%- if add_generation_prompt -%}\n"
        "{{- 'Assistant:' -}}\n"
        "{%- endif -%}\n"),
}


class GenerationTag(jinja2.ext.Extension):
    """HF's AssistantTracker tag ({% generation %}): renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                         "description": "Temperature unit", "default": "celsius"},
                "days": {"type": "integer", "description": "Forecast days",
                         "minimum": 1, "maximum": 7},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web. Returns “results” & <snippets>.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Query text"},
                "tags": {"type": "array", "items": {"type": "string"},
                         "description": "Filter tags"},
                "limit": {"type": ["integer", "null"], "description": "Max hits"},
                "options": {"type": "object", "description": "Extra options",
                            "properties": {"safe": {"type": "boolean"},
                                           "score": {"type": "number"}}},
                "ratio": {"type": "number", "description": "A float", "default": 0.5},
            },
            "required": ["query", "tags"],
        },
    },
}
TOOLS = [WEATHER_TOOL, SEARCH_TOOL]


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hello! How are you?"}
A1 = {"role": "assistant", "content": "I'm fine, thanks. How can I help?"}
U2 = {"role": "user", "content": "Tell me a joke."}

CASES = {
    "user_only": {"messages": [U1]},
    "system_user": {"messages": [SYS, U1]},
    "multi_turn": {"messages": [SYS, U1, A1, U2]},
    "no_system_multi": {"messages": [U1, A1, U2]},
    "ends_with_assistant": {"messages": [U1, A1]},
    "empty_content": {"messages": [{"role": "user", "content": ""}]},
    "whitespace": {"messages": [
        {"role": "system", "content": "  Be brief.\n\n"},
        {"role": "user", "content": "\n  spaced out  \t\n"},
        {"role": "assistant", "content": " ok \n"},
        {"role": "user", "content": "line1\nline2\r\nline3"}]},
    "unicode": {"messages": [
        {"role": "user", "content": "Grüße! 你好 🌍 — \"quotes\" 'single' \\back\\slash <b>&amp;</b> tab\there"},
        {"role": "assistant", "content": "Ça va ✓ \u2028 ünïcödé"},
        {"role": "user", "content": "日本語で答えて"}]},
    "think_tags": {"messages": [
        U1, {"role": "assistant", "content": "<think>pondering</think>The answer is 4."}, U2]},
    "bad_alternation": {"messages": [U1, U2]},
    "system_only": {"messages": [SYS]},
    "tools_defined": {"messages": [SYS, {"role": "user", "content": "Weather in Paris?"}],
                      "tools": TOOLS},
    "tools_no_system": {"messages": [{"role": "user", "content": "Weather in Paris?"}],
                        "tools": TOOLS},
    "tool_call_dict_args": {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("call00001", "get_weather", {"city": "Paris", "days": 2})]},
        {"role": "tool", "tool_call_id": "call00001", "name": "get_weather",
         "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"},
        {"role": "assistant", "content": "It is 21.5 °C and clear in Paris."}],
        "tools": TOOLS},
    "tool_call_string_args": {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("call00001", "get_weather", "{\"city\": \"Paris\"}")]},
        {"role": "tool", "tool_call_id": "call00001", "name": "get_weather",
         "content": "sunny"}],
        "tools": TOOLS},
    "parallel_tool_calls": {"messages": [
        SYS,
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "",
         "tool_calls": [call("call00001", "get_weather", {"city": "Paris"}),
                        call("call00002", "get_weather", {"city": "Rome", "unit": "celsius"})]},
        {"role": "tool", "tool_call_id": "call00001", "content": "18"},
        {"role": "tool", "tool_call_id": "call00002", "content": "25"},
        {"role": "user", "content": "Thanks"}],
        "tools": TOOLS},
    "tool_call_no_tools": {"messages": [
        {"role": "user", "content": "search cats"},
        {"role": "assistant", "content": "Searching.",
         "tool_calls": [call("call00003", "search", {"query": "cats", "tags": ["pets"],
                                                      "limit": None, "ratio": 1.0})]},
        {"role": "tool", "tool_call_id": "call00003", "content": "found 3"}]},
    "extra_kwargs": {"messages": [SYS, U1],
                     "extra": {"functions": "[{\"name\": \"f\"}]", "datetime": "2024-07-26",
                               "date_string": "01 Jan 2025",
                               "tools_in_user_message": False,
                               "enable_citations": True,
                               "documents": [{"title": "Doc", "text": "Body ü"}]},
                     "tools": [WEATHER_TOOL]},
    "builtin_tools": {"messages": [
        {"role": "user", "content": "search it"},
        {"role": "assistant", "tool_calls": [call("call00004", "brave_search", {"query": "x"})]},
        {"role": "ipython", "content": "result"}],
        "extra": {"builtin_tools": ["brave_search", "code_interpreter"]},
        "tools": [WEATHER_TOOL]},
    "code_interpreter": {"messages": [U1],
                         "tools": [{"type": "code_interpreter"}, WEATHER_TOOL]},
}


# Small templates covering each supported feature, rendered with CTX.
CTX = {
    "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
             {"role": "user", "content": "bye"}],
    "d": {"b": 2, "a": 1, "C": 3, "items": "key named items"},
    "n": None, "t": True, "f": 1.5, "i": 7, "s": "  Hello, World  ", "u": "Grüße 🌍",
    "nums": [3, 1, 2, 3], "words": ["b", "A", "c", "a"],
    "people": [{"name": "Ann", "age": 30, "tags": ["x"]}, {"name": "bob", "age": 25},
               {"name": "Cid", "age": 35, "tags": []}],
    "nested": {"a": {"b": [10, 20, {"c": "deep"}]}},
    "floats": [1.0, 0.5, 1e-05, 123456789.0, 1e16, 2.5e-7, -0.0, 3.14159, 100.0, 1e300],
}
FEATURES = [
    # whitespace control, trim_blocks, lstrip_blocks
    "a\n  {% if t %}\n  b\n  {% endif %}\n c",
    "a  {%- if t -%}  b  {%- endif -%}  c",
    "{{- '  x  ' -}}   |  {{ 'y' }}  {#- comment -#}  z",
    "  {#- c #}\nline\n  {# c2 #}\nend\n",
    "{% if t %}\n\n{% endif %}x{%+ if t %} keep{% endif +%}\ny",
    "  {% raw %}{{ not parsed }}{% endraw %}\ntail",
    "x {{ i }}\n{{ i }} y\n\n",
    "\ttab  {% if t %}\n\tin\n\t{% endif %}\nout",
    # literals and operators
    "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** 3 ** 2 }}",
    "{{ 7 / 2 }} {{ 4 / 2 }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ -f }} {{ +i }} {{ 10 - 2.5 }} {{ 3 * 1.0 }}",
    "{{ 'a' ~ 1 ~ none ~ true ~ 1.0 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1, 2] + [3] }} {{ 'x' + 'y' }}",
    "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ 2 >= 2 }} {{ 1 != 1.0 }} {{ 1 == true }} {{ [1,2] == [1,2] }}",
    "{{ 'ell' in 'hello' }} {{ 2 in nums }} {{ 'a' in d }} {{ 'z' not in d }} {{ 5 not in nums }}",
    "{{ t and 'yes' }} {{ n or 'fallback' }} {{ not t }} {{ not n and i }} {{ 0 or '' or 'last' }}",
    "{{ 'a' if t else 'b' }} {{ 'a' if n else 'b' }} [{{ 'a' if n }}] {{ 1 if n else 2 if t else 3 }}",
    "{{ [1, 'a', none, true, 1.5, (1,), (1, 2), {'k': \"v'\"}, 'it\\'s', \"q\\\"\"] }}",
    "{{ {'a': 1, 'b': [1, 2]} }} {{ (1, 2) }} {{ () }} {{ [] }} {{ {} }} {{ none }} {{ true }} {{ false }}",
    "{{ 'esc: \\n\\t\\\\ \\x41 \\u00e9 \\101' }}|{{ \"multi\" 'concat' }}",
    "{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 1e3 }} {{ 2.5E-3 }} {{ 1_0.5 }}",
    "{% for x in floats %}{{ x }} {% endfor %}",
    # attribute / item access, slicing
    "{{ msgs[0].role }} {{ msgs[-1]['content'] }} {{ d.a }} {{ d['b'] }} {{ nested.a.b[2].c }} {{ nested.a.b.1 }}",
    "{{ d['items'] }} [{{ d.missing }}] [{{ msgs[10] }}] {{ d.missing is defined }} {{ d.missing is undefined }}",
    "{{ nums[1:] }} {{ nums[:-1] }} {{ nums[::-1] }} {{ nums[::2] }} {{ u[::-1] }} {{ u[1:4] }} {{ s[2:7] }} {{ nums[5:] }} {{ nums[-10:2] }}",
    "{{ u[0] }} {{ u[-1] }} {{ u|length }} {{ 'abc'[1] }}",
    # statements
    "{% if i > 5 %}big{% elif i > 2 %}mid{% else %}small{% endif %} {% if n %}x{% elif not n %}y{% endif %}",
    "{% for m in msgs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }} {% endfor %}",
    "{% for m in msgs %}[{{ loop.previtem.role if loop.previtem else '-' }}>{{ loop.nextitem.role if loop.nextitem is defined else '-' }}]{{ loop.cycle('odd', 'even') }} {% endfor %}",
    "{% for m in msgs if m.role == 'user' %}{{ m.content }}{{ loop.length }} {% endfor %}",
    "{% for x in [] %}x{% else %}empty{% endfor %} {% for x in nums if x > 9 %}x{% else %}none{% endfor %}",
    "{% for x in nums %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}|{% for x in nums %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}",
    "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %} {% for k, v in d.items() %}{{ k }}{% endfor %} {% for a, b in [(1, 2), [3, 4], 'xy'] %}{{ a }}{{ b }}{% endfor %}",
    "{% for k in d %}{{ k }}{% endfor %} {% for c in 'héllo' %}{{ c }}.{% endfor %}",
    "{% for row in [[1, 2], [3]] %}{% for x in row %}{{ loop.index }}{{ x }}{% endfor %};{{ loop.index }} {% endfor %}",
    "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 10 %}{{ x }} {% endfor %}{{ x }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set c = [1, 2] %}{{ c }} {% set t2 = 1, %}{{ t2 }}",
    "{% set block %}inner {{ i }}\n{% endset %}[{{ block }}] {% set up | upper %}shout{% endset %}{{ up }}",
    "{% set ns = namespace(count=0, items=[]) %}{% for m in msgs %}{% set ns.count = ns.count + 1 %}{% set ns.items = ns.items + [m.role] %}{% endfor %}{{ ns.count }} {{ ns.items }}",
    "{% set ns = namespace() %}{% set ns.a = 5 %}{{ ns.a }} {% set ns2 = namespace({'k': 1}, z=2) %}{{ ns2.k }}{{ ns2.z }}",
    "{% if t %}{% set inside = 'if-scope' %}{% endif %}{{ inside }}",
    "{% macro greet(name, greeting='Hello', punct='!') %}{{ greeting }}, {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', 'Hi') }} {{ greet('Cy', punct='?') }} {{ greet(name='Di', greeting='Yo') }}",
    "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}",
    "{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}",
    "{% macro later() %}{{ x }}{% endmacro %}{% set x = 'late-bound' %}{{ later() }}",
    "{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}body {{ i }}{% endcall %}",
    "{% macro row(x) %}[{{ caller(x) }}]{% endmacro %}{% call(v) row(5) %}v={{ v }}{% endcall %}",
    "{% filter upper %}loud {{ 'text' }}{% endfilter %} {% filter trim %}   padded   {% endfilter %}|",
    "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]",
    "{% generation %}gen {{ i }}{% endgeneration %}",
    # filters
    "{{ s|trim }}|{{ 'xxhixx'|trim('x') }}|{{ s|length }}|{{ nums|count }}|{{ d|length }}|{{ s|upper }}|{{ s|lower }}",
    "{{ 'hello world'|capitalize }} {{ 'hello wORLD-foo (bar) x'|title }} {{ 'a b'|replace('a', 'c') }} {{ 'aaa'|replace('a', 'b', 2) }}",
    "{{ words|join(', ') }} {{ people|join('|', attribute='name') }} {{ nums|join }} {{ words|first }} {{ words|last }} {{ 'abc'|first }}",
    "{{ n|default('dflt') }} {{ missing|default('m') }} {{ ''|default('e', true) }} {{ 0|d('z', boolean=true) }} {{ missing|d }}",
    "{{ i|string }} {{ f|string }} {{ nums|string }} {{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(-1) }} {{ '0x1A'|int(0, 16) }} {{ 3.9|int }} {{ '2.5'|float }} {{ 'a'|float }} {{ 3|float }}",
    "{{ nums|list }} {{ 'ab'|list }} {{ d|list }} {{ -3|abs }} {{ -2.5|abs }} {{ 2.567|round }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 7|round }}",
    "{{ people|selectattr('age', 'gt', 28)|map(attribute='name')|list }} {{ people|rejectattr('tags')|map(attribute='name')|list }} {{ people|selectattr('tags', 'defined')|list|length }}",
    "{{ nums|select('odd')|list }} {{ nums|reject('odd')|list }} {{ [0, 1, '', 'a', none]|select|list }} {{ nums|select('equalto', 3)|list }} {{ nums|select('divisibleby', 3)|list }}",
    "{{ words|map('upper')|list }} {{ people|map(attribute='missing', default='?')|list }} {{ nested|attr('a') }}",
    "{{ nums|unique|list }} {{ words|unique|list }} {{ words|unique(case_sensitive=true)|list }} {{ people|unique(attribute='age')|list|length }}",
    "{{ nums|sort }} {{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ words|sort(reverse=true) }} {{ people|sort(attribute='age')|map(attribute='name')|join(',') }}",
    "{{ nums|reverse|list }} {{ 'abc'|reverse }} {{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ d|dictsort(case_sensitive=true) }} {{ {'x': 2, 'y': 1}|dictsort(by='value') }}",
    "{{ nums|sum }} {{ people|sum(attribute='age') }} {{ [0.5, 0.25]|sum }} {{ nums|min }} {{ nums|max }} {{ words|min }} {{ words|max(case_sensitive=true) }} {{ people|max(attribute='age') }}",
    "{{ 'a\nb\n\nc'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }}|{{ 'x\ny'|indent('> ') }}",
    "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|escape }} {{ '<i>'|safe }} {{ ('<p>'|safe + '<q>') }} {{ '<x>' ~ ('<y>'|safe) }}",
    "{{ 'hello world foo'|wordcount }} {{ nums|batch(3)|list }} {{ nums|batch(3, 0)|list }} {{ 'x'|center(5) }}|{{ 'ab'|center(7) }}|{{ nums|pprint }}",
    "{{ d|tojson }} {{ nums|tojson }} {{ u|tojson }} {{ floats|tojson }} {{ 'a\"b\\\\c\\n\\t\\x01'|tojson }} {{ n|tojson }} {{ t|tojson }} {{ (1, 2)|tojson }} {{ {1: 'x', none: 'y', true: 'z', 1.5: 'w'}|tojson }}",
    "{{ people|tojson(indent=2) }}\n{{ {}|tojson(indent=2) }} {{ []|tojson(indent=2) }} {{ {'a': []}|tojson(indent=2) }}",
    "{{ d|tojson(sort_keys=true) }} {{ u|tojson(ensure_ascii=true) }} {{ d|tojson(separators=(',', ':')) }} {{ nums|tojson(indent='\t') }}",
    "{{ d.items()|list }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dv') }}",
    # tests
    "{{ n is none }} {{ i is number }} {{ f is float }} {{ i is integer }} {{ t is boolean }} {{ t is true }} {{ n is false }} {{ s is string }} {{ d is mapping }} {{ nums is iterable }} {{ s is iterable }} {{ i is iterable }} {{ nums is sequence }} {{ d is sequence }}",
    "{{ i is odd }} {{ i is even }} {{ 9 is divisibleby 3 }} {{ 'a' is eq 'a' }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is gt 1 }} {{ 2 is ge 2 }} {{ 1 is le 0 }} {{ 'a' is in 'cat' }} {{ greet is defined }} {{ range is callable }} {{ 'upper' is filter }} {{ 'odd' is test }}",
    "{{ i is not none }} {{ not i is none }} {{ missing is not defined }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ true is sameas true }} {{ '<'|e is escaped }}",
    # methods
    "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ '--x--'.strip('-') }}|{{ 'xxyxx'.lstrip('x') }}|{{ 'abc'.rstrip('c') }}",
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ' a b  c '.split(none, 1) }} {{ ' a b  c '.rsplit(none, 1) }} {{ ''.split() }} {{ 'x'.split('x') }}",
    "{{ 'abc'.startswith('a') }} {{ 'abc'.startswith(('x', 'ab')) }} {{ 'abc'.endswith('bc') }} {{ 'abc'.endswith(('x',)) }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ 'héllo'.find('l') }}",
    "{{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'Ab'.upper() }}{{ 'Ab'.lower() }} {{ 'aXbXc'.replace('X', '-') }} {{ 'aaa'.replace('a', 'b', 1) }} {{ ', '.join(words) }} {{ '{} and {}'.format('x', 1) }} {{ '{0}{name}'.format('a', name='b') }}",
    "{{ '123'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'a1'.isalnum() }} {{ ' '.isspace() }} {{ 'ab'.islower() }} {{ 'AB'.isupper() }} {{ 'a\nb'.splitlines() }} {{ nums.index(2) }} {{ nums.count(3) }}",
    # globals
    "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b='x') }} {{ dict({'z': 0}) }} {{ strftime_now('%Y-%m-%d %d %b %Y %H:%M %A %B %j') }}",
    "{{ raise_exception('custom failure: ' ~ i) }}",
    # undefined semantics
    "[{{ missing }}] [{{ missing|length }}] [{{ missing|trim }}] [{{ missing|list }}] {{ missing is iterable }} {% for x in missing %}x{% endfor %} {{ missing == missing }} {{ 1 in missing }} {{ missing|default(1) }}",
    "{{ missing.attr }}",
    "{{ missing + 1 }}",
    "{{ d.missing.deeper }}",
    "{{ nums.append(4) }}",
    "{{ 'a' + 1 }}",
    "{{ n + 'x' }}",
    "{% for x in n %}{% endfor %}",
    "{{ 1 / 0 }}",
    "{{ range(200000)|length }}",
    "{{ 'x' in 5 }}",
    "{% set a, b = [1, 2, 3] %}",
    # syntax errors
    "{% if %}",
    "{% for x in %}{% endfor %}",
    "{{ 1 + }}",
    "{% if t %}unclosed",
    "{% endfor %}",
    "{% unknowntag %}",
    "{{ 'unterminated }}",
    "{{ x|nosuchfilter }}",
    "{{ x is nosuchtest }}",
    "{# unterminated comment",
    "{{ (1, 2 }}",
    "{% macro m(a=1, b) %}{% endmacro %}",
    "{% break %}",
]


def render_features(env):
    out = []
    for src in FEATURES:
        try:
            r = {"output": env.from_string(src).render(**CTX)}
        except jinja2.exceptions.TemplateSyntaxError as e:
            r = {"kind": "syntax", "message": str(e), "line": e.lineno}
        except jinja2.exceptions.TemplateError as e:
            if type(e) is jinja2.exceptions.TemplateError:
                r = {"kind": "raise", "message": e.message}
            else:
                r = {"kind": "error", "message": f"{type(e).__name__}: {e}"}
        except Exception as e:
            r = {"kind": "error", "message": f"{type(e).__name__}: {e}"}
        r["source"] = src
        out.append(r)
    return out


def render(env, source, case, agp):
    ctx = {
        "messages": case["messages"],
        "tools": case.get("tools"),
        "documents": None,
        "add_generation_prompt": agp,
        "bos_token": BOS,
        "eos_token": EOS,
    }
    ctx.update(case.get("extra", {}))
    try:
        return {"output": env.from_string(source).render(**ctx)}
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"kind": "error", "message": f"TemplateSyntaxError: {e}"}
    except jinja2.exceptions.UndefinedError as e:
        return {"kind": "error", "message": f"UndefinedError: {e}"}
    except jinja2.exceptions.TemplateError as e:
        # raise_exception raises the base TemplateError.
        if type(e) is jinja2.exceptions.TemplateError:
            return {"kind": "raise", "message": e.message}
        return {"kind": "error", "message": f"{type(e).__name__}: {e}"}
    except Exception as e:  # TypeError, SecurityError, ...
        return {"kind": "error", "message": f"{type(e).__name__}: {e}"}


def main():
    tdir = sys.argv[1] if len(sys.argv) > 1 else TEMPLATE_DIR
    out = sys.argv[2] if len(sys.argv) > 2 else OUT
    env = make_env()
    templates = {}
    seen = {}
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".jinja"):
            continue
        src = open(os.path.join(tdir, name), encoding="utf-8").read()
        digest = hashlib.sha256(src.encode()).hexdigest()
        if digest in seen:
            continue
        seen[digest] = name
        templates[name[:-len(".jinja")]] = src
    for name, src in BUILTINS.items():
        templates["builtin:" + name] = src
    results = []
    for tname, src in templates.items():
        for cname, case in CASES.items():
            for agp in (False, True):
                r = render(env, src, case, agp)
                r.update({"template": tname, "case": cname, "add_generation_prompt": agp})
                results.append(r)
    data = {
        "generator": "tools/make_template_goldens.py",
        "jinja2_version": jinja2.__version__,
        "bos_token": BOS,
        "eos_token": EOS,
        "strftime_now": FIXED_NOW.isoformat(),
        "templates": templates,
        "cases": CASES,
        "results": results,
        "feature_context": CTX,
        "features": render_features(env),
    }
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")
    kinds = {}
    for r in results:
        k = r.get("kind", "output")
        kinds[k] = kinds.get(k, 0) + 1
    print(f"{len(templates)} templates x {len(CASES)} cases x 2 -> {len(results)} "
          f"renders {kinds}; {os.path.getsize(out)} bytes -> {out}")


if __name__ == "__main__":
    main()
