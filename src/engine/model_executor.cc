#include "engine/model_executor.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <unordered_map>
#include <utility>

#include "model/batch.h"
#include "model/paged_kv_storage.h"
#include "sampling/sampler.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::engine {
namespace {

// Thread safety: Execute on the engine's loop thread only; ValidateRequest
// reads immutable members and may run on any thread.
// Invariants: states_ holds a Sampler for every request seen since its
// admission and not yet reported freed; logits_ has one [n_vocab] row per
// needs_logits sequence of the current plan, in plan order, after Forward.
class ModelExecutor final : public Executor {
 public:
  ModelExecutor(const model::Model* model,
                std::unique_ptr<model::PagedKvStorage> cache,
                ModelExecutorConfig config)
      : model_(model),
        cache_(std::move(cache)),
        config_(std::move(config)),
        n_vocab_(static_cast<int32_t>(model->config().n_vocab)) {
    fwd_.n_threads = config_.num_threads > 0
                         ? config_.num_threads
                         : std::max(1u, std::thread::hardware_concurrency());
  }

  StatusOr<std::vector<SampledToken>> Execute(const StepPlan& plan) override;
  Status ValidateRequest(const RequestSpec& spec) const override;
  ExecuteTimes LastExecuteTimes() const override { return times_; }
  std::vector<PromptLogprobs> TakePromptLogprobs() override {
    return std::exchange(prompt_logprobs_, {});
  }

 private:
  // Creates the request's sampler on first sight, with the history the
  // plan carries on admission. A preempted request keeps its sampler: the
  // history already holds its tokens and the RNG continues its stream.
  Status EnsureState(const ScheduledSeq& s);
  // A scheduled sequence's tokens and block tables fit the cache.
  Status CheckSeq(const ScheduledSeq& s) const;
  // Runs every sequence of the plan; fills logits_ ([outputs, n_vocab]).
  Status Forward(const StepPlan& plan);
  // The fallback while the model's Forward takes one sequence per batch.
  Status ForwardEach(const StepPlan& plan);
  // Samples the token after input j of `s` from `logits` ([n_vocab]) and
  // feeds it to the request's sampler.
  SampledToken Sample(const ScheduledSeq& s, int j,
                      std::span<const float> logits);
  // Appends the tokens `s` emits: sampled from each of its 1 +
  // num_draft_tokens rows of `logits` in turn while the sample equals the
  // guess at that row; the first that differs (or the last row's) ends it.
  // Sampling first and comparing is the rejection-sampling rule for a
  // draft that puts all its mass on one token (n-gram): a guess d is
  // accepted with probability p(d), and when it is not the emitted token
  // follows p without d, renormalised; and it consumes exactly one random
  // draw per emitted token, as decoding without speculation does.
  void Verify(const ScheduledSeq& s, std::span<const float> logits,
              std::vector<SampledToken>* out);

