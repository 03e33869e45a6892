"""llama.cpp (llama-cpp-python) pp/tg on a GGUF, llama-bench style: pp = one
batch of N prompt tokens, tg = N single-token decode steps; 2 threads; f16 KV;
median of reps after a warm-up. Not part of the tests (llama-cpp-python is
not in the project venv); for side-by-side runs with `weft bench model`:

    python tools/llamacpp_bench.py MODEL.gguf PP TG REPS
"""
import sys, time, random, statistics
import llama_cpp
path, pp, tg, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
llm = llama_cpp.Llama(model_path=path, n_ctx=max(pp, tg) + 8, n_batch=max(pp, 1), n_ubatch=max(pp, 1),
                      n_threads=2, n_threads_batch=2, verbose=False, logits_all=False)
rng = random.Random(0)
vocab = llm.n_vocab()
def run_pp():
    toks = [rng.randrange(10, vocab - 1) for _ in range(pp)]
    llm.reset(); llm._ctx.memory_clear(True) if hasattr(llm._ctx, "memory_clear") else None
    t = time.perf_counter(); llm.eval(toks); return time.perf_counter() - t
def run_tg():
    llm.reset(); llm._ctx.memory_clear(True) if hasattr(llm._ctx, "memory_clear") else None
    t = time.perf_counter()
    for i in range(tg):
        llm.eval([rng.randrange(10, vocab - 1)])
    return time.perf_counter() - t
out = []
if pp:
    run_pp(); s = [run_pp() for _ in range(reps)]; out.append(f"pp{pp} {pp / statistics.median(s):.1f} tok/s")
if tg:
    run_tg(); s = [run_tg() for _ in range(reps)]; out.append(f"tg{tg} {tg / statistics.median(s):.1f} tok/s")
print("llama.cpp " + llama_cpp.__version__ + ": " + ", ".join(out))
