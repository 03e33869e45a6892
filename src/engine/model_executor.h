// ModelExecutor: the Executor that runs StepPlans on a real model.
//
// Per pass: (1) applies the plan's copy-on-write block copies to the paged
// KV storage, (2) drops per-request state of freed requests, (3) runs the
// forward pass of every scheduled sequence over tokens [start_pos,
// start_pos + n) with its KV addressed through the plan's block table, and
// (4) for sequences with needs_logits samples the next token with the
// request's Sampler (created on first sight, seeded from its
// SamplingParams, with the prompt fed to AcceptPrompt and earlier output to
// Accept), computing logprobs and top-N alternatives when asked; a
// sequence with draft tokens is verified there (logits at each of its last
// 1 + num_draft_tokens positions; see Verify).
//
// Preemption: a preempted request keeps its Sampler (RNG state and token
// history). Its recompute only rebuilds KV; the history already holds
// exactly the prompt and the output, so nothing is counted twice, and the
// next draw continues the same random stream as if it had never been
// preempted.
//
//   ASSIGN_OR_RETURN(auto model, model::Model::Load(path));
//   ASSIGN_OR_RETURN(kv::KvLayout layout,
//                    model::KvLayoutOf(model->config(), model::KvType::kF16));
//   ASSIGN_OR_RETURN(kv::KvCacheConfig kv, kv::KvConfigForBytes(
//       layout, 16, 1 << 30, {sched.max_seqs, sched.MaxPassTokens()}));
//   ASSIGN_OR_RETURN(auto exec, CreateModelExecutor(model.get(), kv, {}));
//   ASSIGN_OR_RETURN(auto engine, Engine::Create(sched, kv, std::move(exec)));
//
// Thread safety: see Executor (Execute on the loop thread only;
// ValidateRequest anywhere).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "engine/executor.h"
#include "kv/kv_cache_manager.h"
#include "model/kv_storage.h"
#include "model/model.h"
#include "sampling/json_constraint.h"
#include "util/status.h"

namespace weft::engine {

// Called on the loop thread with the logits a request's token was sampled
// from ([n_vocab], valid during the call only). For tests and debugging.
using LogitsObserver =
    std::function<void(RequestId id, int position, std::span<const float>)>;

struct ModelExecutorConfig {
  int num_threads = 0;  // compute threads; 0 = all cores
  // Storage of K and V rows (f32 is bitwise the contiguous-cache reference;
  // the server uses f16).
  model::KvType kv_type = model::KvType::kF32;
  // Optional: sees the logits of every sampled position (position = the
  // index the sampled token will have in the request's tokens).
  LogitsObserver logits_observer;
  // The bytes of every token (n_vocab of them), for JSON mode and structured
  // output (SamplingParams::constrained()); without them such requests are
  // refused.
  std::shared_ptr<const sampling::VocabBytes> vocab_bytes;
};

// Runs StepPlans on `model` (which must outlive it): applies CoW copies, runs
// the forward pass for every scheduled sequence with KV in paged storage
// addressed by the plan's block tables (one per KV group), samples with a per-request
// Sampler (seeded from SamplingParams). kv_config must be the one given to
// Engine::Create. Errors: bad kv_config, or the KV storage cannot be
// allocated.
StatusOr<std::unique_ptr<Executor>> CreateModelExecutor(
    const model::Model* model, const kv::KvCacheConfig& kv_config,
    const ModelExecutorConfig& config);

}  // namespace weft::engine