  const model::Model* model_;
  std::unique_ptr<model::PagedKvStorage> cache_;
  ModelExecutorConfig config_;
  model::ForwardOptions fwd_;
  int32_t n_vocab_;
  bool multi_seq_ = true;  // the model accepted batches of several sequences
  std::unordered_map<RequestId, sampling::Sampler> samplers_;
  model::Batch batch_;          // reused across passes
  std::vector<float> logits_;   // [outputs, n_vocab]
  std::vector<float> one_;      // [1, n_vocab] per sequence (fallback)
  ExecuteTimes times_;          // of the last Execute
  std::vector<PromptLogprobs> prompt_logprobs_;  // of the last Execute
};

Status ModelExecutor::ValidateRequest(const RequestSpec& spec) const {
  for (size_t i = 0; i < spec.prompt.size(); ++i) {
    const TokenId t = spec.prompt[i];
    if (t < 0 || t >= n_vocab_) {
      return InvalidArgumentError(StrFormat(
          "prompt token %zu has id %d, outside the vocabulary [0, %d)", i, t,
          n_vocab_));
    }
  }
  RETURN_IF_ERROR(spec.sampling.Validate(n_vocab_));
  if (spec.sampling.constrained() && config_.vocab_bytes == nullptr) {
    return InvalidArgumentError(
        "JSON mode and structured output need the vocabulary's bytes, which "
        "this engine lacks");
  }
  return OkStatus();
}

Status ModelExecutor::EnsureState(const ScheduledSeq& s) {
  if (samplers_.count(s.id)) return OkStatus();
  const sampling::SamplingParams defaults;
  const sampling::SamplingParams& params =
      s.sampling != nullptr ? *s.sampling : defaults;
  StatusOr<sampling::Sampler> sampler = sampling::Sampler::Create(
      params, n_vocab_, params.constrained() ? config_.vocab_bytes : nullptr);
  if (!sampler.ok()) {
    return InvalidArgumentError(StrFormat(
        "request %lld: %s", static_cast<long long>(s.id),
        sampler.status().ToString().c_str()));
  }
  // The tokens the request holds: all of them on admission; otherwise (a
  // plan not built by the Scheduler) the ones before this chunk are unknown.
  const std::vector<TokenId>& all = s.all_tokens;
  const size_t n_prompt = std::min(
      all.size(), static_cast<size_t>(std::max(s.num_prompt_tokens, 0)));
  for (TokenId t : all) {
    if (t < 0 || t >= n_vocab_) {
      return InvalidArgumentError(StrFormat(
          "request %lld: token id %d outside the vocabulary",
          static_cast<long long>(s.id), t));
    }
  }
  sampler->AcceptPrompt(std::span<const TokenId>(all.data(), n_prompt));
  for (size_t i = n_prompt; i < all.size(); ++i) sampler->Accept(all[i]);
  samplers_.emplace(s.id, std::move(*sampler));
  return OkStatus();
}

// Whether token j of s needs its logits: the sampled last one, or a
// position whose next prompt token's logprob is asked for.
bool WantsLogits(const ScheduledSeq& s, int j) {
  // The sampled last token, and each draft token's (verification).
  if (s.needs_logits && j + 1 + s.num_draft_tokens >= s.num_new_tokens) {
    return true;
  }
  const int p = s.start_pos + j - s.prompt_logprobs_from;
  return p >= 0 && p < static_cast<int>(s.prompt_targets.size());
}

Status ModelExecutor::Forward(const StepPlan& plan) {
  if (plan.seqs.size() > 1 && !multi_seq_) return ForwardEach(plan);
  // One batch: sequence i of the plan is KV sequence i. With a lone
  // sequence this is the whole cost (no copies of logits or tables beyond
  // the block table itself).
  batch_.Clear();
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSeq& s = plan.seqs[i];
    const int32_t seq = static_cast<int32_t>(i);
    cache_->SetBlockTable(seq, s.block_table, s.start_pos);
    if (cache_->num_groups() > 1) {
      cache_->SetLocalBlockTable(seq, s.local_block_table);
    }
    for (int j = 0; j < s.num_new_tokens; ++j) {
      batch_.Add(s.tokens[static_cast<size_t>(j)], s.start_pos + j, seq,
                 WantsLogits(s, j));
    }
  }
  Status st = model_->Forward(batch_, cache_.get(), &logits_, fwd_);
  if (st.code() == StatusCode::kUnimplemented && plan.seqs.size() > 1) {
    LOG(INFO) << "model forward takes one sequence per batch; running "
                 "sequences one by one";
    multi_seq_ = false;
    return ForwardEach(plan);
  }
  return st;
}

Status ModelExecutor::ForwardEach(const StepPlan& plan) {
  logits_.clear();
  for (const ScheduledSeq& s : plan.seqs) {
    cache_->SetBlockTable(0, s.block_table, s.start_pos);
    if (cache_->num_groups() > 1) {
      cache_->SetLocalBlockTable(0, s.local_block_table);
    }
    batch_.Clear();
    for (int j = 0; j < s.num_new_tokens; ++j) {
      batch_.Add(s.tokens[static_cast<size_t>(j)], s.start_pos + j, 0,
                 WantsLogits(s, j));
    }
    RETURN_IF_ERROR(model_->Forward(batch_, cache_.get(), &one_, fwd_));
    logits_.insert(logits_.end(), one_.begin(), one_.end());
  }
  return OkStatus();
}

