// DraftProposer: speculative decoding's guesses from a draft model (a
// smaller model with the target's vocabulary), decoded greedily. The
// scheduler asks once per pass for every speculating sequence
// (engine::Proposer::ProposeBatch); the proposer then runs its own batched
// forward passes over all of them: first the catch-up (each sequence's
// tokens its KV does not hold yet, in chunks of at most prefill_chunk
// tokens per forward over all sequences), whose last logits give each
// sequence's first guess, then one forward per further guess with one
// token of every sequence still drafting. A guess is the argmax of the
// draft's logits: a point mass, so the executor's verification applies
// unchanged (engine/model_executor.cc, Verify).
//
// Each call's forwards are timed (last_timing): a catch-up forward that
// feeds each of its sequences only its last token (the usual case once a
// sequence drafts every pass: the target's one new token) is a guess
// forward, as every further-guess forward is; one that feeds more (a first
// call's prompt, a run of accepted guesses) is catch-up. The scheduler
// prices a guess from the guess forwards only.
//
// Its KV is its own: a kv::KvCacheManager and model::PagedKvStorage sized
// by DraftProposerConfig::num_blocks, one group, no prefix cache. Per
// sequence it remembers the tokens its KV holds; before drafting it keeps
// the longest prefix those share with the sequence's tokens now (the
// rollback of guesses the target rejected: positions past it are
// truncated) and feeds the rest. A sequence whose KV does not fit gets no
// guesses this pass (never an error); a failed draft forward drops the
// pass's guesses and the sequences' draft KV (logged).
//
// Thread safety: none; its scheduler calls it under the engine's lock
// (ProposeBatch on the loop thread, Release on the thread finishing a
// request). The accessors are for tests and reports, while idle.
// Invariants: for every known sequence, held tokens == the KV table's
// num_tokens, and every held position's KV was written by a forward.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/proposer.h"
#include "kv/kv_cache_manager.h"
#include "model/batch.h"
#include "model/kv_storage.h"
#include "model/model.h"
#include "model/paged_kv_storage.h"
#include "tokenizer/vocab.h"
#include "util/status.h"

namespace weft::runtime {

struct DraftProposerConfig {
  int num_blocks = 256;  // the draft's KV blocks (runtime: as many as the
                         // target's full-attention group, unless told)
  int block_size = 16;   // tokens per draft KV block
  model::KvType kv_type = model::KvType::kF16;  // draft KV row storage
  int num_threads = 0;  // compute threads; 0 = all cores
  // Catch-up tokens one draft forward takes at most, over all sequences.
  int prefill_chunk = 256;
  // Guesses are ids below this (the target's vocabulary rows); 0 = the
  // draft's n_vocab. The smaller of the two applies.
  int max_token_id = 0;
};

// Totals since creation.
struct DraftProposerStats {
  int64_t forwards = 0;        // draft forward passes
  int64_t catchup_tokens = 0;  // tokens fed to catch up
  int64_t step_tokens = 0;     // guesses fed back to draft the next one
  int64_t rolled_back = 0;     // held positions truncated (rejected)
  int64_t no_room = 0;         // sequence-passes without KV to draft
  int64_t failed = 0;          // draft forwards that failed
  double forward_ms = 0;       // in draft forwards
};

class DraftProposer final : public engine::Proposer {
 public:
  // Errors: bad sizes, or the KV storage cannot be made for this model.
  static StatusOr<std::unique_ptr<DraftProposer>> Create(
      std::shared_ptr<const model::Model> model,
      const DraftProposerConfig& config);

  void ProposeBatch(std::span<const engine::ProposeRequest> reqs,
                    std::vector<std::vector<engine::TokenId>>* out) override;
  void Release(engine::RequestId id) override;
  engine::ProposeTiming last_timing() const override { return timing_; }

  // Tokens whose draft KV is held for `id` (empty when unknown).
  std::span<const engine::TokenId> held(engine::RequestId id) const;
  const kv::KvCacheManager& kv() const { return kv_; }
  uint64_t kv_bytes() const { return cache_->bytes(); }
  const DraftProposerStats& stats() const { return stats_; }

 private:
  // One sequence of the current call.
  struct Work {
    size_t ask = 0;  // index into the call's requests
    int n = 0;       // its tokens now
    int k = 0;       // guesses to make
    int fed = 0;     // positions whose KV is written so far
    std::vector<engine::TokenId>* out = nullptr;
  };
  DraftProposer(std::shared_ptr<const model::Model> model,
                std::unique_ptr<model::PagedKvStorage> cache,
                const DraftProposerConfig& config);
  // Rolls `id` back to the prefix it shares with `tokens` and reserves its
  // catch-up plus k - 1 guesses; false (and no work) when they do not fit.
  bool Prepare(engine::RequestId id, std::span<const engine::TokenId> tokens,
               int k, Work* w);
  // Runs batch_ (sequences' tables set); logits_ has a row per output.
  // Its time goes to timing_: a guess forward's when `guess` (batch_ feeds
  // each of its sequences one token, the last it has), else catch-up's.
  Status Forward(bool guess);
  // The argmax of logits row `row` below max_token_id_.
  engine::TokenId Argmax(size_t row) const;
  void Fail(std::span<const engine::ProposeRequest> reqs,
            const std::vector<Work>& work, const Status& st,
            std::vector<std::vector<engine::TokenId>>* out);

  std::shared_ptr<const model::Model> model_;
  std::unique_ptr<model::PagedKvStorage> cache_;
  kv::KvCacheManager kv_;
  DraftProposerConfig config_;
  model::ForwardOptions fwd_;
  int n_vocab_ = 0;       // logits row width
  int max_token_id_ = 0;  // guesses are below this
  // Per request: the tokens whose KV is held (== the table's num_tokens).
  std::unordered_map<engine::RequestId, std::vector<engine::TokenId>> held_;
  model::Batch batch_;         // reused
  std::vector<float> logits_;  // [outputs, n_vocab]
  DraftProposerStats stats_;
  engine::ProposeTiming timing_;  // of the last ProposeBatch
};

// OK when the draft's vocabulary is the target's: the same number of
// tokens, the same text for every id and the same BOS/EOS; otherwise
// INVALID_ARGUMENT naming the first difference.
Status CheckSameVocabulary(const tokenizer::Vocab& target,
                           const tokenizer::Vocab& draft);

}  // namespace weft::runtime
