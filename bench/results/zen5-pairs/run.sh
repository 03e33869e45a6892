#!/usr/bin/env bash
# The rounds of zen5-pairs.md, as run on 2026-12-03: base (220cb67, built in
# a worktree at /tmp/base) and head (5211e9b) `weft bench model`, then llama-bench
# (tools/build_llamacpp.sh), alternating, 3 rounds per model. The 1B model:
# weft make-model (bench/results/model-1b-q4_0.md) into /tmp.
set -u
LB=$(bash /work/main/tools/build_llamacpp.sh)
G=/work/main/models/gemma-3-270m-q4_k_m.gguf
B1=/tmp/1b-q4_0.gguf
cd "$(dirname "$0")"
for model in gemma 1b; do
  m=$G; extra=(); [[ $model == 1b ]] && m=$B1 && extra=(--batches 1,4,8,16)
  for r in 1 2 3; do
    for v in base head; do
      bin=/tmp/base/build/release/weft; [[ $v == head ]] && bin=/work/main/build/release/weft
      $bin bench model -m $m "${extra[@]}" --json $model-$v-$r.json > /dev/null 2>&1
    done
    $LB/llama-bench -m $m -t 2 -p 512 -n 128 -o json > $model-llama-$r.json 2>/dev/null
  done
done