void ModelExecutor::Verify(const ScheduledSeq& s,
                           std::span<const float> logits,
                           std::vector<SampledToken>* out) {
  const size_t v = static_cast<size_t>(n_vocab_);
  const int first = s.num_new_tokens - s.num_draft_tokens;
  for (int i = 0; i <= s.num_draft_tokens; ++i) {
    // Row i: after the decode token and guesses 0..i-1 (all confirmed).
    out->push_back(Sample(s, first + i, logits.subspan(size_t(i) * v, v)));
    const SampledToken& t = out->back();
    if (t.exhausted || i == s.num_draft_tokens ||
        t.token != s.tokens[size_t(first + i)]) {
      return;
    }
  }
}

SampledToken ModelExecutor::Sample(const ScheduledSeq& s, int j,
                                   std::span<const float> logits) {
  const int position = s.start_pos + j;
  if (config_.logits_observer) config_.logits_observer(s.id, position, logits);
  sampling::Sampler& sampler = samplers_.at(s.id);
  sampling::SampleResult r = sampler.Sample(logits);
  SampledToken out;
  out.id = s.id;
  if (r.exhausted) {
    out.exhausted = true;  // the Scheduler ends it; no token to accept
    return out;
  }
  sampler.Accept(r.token);
  out.token = r.token;
  if (r.has_logprobs) {
    out.logprob = r.logprob;
    out.top_logprobs.reserve(r.top_logprobs.size());
    for (const sampling::TokenLogprob& t : r.top_logprobs) {
      out.top_logprobs.emplace_back(t.token, t.logprob);
    }
  }
  return out;
}

Status ModelExecutor::CheckSeq(const ScheduledSeq& s) const {
  const int nbt = cache_->block_size();
  const int end = s.start_pos + s.num_new_tokens;
  if (s.num_new_tokens < 1 ||
      static_cast<int>(s.tokens.size()) != s.num_new_tokens ||
      static_cast<int64_t>(s.block_table.size()) * nbt < end) {
    return InternalError(StrFormat(
        "malformed plan for request %lld", static_cast<long long>(s.id)));
  }
  for (kv::BlockId b : s.block_table) {
    if (b != kv::kNullBlock && (b < 0 || b >= cache_->num_blocks())) {
      return InternalError(StrFormat("request %lld: block %d out of range",
                                     static_cast<long long>(s.id), b));
    }
  }
  if (cache_->num_groups() > 1) {
    if (s.local_block_table.size() != s.block_table.size()) {
      return InternalError(StrFormat(
          "request %lld: local block table of %zu blocks, full of %zu",
          static_cast<long long>(s.id), s.local_block_table.size(),
          s.block_table.size()));
    }
    for (kv::BlockId b : s.local_block_table) {
      if (b != kv::kNullBlock && (b < 0 || b >= cache_->local_num_blocks())) {
        return InternalError(StrFormat(
            "request %lld: local block %d out of range",
            static_cast<long long>(s.id), b));
      }
    }
  }
  return OkStatus();
}

