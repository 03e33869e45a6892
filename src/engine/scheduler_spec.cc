// Speculative decoding in the scheduler: planning draft tokens into a pass
// (PlanDrafts, ChooseK) and applying a pass's verified tokens
// (AppendTokens, NoteSpecResult).
#include <algorithm>
#include <utility>

#include "engine/scheduler.h"
#include "engine/scheduler_pass.h"

namespace weft::engine {
namespace {

// Per verifying pass, a request's acceptance record decays by this factor
// (it follows the text: a copied passage accepts, a rewritten one does not).
constexpr double kSpecDecay = 0.8;
// The prior of the acceptance rate: 1 accepted of 2 tried.
constexpr double kPriorAccepted = 1.0;
constexpr double kPriorTried = 2.0;

// Expected tokens a pass emits for a sequence that drafts k guesses, each
// accepted with probability `alpha` until the first rejection, plus the
// token sampled after them: 1 + alpha + ... + alpha^k.
double ExpectedTokens(double alpha, int k) {
  double sum = 1, term = 1;
  for (int i = 0; i < k; ++i) sum += (term *= alpha);
  return sum;
}

}  // namespace

int AcceptedDrafts(const ScheduledSeq& s,
                   std::span<const SampledToken* const> emitted) {
  const int first = s.num_new_tokens - s.num_draft_tokens;
  int a = 0;
  while (a < s.num_draft_tokens && a < static_cast<int>(emitted.size()) &&
         !emitted[size_t(a)]->exhausted &&
         emitted[size_t(a)]->token == s.tokens[size_t(first + a)]) {
    ++a;
  }
  return a;
}

void Scheduler::CommitKv(Request* req) {
  if (config_.enable_prefix_caching) {
    // A stop inside an accepted run leaves verified KV past the last token
    // kept: only the kept tokens' blocks are offered.
    kv_.CommitComputed(req->id, req->tokens,
                       std::min(req->num_computed_tokens, req->num_tokens()));
  }
}

void Scheduler::AppendTokens(Request* req,
                             std::span<const SampledToken* const> emitted) {
  RequestEvent ev;
  ev.id = req->id;
  for (const SampledToken* t : emitted) {
    if (t->exhausted) {
      // Its constraint cannot continue: end it, as max_tokens would.
      CommitKv(req);
      FinishRequest(req, FinishReason::kLength, "", std::move(ev));
      return;
    }
    req->tokens.push_back(t->token);
    ev.new_tokens.push_back(t->token);
    ev.logprobs.push_back(t->logprob);
    ev.top_logprobs.push_back(t->top_logprobs);
    if (std::optional<FinishReason> why = CheckStop(*req)) {
      CommitKv(req);
      FinishRequest(req, *why, "", std::move(ev));  // nothing past the stop
      return;
    }
  }
  CommitKv(req);
  ev.num_prompt_tokens = req->num_prompt_tokens;
  ev.num_output_tokens = req->num_output_tokens();
  ev.num_cached_tokens = req->num_cached_tokens;
  events_.push_back(std::move(ev));
}

void Scheduler::NoteSpecResult(Request* req, int drafted, int accepted) {
  const int tried = accepted < drafted ? accepted + 1 : drafted;
  req->spec_tried = req->spec_tried * kSpecDecay + tried;
  req->spec_accepted = req->spec_accepted * kSpecDecay + accepted;
  ++stats_.spec_num_drafts;
  stats_.spec_num_draft_tokens += drafted;
  stats_.spec_num_accepted_tokens += accepted;
  for (int i = 0; i < accepted && i < int(stats_.spec_accepted_per_pos.size());
       ++i) {
    ++stats_.spec_accepted_per_pos[size_t(i)];
  }
}

int Scheduler::ChooseK(const Request& req, int start_pos, int max_k,
                       double pass_ms, double pass_tokens) const {
  const double alpha =
      (req.spec_accepted + kPriorAccepted) / (req.spec_tried + kPriorTried);
  const double base = cost_.ChunkMs(start_pos, 1, 1);
  // The pass's expected tokens per ms with k guesses for this sequence;
  // k = 0 is the pass as planned so far.
  int best = 0;
  double best_rate = pass_tokens / std::max(pass_ms, 1e-6);
  for (int k = 1; k <= max_k; ++k) {
    const double ms = pass_ms + cost_.ChunkMs(start_pos, 1 + k, 1 + k) - base;
    const double rate =
        (pass_tokens + ExpectedTokens(alpha, k) - 1) / std::max(ms, 1e-6);
    if (rate > best_rate) {
      best_rate = rate;
      best = k;
    }
  }
  return best;
}

void Scheduler::PlanDrafts(Pass* pass) {
  const bool adaptive = config_.spec_adaptive;
  if (adaptive && !cost_.ready()) return;
  double pass_ms = 0, pass_tokens = 0;
  if (adaptive) {
    pass_ms = cost_.Predict(FeaturesOf(pass->plan));
    for (const ScheduledSeq& s : pass->plan.seqs) pass_tokens += s.needs_logits;
  }
  for (ScheduledSeq& s : pass->plan.seqs) {
    if (pass->budget <= 0) break;
    // Decodes only: one token, the sequence's last, not just admitted.
    if (!s.needs_logits || s.num_new_tokens != 1 || s.admitted) continue;
    Request* req = requests_.at(s.id).get();
    if (!req->speculative) continue;
    // Room for the guesses and the token after them.
    const int max_k =
        std::min({config_.spec_k_max, pass->budget,
                  req->stop.max_tokens - req->num_output_tokens() - 1,
                  config_.max_model_len - req->num_tokens() - 1});
    if (max_k <= 0) continue;
    proposer_->Propose(req->tokens, max_k, &draft_);
    int k = static_cast<int>(draft_.size());
    if (adaptive && k > 0)
      k = ChooseK(*req, s.start_pos, k, pass_ms, pass_tokens);
    auto draft_ms = [&](int n) {
      return cost_.ChunkMs(s.start_pos, 1 + n, 1 + n) -
             cost_.ChunkMs(s.start_pos, 1, 1);
    };
    while (pass->timed && k > 0 && draft_ms(k) > pass->time_left_ms) --k;
    if (k <= 0) continue;
    // Drafts never preempt: no slot, no guesses.
    std::optional<kv::SlotAllocation> alloc = kv_.AllocateSlots(s.id, k);
    if (!alloc) continue;
    s.tokens.insert(s.tokens.end(), draft_.begin(), draft_.begin() + k);
    s.slots.insert(s.slots.end(), alloc->slots.begin(), alloc->slots.end());
    s.block_table = kv_.Table(s.id)->blocks;
    if (kv_.num_groups() > 1) {
      s.local_block_table = kv_.Table(s.id, kv::kLocalGroup)->blocks;
    }
    for (const kv::BlockCopy& c : alloc->copies) {
      pass->copies.emplace_back(s.id, c);
    }
    s.num_new_tokens += k;
    s.num_draft_tokens = k;
    pass->budget -= k;
    pass->plan.num_batched_tokens += k;
    if (cost_.ready()) {
      const double ms = draft_ms(k);
      if (pass->timed) pass->time_left_ms -= ms;
      pass_ms += ms;
    }
    if (adaptive) {
      pass_tokens += ExpectedTokens((req->spec_accepted + kPriorAccepted) /
                                        (req->spec_tried + kPriorTried),
                                    k) -
                     1;
    }
  }
}

}  // namespace weft::engine
