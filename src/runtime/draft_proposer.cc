#include "runtime/draft_proposer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include "util/log.h"
#include "util/strings.h"

namespace weft::runtime {

using engine::ProposeRequest;
using engine::RequestId;
using engine::TokenId;

StatusOr<std::unique_ptr<DraftProposer>> DraftProposer::Create(
    std::shared_ptr<const model::Model> model,
    const DraftProposerConfig& config) {
  if (model == nullptr) return InvalidArgumentError("no draft model");
  if (config.num_blocks < 1 || config.block_size < 1 ||
      config.prefill_chunk < 1 || config.num_threads < 0 ||
      config.max_token_id < 0) {
    return InvalidArgumentError(StrFormat(
        "draft proposer: %d blocks of %d tokens, prefill chunk %d, %d "
        "threads: sizes must be positive",
        config.num_blocks, config.block_size, config.prefill_chunk,
        config.num_threads));
  }
  model::PagedKvOptions po;
  po.num_blocks = config.num_blocks;
  po.block_size = config.block_size;
  po.type = config.kv_type;
  ASSIGN_OR_RETURN(std::unique_ptr<model::PagedKvStorage> cache,
                   model::PagedKvStorage::Create(model->config(), po));
  return std::unique_ptr<DraftProposer>(
      new DraftProposer(std::move(model), std::move(cache), config));
}

namespace {

kv::KvCacheConfig KvConfigOf(const DraftProposerConfig& c) {
  kv::KvCacheConfig k;
  k.num_blocks = c.num_blocks;
  k.block_size = c.block_size;
  return k;
}

}  // namespace

DraftProposer::DraftProposer(std::shared_ptr<const model::Model> model,
                             std::unique_ptr<model::PagedKvStorage> cache,
                             const DraftProposerConfig& config)
    : model_(std::move(model)),
      cache_(std::move(cache)),
      kv_(KvConfigOf(config)),
      config_(config),
      n_vocab_(static_cast<int>(model_->config().n_vocab)) {
  fwd_.n_threads =
      config.num_threads > 0
          ? config.num_threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  max_token_id_ = config.max_token_id > 0
                      ? std::min(config.max_token_id, n_vocab_)
                      : n_vocab_;
}

std::span<const TokenId> DraftProposer::held(RequestId id) const {
  auto it = held_.find(id);
  if (it == held_.end()) return {};
  return it->second;
}

void DraftProposer::Release(RequestId id) {
  kv_.Free(id);
  held_.erase(id);
}

bool DraftProposer::Prepare(RequestId id, std::span<const TokenId> tokens,
                            int k, Work* w) {
  const int n = static_cast<int>(tokens.size());
  std::vector<TokenId>& held = held_[id];
  // Keep what the draft's KV shares with the tokens now, and at least one
  // token to feed (its logits give the first guess).
  const size_t common =
      std::mismatch(held.begin(), held.end(), tokens.begin(), tokens.end())
          .first -
      held.begin();
  const int keep = std::min(static_cast<int>(common), n - 1);
  if (keep < static_cast<int>(held.size())) {
    stats_.rolled_back += static_cast<int64_t>(held.size()) - keep;
    kv_.Truncate(id, keep);
    held.resize(static_cast<size_t>(keep));
  }
  // The catch-up (tokens [keep, n)) and the k - 1 guesses fed back.
  const int need = n - keep + k - 1;
  std::optional<kv::SlotAllocation> alloc = kv_.AllocateSlots(id, need);
  if (!alloc) {
    ++stats_.no_room;
    if (held.empty()) Release(id);  // nothing held: no table either
    return false;
  }
  CHECK(alloc->copies.empty());  // no sharing: no copy-on-write
  w->n = n;
  w->k = k;
  w->fed = keep;
  return true;
}

Status DraftProposer::Forward(bool guess) {
  const auto t0 = std::chrono::steady_clock::now();
  Status st = model_->Forward(batch_, cache_.get(), &logits_, fwd_);
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
  ++stats_.forwards;
  stats_.forward_ms += ms;
  if (guess) {
    timing_.guess_ms += ms;
    ++timing_.guess_steps;
  } else {
    timing_.catchup_ms += ms;
  }
  if (st.ok() && logits_.size() != static_cast<size_t>(batch_.num_outputs()) *
                                       static_cast<size_t>(n_vocab_)) {
    return InternalError("the draft forward returned too few logits");
  }
  return st;
}

TokenId DraftProposer::Argmax(size_t row) const {
  const float* l = logits_.data() + row * static_cast<size_t>(n_vocab_);
  return static_cast<TokenId>(std::max_element(l, l + max_token_id_) - l);
}

void DraftProposer::Fail(std::span<const ProposeRequest> reqs,
                         const std::vector<Work>& work, const Status& st,
                         std::vector<std::vector<TokenId>>* out) {
  ++stats_.failed;
  LOG(ERROR) << "draft forward failed (no guesses this pass): "
             << st.ToString();
  for (const Work& w : work) {
    Release(reqs[w.ask].id);  // its KV may be half written
    (*out)[w.ask].clear();
  }
}

void DraftProposer::ProposeBatch(std::span<const ProposeRequest> reqs,
                                 std::vector<std::vector<TokenId>>* out) {
  out->assign(reqs.size(), {});
  timing_ = {};
  std::vector<Work> work;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].max_k < 1 || reqs[i].tokens.empty()) continue;
    Work w;
    w.ask = i;
    w.out = &(*out)[i];
    if (Prepare(reqs[i].id, reqs[i].tokens, reqs[i].max_k, &w)) {
      work.push_back(w);
    }
  }
  if (work.empty()) return;
  // The tables cover every position this call writes; length = written.
  auto set_table = [&](const Work& w, int32_t slot) {
    cache_->SetBlockTable(slot, kv_.Table(reqs[w.ask].id)->blocks, w.fed);
  };
  // Catch-up: chunks of every sequence's unfed tokens, in order; the chunk
  // that ends a sequence's tokens gives its first guess (its logits rows
  // come in the order the sequences end).
  std::vector<Work*> ended;
  for (size_t next = 0; next < work.size();) {
    batch_.Clear();
    ended.clear();
    int room = config_.prefill_chunk;
    int32_t slot = 0;
    for (size_t i = next; i < work.size() && room > 0; ++i, ++slot) {
      Work& w = work[i];
      const std::span<const TokenId> t = reqs[w.ask].tokens;
      const int take = std::min(w.n - w.fed, room);
      set_table(w, slot);
      for (int j = 0; j < take; ++j) {
        const int pos = w.fed + j;
        batch_.Add(t[size_t(pos)], pos, slot, pos == w.n - 1);
      }
      room -= take;
      w.fed += take;
      stats_.catchup_tokens += take;
      if (w.fed == w.n) ended.push_back(&w);
    }
    // Only last tokens fed (each ends its sequence): a guess forward.
    const bool guess = batch_.size() == ended.size();
    if (Status st = Forward(guess); !st.ok()) return Fail(reqs, work, st, out);
    for (size_t r = 0; r < ended.size(); ++r) {
      Work& w = *ended[r];
      w.out->push_back(Argmax(r));
      std::vector<TokenId>& held = held_[reqs[w.ask].id];
      const std::span<const TokenId> t = reqs[w.ask].tokens;
      held.insert(held.end(), t.begin() + held.size(), t.end());
    }
    while (next < work.size() && work[next].fed == work[next].n) ++next;
  }
  // Decode steps: guess g + 1 of every sequence that wants it, from guess
  // g fed at position n - 1 + g.
  for (int g = 1;; ++g) {
    batch_.Clear();
    std::vector<Work*> active;
    for (Work& w : work) {
      if (w.k <= g) continue;
      const int32_t slot = static_cast<int32_t>(active.size());
      set_table(w, slot);
      batch_.Add((*w.out)[size_t(g - 1)], w.fed, slot, true);
      active.push_back(&w);
    }
    if (active.empty()) break;
    stats_.step_tokens += static_cast<int64_t>(active.size());
    if (Status st = Forward(true); !st.ok()) return Fail(reqs, work, st, out);
    for (size_t r = 0; r < active.size(); ++r) {
      Work& w = *active[r];
      held_[reqs[w.ask].id].push_back((*w.out)[size_t(g - 1)]);
      ++w.fed;
      w.out->push_back(Argmax(r));
    }
  }
}

Status CheckSameVocabulary(const tokenizer::Vocab& target,
                           const tokenizer::Vocab& draft) {
  if (draft.tokens.size() != target.tokens.size()) {
    return InvalidArgumentError(StrFormat(
        "the draft model's vocabulary has %zu tokens, the target's %zu: "
        "speculation needs the same vocabulary",
        draft.tokens.size(), target.tokens.size()));
  }
  for (size_t i = 0; i < target.tokens.size(); ++i) {
    if (draft.tokens[i] != target.tokens[i]) {
      return InvalidArgumentError(StrFormat(
          "token %zu is '%s' in the draft model and '%s' in the target: "
          "speculation needs the same vocabulary",
          i, CEscape(draft.tokens[i]).c_str(),
          CEscape(target.tokens[i]).c_str()));
    }
  }
  if (draft.bos != target.bos || draft.eos != target.eos) {
    return InvalidArgumentError(StrFormat(
        "the draft model's BOS/EOS ids (%d/%d) differ from the target's "
        "(%d/%d)",
        draft.bos, draft.eos, target.bos, target.eos));
  }
  return OkStatus();
}

}  // namespace weft::runtime