StatusOr<std::vector<SampledToken>> ModelExecutor::Execute(
    const StepPlan& plan) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  times_ = ExecuteTimes();
  prompt_logprobs_.clear();
  for (const kv::BlockCopy& c : plan.copies) {
    const int32_t n = c.group >= 0 && c.group < cache_->num_groups()
                          ? cache_->group_num_blocks(c.group) : 0;
    if (c.src < 0 || c.src >= n || c.dst < 0 || c.dst >= n) {
      return InternalError(StrFormat("bad block copy %d -> %d (group %d)",
                                     c.src, c.dst, c.group));
    }
    cache_->CopyBlock(c.src, c.dst, c.group);
  }
  for (RequestId id : plan.freed) samplers_.erase(id);
  // plan.preempted keep their samplers (see EnsureState).
  std::vector<SampledToken> out;
  if (plan.seqs.empty()) return out;
  for (const ScheduledSeq& s : plan.seqs) {
    RETURN_IF_ERROR(CheckSeq(s));
    if (s.needs_logits || s.admitted) RETURN_IF_ERROR(EnsureState(s));
  }
  RETURN_IF_ERROR(Forward(plan));
  const Clock::time_point t1 = Clock::now();
  const size_t v = static_cast<size_t>(n_vocab_);
  size_t row = 0;
  for (const ScheduledSeq& s : plan.seqs) {
    // Rows in position order: the prompt targets', then the sampled one.
    if (!s.prompt_targets.empty()) {
      PromptLogprobs p;
      p.id = s.id;
      p.first_token = s.prompt_logprobs_from + 1;
      for (TokenId target : s.prompt_targets) {
        if ((row + 1) * v > logits_.size()) {
          return InternalError("the forward pass returned too few logits");
        }
        const sampling::LogprobSummary l = sampling::ComputeLogprobs(
            std::span<const float>(logits_.data() + row * v, v), target,
            s.prompt_logprobs_top);
        PromptTokenLogprob e;
        e.token = target;
        e.logprob = l.chosen_logprob;
        for (const sampling::TokenLogprob& t : l.top) {
          e.top.emplace_back(t.token, t.logprob);
        }
        p.entries.push_back(std::move(e));
        ++row;
      }
      prompt_logprobs_.push_back(std::move(p));
    }
    if (!s.needs_logits) continue;
    const size_t rows = 1 + static_cast<size_t>(s.num_draft_tokens);
    if ((row + rows) * v > logits_.size()) {
      return InternalError("the forward pass returned too few logits");
    }
    Verify(s, std::span<const float>(logits_.data() + row * v, rows * v),
           &out);
    row += rows;
  }
  times_.forward_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  times_.sample_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<Executor>> CreateModelExecutor(
    const model::Model* model, const kv::KvCacheConfig& kv_config,
    const ModelExecutorConfig& config) {
  if (model == nullptr) return InvalidArgumentError("no model");
  if (config.num_threads < 0) {
    return InvalidArgumentError("num_threads must be >= 0");
  }
  const model::ModelConfig& mc = model->config();
  if (kv_config.sliding_window > 0) {
    // Released blocks must never be read: only valid when every layer is a
    // sliding-window layer no wider than the KV window.
    bool all_local = mc.sliding_window > 0;
    for (int64_t il = 0; il < mc.n_layer && all_local; ++il) {
      all_local = mc.IsLocalLayer(il);
    }
    if (!all_local || mc.sliding_window > kv_config.sliding_window) {
      return InvalidArgumentError(StrFormat(
          "a KV sliding window of %d tokens would drop positions this model "
          "(%s) still attends to; use 0",
          kv_config.sliding_window, mc.arch_name.c_str()));
    }
  }
  RETURN_IF_ERROR(kv_config.Validate());
  model::PagedKvOptions po;
  po.num_blocks = kv_config.num_blocks;
  po.block_size = kv_config.block_size;
  po.type = config.kv_type;
  if (kv_config.local_num_blocks > 0) {
    // The local group's released blocks must lie outside every local
    // layer's window.
    if (mc.sliding_window <= 0 || kv_config.local_window < mc.sliding_window) {
      return InvalidArgumentError(StrFormat(
          "a local KV group with a window of %d tokens would drop positions "
          "this model (%s, window %lld) still attends to",
          kv_config.local_window, mc.arch_name.c_str(),
          static_cast<long long>(mc.sliding_window)));
    }
    po.local_num_blocks = kv_config.local_num_blocks;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<model::PagedKvStorage> cache,
                   model::PagedKvStorage::Create(mc, po));
  return std::unique_ptr<Executor>(
      new ModelExecutor(model, std::move(cache), config));
}

}  // namespace weft::engine
