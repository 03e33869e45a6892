// Speculative decoding in the scheduler: planning draft tokens into a pass
// (PlanDrafts, ChooseK) and applying a pass's verified tokens
// (AppendTokens, NoteSpecResult).
#include <algorithm>
#include <chrono>
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
// Per pass that measures guess forwards, the weight of the past in the
// price of a guess; per pass that could have drafted but made no guess,
// the factor that ages the price (as a measurement of 0 would).
constexpr double kStepDecay = 0.9;

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
                       double pass_ms, double pass_tokens, int draft_steps,
                       double draft_step_ms) const {
  const double alpha =
      (req.spec_accepted + kPriorAccepted) / (req.spec_tried + kPriorTried);
  const double base = cost_.ChunkMs(start_pos, 1, 1);
  // The pass's expected tokens per ms with k guesses for this sequence;
  // k = 0 is the pass as planned so far.
  int best = 0;
  double best_rate = pass_tokens / std::max(pass_ms, 1e-6);
  for (int k = 1; k <= max_k; ++k) {
    const double ms = pass_ms + cost_.ChunkMs(start_pos, 1 + k, 1 + k) - base +
                      std::max(0, k - draft_steps) * draft_step_ms;
    const double rate =
        (pass_tokens + ExpectedTokens(alpha, k) - 1) / std::max(ms, 1e-6);
    if (rate > best_rate) {
      best_rate = rate;
      best = k;
    }
  }
  return best;
}

// What a pass has left for guesses, as PlanDrafts plans them.
struct Scheduler::SpecLeft {
  int budget = 0;      // tokens
  bool timed = false;  // sized by time: time_left_ms binds
  double time_left_ms = 0;
  double pass_ms = 0;      // the pass's predicted ms so far (adaptive)
  double pass_tokens = 0;  // the tokens it is expected to emit (adaptive)
  int steps = 0;           // a costly proposer's forwards already planned
  double step_ms = 0;      // the ms of each further one (0: already paid)
};

double Scheduler::VerifyMs(const ScheduledSeq& s, int k) const {
  return cost_.ChunkMs(s.start_pos, 1 + k, 1 + k) -
         cost_.ChunkMs(s.start_pos, 1, 1);
}

int Scheduler::ChooseDrafts(const ScheduledSeq& s, const Request& req,
                            int proposed, const SpecLeft& left) const {
  // Room for the guesses and the token after them.
  int k = std::min({proposed, config_.spec_k_max, left.budget,
                    req.stop.max_tokens - req.num_output_tokens() - 1,
                    config_.max_model_len - req.num_tokens() - 1});
  if (config_.spec_adaptive && k > 0) {
    k = ChooseK(req, s.start_pos, k, left.pass_ms, left.pass_tokens, left.steps,
                left.step_ms);
  }
  while (left.timed && k > 0 &&
         VerifyMs(s, k) + std::max(0, k - left.steps) * left.step_ms >
             left.time_left_ms) {
    --k;
  }
  return std::max(k, 0);
}

void Scheduler::ChargeDrafts(const ScheduledSeq& s, const Request& req, int k,
                             SpecLeft* left) const {
  left->budget -= k;
  const double extra = std::max(0, k - left->steps) * left->step_ms;
  left->steps = std::max(left->steps, k);
  if (cost_.ready()) {
    const double ms = VerifyMs(s, k) + extra;
    left->time_left_ms -= ms;
    left->pass_ms += ms;
  }
  if (config_.spec_adaptive) {
    left->pass_tokens += ExpectedTokens((req.spec_accepted + kPriorAccepted) /
                                            (req.spec_tried + kPriorTried),
                                        k) -
                         1;
  }
}

bool Scheduler::PlanAsks(SpecLeft left, const Pass& pass) {
  // A cheap proposer is asked for all a sequence could take; a costly one
  // for what the pass would verify if every proposal were full (the same
  // choice as AddDrafts then makes), its forwards priced at the measured
  // ms per guess position, shared by the sequences drafting that far.
  const bool cheap = proposer_->cheap();
  if (!cheap) left.step_ms = std::max(draft_step_ms_, 0.0);
  asks_.clear();
  ask_seqs_.clear();
  bool any = false;
  for (size_t i = 0; i < pass.plan.seqs.size() && left.budget > 0; ++i) {
    const ScheduledSeq& s = pass.plan.seqs[i];
    // Decodes only: one token, the sequence's last, not just admitted.
    if (!s.needs_logits || s.num_new_tokens != 1 || s.admitted) continue;
    const Request* req = requests_.at(s.id).get();
    if (!req->speculative) continue;
    any = true;
    const int k =
        cheap ? std::min({config_.spec_k_max, left.budget,
                          req->stop.max_tokens - req->num_output_tokens() - 1,
                          config_.max_model_len - req->num_tokens() - 1})
              : ChooseDrafts(s, *req, config_.spec_k_max, left);
    if (k <= 0) continue;
    asks_.push_back({req->id, req->tokens, k});
    ask_seqs_.push_back(i);
    if (!cheap) ChargeDrafts(s, *req, k, &left);
  }
  return any;
}

