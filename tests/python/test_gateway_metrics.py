"""The /metrics series an inference gateway's endpoint picker reads (the
Gateway API Inference Extension's model-server protocol, llm-d), parsed
with prometheus_client's text parser: names, types, labels and values as
vLLM exports them."""
import http.client
import json
import time

import pytest

from conftest import CHAT_MODEL
from replicas import scrape, value

# name -> (type, label names) as vLLM exports them.
GATEWAY_SERIES = {
    "vllm:num_requests_waiting": ("gauge", {"model_name"}),
    "vllm:num_requests_running": ("gauge", {"model_name"}),
    "vllm:kv_cache_usage_perc": ("gauge", {"model_name"}),
    "vllm:cache_config_info": ("gauge", {"engine", "block_size", "num_gpu_blocks",
                                         "cache_dtype", "enable_prefix_caching"}),
    "vllm:lora_requests_info": ("gauge", {"max_lora", "running_lora_adapters",
                                          "waiting_lora_adapters"}),
}


@pytest.fixture(scope="module")
def server(weft_serve_factory):
    return weft_serve_factory(CHAT_MODEL, "--kv-memory", "32M",
                              "--threads", "1", "--model-id", "smol")


def test_gateway_series_parse_and_match(server):
    before = time.time()
    m = scrape(server.url)
    after = time.time()
    for name, (typ, labels) in GATEWAY_SERIES.items():
        assert name in m, sorted(m)
        assert m[name].type == typ, (name, m[name].type)
        assert len(m[name].samples) == 1, m[name].samples
        assert set(m[name].samples[0].labels) == labels, m[name].samples[0]
    assert value(m, "vllm:num_requests_waiting", model_name="smol") == 0
    assert value(m, "vllm:num_requests_running", model_name="smol") == 0
    assert value(m, "vllm:kv_cache_usage_perc", model_name="smol") == 0
    info = m["vllm:cache_config_info"].samples[0]
    assert info.value == 1
    assert info.labels["num_gpu_blocks"] == str(int(value(m, "weft_kv_blocks_total")))
    assert int(info.labels["block_size"]) > 0
    assert info.labels["cache_dtype"] == "f16"
    assert info.labels["enable_prefix_caching"] == "True"
    lora = m["vllm:lora_requests_info"].samples[0]
    assert lora.labels == {"max_lora": "0", "running_lora_adapters": "",
                           "waiting_lora_adapters": ""}
    assert before - 1 <= lora.value <= after + 1  # a Unix time stamp


def test_kv_usage_is_a_fraction_of_blocks_in_use(server):
    # A stream held open mid-generation: one sequence running, its blocks
    # in use.
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    c.request("POST", "/v1/completions", json.dumps(
        {"prompt": "Hello there. " * 30, "max_tokens": 400, "stream": True,
         "ignore_eos": True}), {"Content-Type": "application/json"})
    r = c.getresponse()
    while not r.readline().startswith(b"data: {"):
        pass
    m = scrape(server.url)
    c.close()  # aborts the request
    used, total = value(m, "weft_kv_blocks_used"), value(m, "weft_kv_blocks_total")
    assert value(m, "vllm:num_requests_running") == 1
    assert used > 0
    assert value(m, "vllm:kv_cache_usage_perc") == used / total < 1
    # Once it ended its blocks are free; the prompt's full blocks stay
    # cached, and cached blocks count as free.
    for _ in range(100):
        m = scrape(server.url)
        if value(m, "vllm:num_requests_running") == 0:
            break
        time.sleep(0.05)
    assert value(m, "weft_kv_blocks_used") == 0
    assert value(m, "vllm:kv_cache_usage_perc") == 0
    assert value(m, "weft_kv_blocks_cached") > 0


def test_every_exported_family_parses(server):
    m = scrape(server.url)
    assert len(m) > 20
    for fam in m.values():
        assert fam.type in ("counter", "gauge", "histogram"), fam.name
        assert fam.samples, fam.name
