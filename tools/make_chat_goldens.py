#!/usr/bin/env python3
"""Makes tests/data/chat/smollm2_llama_server.json: llama.cpp's llama-server
answering three chats on the default model (SmolLM2-135M-Instruct Q4_1) at
temperature 0, with the log-probability of every answer token.

tests/python/test_chat_e2e.py asks Weft the same chats, and teacher-forces
llama-server's answers through Weft (completions with echo + logprobs over
the prompt's tokens plus the answer's): Weft's top-1 token must equal
llama-server's at >= 90% of the answer positions, and Weft's logprob of
llama-server's token must be within 0.15 of llama-server's own on average.

For each chat the golden keeps: the messages; the prompt llama-server
rendered (POST /apply-template) and its token ids (POST /tokenize, special
tokens parsed); the answer of POST /v1/chat/completions (text,
finish_reason); and the answer's token ids and logprobs from POST
/completion on those prompt ids (n_probs 1, temperature 0), which must give
the same text.

Usage: .venv/bin/python tools/make_chat_goldens.py [--llama-server PATH]
           [--model PATH] [--out PATH]
(the llama-server default: $(tools/build_llamacpp.sh)/llama-server)
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "smollm2-135m-instruct-q4_1.gguf")
OUT = os.path.join(ROOT, "tests", "data", "chat", "smollm2_llama_server.json")
MAX_TOKENS = 200

# Three chats the model answers and ends (finish_reason "stop") in
# llama-server. "What is the capital of France?" is not one: this Q4_1 file
# answers it at temperature 0 with a French phrase repeated to max_tokens in
# llama-server as in Weft (the float64 reference of tools/reference_forward.py
# puts "The" 0.08 nats above "L" there: a near-tie both engines flip).
CHATS = [
    [{"role": "user", "content": "Name the three primary colors."}],
    [{"role": "user", "content": "Write a haiku about the sea."}],
    [{"role": "system", "content": "You are a concise assistant."},
     {"role": "user", "content": "Give me three tips for staying focused "
                                 "while studying."}],
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def wait_ready(base, proc):
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit("llama-server exited early")
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    sys.exit("llama-server never became ready")


def one_chat(base, messages):
    prompt = post(base + "/apply-template", {"messages": messages})["prompt"]
    prompt_ids = post(base + "/tokenize", {"content": prompt,
                                           "add_special": True,
                                           "parse_special": True})["tokens"]
    chat = post(base + "/v1/chat/completions", {
        "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS,
        "seed": 0})
    choice = chat["choices"][0]
    comp = post(base + "/completion", {
        "prompt": prompt_ids, "n_predict": MAX_TOKENS, "temperature": 0,
        "top_k": 1, "n_probs": 1, "seed": 0, "cache_prompt": False,
        "post_sampling_probs": False})
    probs = comp["completion_probabilities"]
    text = comp["content"]
    if text != choice["message"]["content"]:
        sys.exit("chat and completion answers differ:\n%r\n%r"
                 % (choice["message"]["content"], text))
    return {
        "messages": messages,
        "prompt": prompt,
        "prompt_ids": prompt_ids,
        "answer": choice["message"]["content"],
        "finish_reason": choice["finish_reason"],
        "answer_ids": [p["id"] for p in probs],
        "answer_pieces": [p["token"] for p in probs],
        "answer_logprobs": [round(p["logprob"], 6) for p in probs],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-server")
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    server = args.llama_server
    if server is None:
        bin_dir = subprocess.run(["bash", os.path.join(ROOT, "tools",
                                                       "build_llamacpp.sh")],
                                 check=True, capture_output=True,
                                 text=True).stdout.strip()
        server = os.path.join(bin_dir, "llama-server")
    version = subprocess.run([server, "--version"], capture_output=True,
                             text=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([server, "-m", args.model, "--host", "127.0.0.1",
                             "--port", str(port), "-c", "2048", "-np", "1",
                             "-t", "2", "--no-webui"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_ready(base, proc)
        chats = [one_chat(base, m) for m in CHATS]
    finally:
        proc.terminate()
        proc.wait(30)
    data = {
        "generator": "tools/make_chat_goldens.py",
        "reference": "llama-server " + (version.stdout + version.stderr)
        .strip().splitlines()[0],
        "model": os.path.basename(args.model),
        "max_tokens": MAX_TOKENS,
        "chats": chats,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")
    for c in chats:
        print(f"{c['finish_reason']:6} {len(c['answer_ids']):3} tokens: "
              f"{c['answer'][:70]!r}")


if __name__ == "__main__":
    main()