// The price of a guess position is a decaying mean of the proposer's guess
// forwards (each one forward over the sequences drafting that far). The
// catch-up is left out: on a sequence's first call it covers the whole
// prompt, and priced per guess it would make every later k 0.
// A price that does make every k 0 would never be measured again, so a
// pass that could have drafted but made no guess ages it by kStepDecay
// (as a measurement of 0 would): the price falls until some pass drafts
// and measures it. A price that is truly too high stops drafting again
// after that, and costs one probe about every
// log(price / break-even price) / log(1 / kStepDecay) passes.
void Scheduler::PriceGuesses(bool asked, const ProposeTiming& t) {
  if (asked && t.guess_steps > 0) {
    const double per_step = t.guess_ms / t.guess_steps;
    draft_step_ms_ = draft_step_ms_ < 0 ? per_step
                                        : kStepDecay * draft_step_ms_ +
                                              (1 - kStepDecay) * per_step;
  } else if (!asked && draft_step_ms_ > 0) {
    draft_step_ms_ *= kStepDecay;
  }
}

void Scheduler::AddDrafts(size_t ask, SpecLeft* left, Pass* pass) {
  ScheduledSeq& s = pass->plan.seqs[ask_seqs_[ask]];
  Request& req = *requests_.at(s.id);
  const std::vector<TokenId>& draft = drafts_[ask];
  const int k = ChooseDrafts(s, req, static_cast<int>(draft.size()), *left);
  if (k <= 0) {
    // A proposal the adaptive choice turned down (its acceptance record too
    // low for the pass's price): the record ages as a verifying pass would
    // age it, toward the prior, so that a sequence whose first guesses
    // failed (an answer that opens with its own words and then copies the
    // prompt) is tried again instead of never: measured on S5, most
    // requests drafted once, failed, and never drafted again.
    if (config_.spec_adaptive && !draft.empty()) {
      req.spec_tried *= kSpecDecay;
      req.spec_accepted *= kSpecDecay;
    }
    return;
  }
  // Drafts never preempt: no slot, no guesses.
  std::optional<kv::SlotAllocation> alloc = kv_.AllocateSlots(s.id, k);
  if (!alloc) return;
  s.tokens.insert(s.tokens.end(), draft.begin(), draft.begin() + k);
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
  pass->plan.num_batched_tokens += k;
  ChargeDrafts(s, req, k, left);
}

void Scheduler::PlanDrafts(Pass* pass) {
  if (config_.spec_adaptive && !cost_.ready()) return;
  SpecLeft left;
  left.budget = pass->budget;
  left.timed = pass->timed;
  left.time_left_ms = pass->time_left_ms;
  if (config_.spec_adaptive) {
    left.pass_ms = cost_.Predict(FeaturesOf(pass->plan));
    for (const ScheduledSeq& s : pass->plan.seqs) {
      left.pass_tokens += s.needs_logits;
    }
  }
  // (a) Who asks for how many.
  const bool could_draft = PlanAsks(left, *pass);
  if (asks_.empty()) {
    if (could_draft && !proposer_->cheap()) PriceGuesses(false, {});
    return;
  }
  // (b) One call for the pass (a draft model's batched decode), timed:
  // the pass pays all of it (catch-up included), so it comes off the
  // pass's time left; its guess forwards price the next passes' guesses.
  const auto t0 = std::chrono::steady_clock::now();
  proposer_->ProposeBatch(asks_, &drafts_);
  if (!proposer_->cheap()) {
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
    PriceGuesses(true, proposer_->last_timing());
    pass->plan.draft_ms = ms;
    left.time_left_ms -= ms;
    left.pass_ms += ms;
  }
  // (c) The guesses verified: each proposal trimmed to what is left.
  for (size_t j = 0; j < asks_.size() && left.budget > 0; ++j) {
    AddDrafts(j, &left, pass);
  }
  pass->budget = left.budget;
  pass->time_left_ms = left.time_left_ms;
}

}  // namespace weft::engine
