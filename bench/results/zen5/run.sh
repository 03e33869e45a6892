#!/usr/bin/env bash
# The rounds of zen5.md, as run on 2026-12-02: base (17fa11f, built in a
# worktree at /tmp/weft-base) and head (251e203) `weft bench model`, then
# llama-bench (tools/build_llamacpp.sh), alternating, 3 rounds per model.
# The 1B model: weft make-model (bench/results/model-1b-q4_0.md) into /tmp.
set -u
LB=$(cat /tmp/lb.path)
G=/work/main/models/gemma-3-270m-q4_k_m.gguf
B1=/tmp/1b-q4_0.gguf
cd /tmp/final
for r in 1 2 3; do
  for v in base head; do
    bin=/tmp/weft-base/build/weft; [[ $v == head ]] && bin=/work/main/build/release/weft
    $bin bench model -m $G --json gemma-$v-$r.json > gemma-$v-$r.md 2>&1
  done
  $LB/llama-bench -m $G -t 2 -p 512 -n 128 -o json > gemma-llama-$r.json 2>/dev/null
done
for r in 1 2 3; do
  for v in base head; do
    bin=/tmp/weft-base/build/weft; [[ $v == head ]] && bin=/work/main/build/release/weft
    $bin bench model -m $B1 --batches 1,8,16 --json 1b-$v-$r.json > 1b-$v-$r.md 2>&1
  done
  $LB/llama-bench -m $B1 -t 2 -p 512 -n 128 -o json > 1b-llama-$r.json 2>/dev/null
done
echo done > DONE
