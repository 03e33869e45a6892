#include "server/engine_backend.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "sampling/params.h"
#include "server/sequence_text.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::server {

// One sequence of a request.
struct EngineBackend::Seq {
  engine::RequestId engine_id = 0;
  std::unique_ptr<SequenceText> text;
  bool submitted = false;    // handed to the engine
  bool engine_done = false;  // the engine's final event arrived
  bool done = false;         // the client saw this sequence's finish
  int32_t tokens = 0;        // output tokens the engine produced
  int32_t cached = 0;        // prompt tokens served from the prefix cache
};

// One client request: n sequences. Guarded by `mu`.
struct EngineBackend::Call {
  std::mutex mu;
  GenerateRequest g;
  EventCallback cb;
  sampling::SamplingParams sampling;  // validated; seed of sequence 0
  std::vector<engine::TokenId> stop_ids;
  std::vector<Seq> seqs;
  bool aborted = false;        // Abort() was called
  bool siblings_sent = false;  // sequences 1..n-1 submitted (or given up)
  bool prompt_first_sent = false;  // the prompt's first token (no logprob)
  bool last_sent = false;      // the final event went out
  std::optional<double> queue_seconds;  // sequence 0's, once it ended
};

namespace {

FinishReason MapReason(engine::FinishReason r) {
  switch (r) {
    case engine::FinishReason::kStop:
      return FinishReason::kStop;
    case engine::FinishReason::kLength:
      return FinishReason::kLength;
    case engine::FinishReason::kAborted:
      return FinishReason::kAbort;
    case engine::FinishReason::kError:
    case engine::FinishReason::kNone:
      break;
  }
  return FinishReason::kError;
}

sampling::SamplingParams ToParams(const SamplingFields& f) {
  sampling::SamplingParams p;
  p.temperature = f.temperature;
  p.top_p = f.top_p;
  p.top_k = f.top_k;
  p.min_p = f.min_p;
  p.seed = f.seed;
  p.presence_penalty = f.presence_penalty;
  p.frequency_penalty = f.frequency_penalty;
  p.repetition_penalty = f.repetition_penalty;
  p.logit_bias = f.logit_bias;
  if (f.logprobs >= 0) p.logprobs = f.logprobs;
  p.json_object = f.json_object;
  p.structured = f.structured;
  return p;
}

}  // namespace

StatusOr<std::unique_ptr<EngineBackend>> EngineBackend::Create(
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
    std::unique_ptr<engine::Engine> engine, ChatRenderer chat,
    EngineBackendOptions options, std::shared_ptr<const void> resources) {
  if (tokenizer == nullptr) return InvalidArgumentError("no tokenizer");
  if (engine == nullptr) return InvalidArgumentError("no engine");
  if (!options.model_info.vocab_size) {
    options.model_info.vocab_size = tokenizer->n_tokens();
  }
  return std::unique_ptr<EngineBackend>(
      new EngineBackend(std::move(tokenizer), std::move(engine),
                        std::move(chat), std::move(options),
                        std::move(resources)));
}

EngineBackend::EngineBackend(
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
    std::unique_ptr<engine::Engine> engine, ChatRenderer chat,
    EngineBackendOptions options, std::shared_ptr<const void> resources)
    : resources_(std::move(resources)),
      tokenizer_(std::move(tokenizer)),
      engine_(std::move(engine)),
      chat_(std::move(chat)),
      options_(std::move(options)) {
  if (options_.hash_model_file && options_.model_info.path &&
      !options_.model_info.sha256) {
    hasher_ = std::make_unique<FileHasher>(*options_.model_info.path);
  }
}

EngineBackend::~EngineBackend() {
  // The engine's destructor aborts what is live and delivers the final
  // events (to OnEngineEvent, which needs this object intact).
  engine_.reset();
}

void EngineBackend::StartDraining() { draining_ = true; }

size_t EngineBackend::num_in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_.size();
}

Readiness EngineBackend::readiness() const {
  return draining_ ? Readiness::kDraining : Readiness::kReady;
}

ModelInfo EngineBackend::model_info() const {
  ModelInfo m = options_.model_info;
  if (hasher_ != nullptr) m.sha256 = hasher_->result();
  return m;
}

EngineInfo EngineBackend::engine_info() const { return options_.engine_info; }

BackendStats EngineBackend::Stats() const {
  BackendStats s;
  const engine::SchedulerStats es = engine_->stats();
  const kv::BlockPoolStats kv = engine_->kv_stats();
  s.num_running = es.num_running;
  s.num_waiting = es.num_waiting;
  s.kv_blocks_total = kv.num_blocks;
  s.kv_blocks_used = kv.num_used;
  s.kv_blocks_cached = kv.num_idle_cached;
  s.prefix_cache_queries = kv.prefix_query_tokens;
  s.prefix_cache_hits = kv.prefix_hit_tokens;
  s.steps = es.num_steps;
  s.step_tokens = es.num_scheduled_tokens;
  s.step_token_budget = es.num_budget_tokens;
  s.preemptions = es.num_preemptions;
  s.spec_num_drafts = es.spec_num_drafts;
  s.spec_num_draft_tokens = es.spec_num_draft_tokens;
  s.spec_num_accepted_tokens = es.spec_num_accepted_tokens;
  s.spec_accepted_per_pos = es.spec_accepted_per_pos;
  s.aborts = aborts_;
  s.admission_rejections = rejections_;
  // Running sequences, as max_in_flight and in_flight_now count them (not
  // the waiting ones).
  s.peak_in_flight = engine_->loop_stats().peak_running;
  s.pass_cost = engine_->pass_cost();
  if (options_.engine_info.max_in_flight &&
      es.num_running >= *options_.engine_info.max_in_flight) {
    s.admission_ceiling_reason = "max_seqs";
  } else if (es.num_waiting > 0) {
    s.admission_ceiling_reason = "kv_cache";
  }
  return s;
}

StatusOr<std::vector<int32_t>> EngineBackend::Tokenize(std::string_view text,
                                                       bool add_special,
                                                       bool parse_special) {
  return tokenizer_->Encode(
      text, {.add_special = add_special, .parse_special = parse_special});
}

StatusOr<std::string> EngineBackend::Detokenize(std::span<const int32_t> ids,
                                                bool render_special) {
  return tokenizer_->Decode(ids, {.render_special = render_special});
}

StatusOr<std::string> EngineBackend::ApplyChatTemplate(
    const ChatTemplateRequest& req) {
  return chat_.Render(req);
}

engine::RequestSpec EngineBackend::MakeSpec(const Call& call,
                                            int index) const {
  engine::RequestSpec spec;
  spec.id = call.seqs[static_cast<size_t>(index)].engine_id;
  spec.prompt = call.g.prompt_ids;
  spec.priority = call.g.priority;
  spec.speculative = call.g.speculative;
  spec.stop.max_tokens = call.g.max_tokens;
  spec.stop.stop_token_ids = call.stop_ids;
  spec.sampling = call.sampling;
  if (spec.sampling.seed) *spec.sampling.seed += static_cast<uint64_t>(index);
  // The prompt is the same for every choice: the first computes its
  // logprobs (the others may then take it from the prefix cache).
  if (index == 0) spec.prompt_logprobs = call.g.prompt_logprobs;
  // Later choices wait where the first did, not behind what came since.
  if (index > 0) spec.sibling_of = call.seqs[0].engine_id;
  return spec;
}

Status EngineBackend::SubmitSeq(const std::shared_ptr<Call>& call,
                                int index) {
  engine::RequestSpec spec;
  {
    std::lock_guard<std::mutex> lock(call->mu);
    spec = MakeSpec(*call, index);
  }
  std::weak_ptr<Call> weak = call;
  return engine_->Submit(
      std::move(spec), [this, weak, index](const engine::RequestEvent& ev) {
        if (std::shared_ptr<Call> c = weak.lock()) OnEngineEvent(c, index, ev);
      });
}

Status EngineBackend::Submit(GenerateRequest req, EventCallback on_event) {
  if (draining_) return UnavailableError("the server is shutting down");
  const int32_t vocab = tokenizer_->n_tokens();
  if (req.n < 1) return InvalidArgumentError("n must be >= 1");
  if (req.max_tokens < 1) return InvalidArgumentError("max_tokens must be >= 1");
  if (req.prompt_ids.empty()) return InvalidArgumentError("the prompt is empty");
  for (int32_t id : req.prompt_ids) {
    if (id < 0 || id >= vocab) {
      return InvalidArgumentError(StrFormat(
          "token id %d is out of range [0, %d)", id, vocab));
    }
  }
  auto call = std::make_shared<Call>();
  call->sampling = ToParams(req.sampling);
  if (!req.ignore_eos) {
    call->stop_ids = tokenizer_->vocab().eog_ids;
    for (tokenizer::TokenId t : {tokenizer_->vocab().eos,
                                 tokenizer_->vocab().eot}) {
      if (t != tokenizer::kNoToken) call->stop_ids.push_back(t);
    }
  }
  for (int32_t id : req.stop_token_ids) call->stop_ids.push_back(id);
  std::sort(call->stop_ids.begin(), call->stop_ids.end());
  call->stop_ids.erase(
      std::unique(call->stop_ids.begin(), call->stop_ids.end()),
      call->stop_ids.end());
  // JSON mode and structured output end with the tokens that end generation.
  if (call->sampling.constrained())
    call->sampling.json_end_tokens = call->stop_ids;
  RETURN_IF_ERROR(call->sampling.Validate(vocab));
  call->seqs.resize(static_cast<size_t>(req.n));
  for (Seq& s : call->seqs) {
    s.engine_id = next_id_.fetch_add(1);
    s.text = std::make_unique<SequenceText>(*tokenizer_, req.stop, req.render_special);
  }
  call->cb = std::move(on_event);
  call->g = std::move(req);
  const std::string rid = call->g.request_id;
  const bool defer = options_.defer_siblings && call->g.n > 1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (calls_.count(rid)) {
      return InvalidArgumentError("request id " + rid + " is in flight");
    }
    calls_[rid] = call;
    // Mark before submitting: events may arrive before Submit returns.
    const int first = defer ? 1 : call->g.n;
    for (int i = 0; i < first; ++i) call->seqs[static_cast<size_t>(i)].submitted = true;
    call->siblings_sent = !defer;
  }
  const int first = defer ? 1 : call->g.n;
  for (int i = 0; i < first; ++i) {
    Status st = SubmitSeq(call, i);
    if (st.ok()) continue;
    // Undo: nothing may reach the client after an error return.
    {
      std::lock_guard<std::mutex> lock(call->mu);
      call->last_sent = true;
    }
    for (int j = 0; j < i; ++j) {
      (void)engine_->Abort(call->seqs[static_cast<size_t>(j)].engine_id);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.erase(rid);
    }
    if (st.code() == StatusCode::kResourceExhausted) rejections_++;
    return st;
  }
  return OkStatus();
}

void EngineBackend::Abort(const std::string& request_id) {
  std::shared_ptr<Call> call;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = calls_.find(request_id);
    if (it == calls_.end()) return;
    call = it->second;
  }
  std::vector<engine::RequestId> ids;
  {
    std::lock_guard<std::mutex> lock(call->mu);
    if (call->aborted || call->last_sent) return;
    call->aborted = true;
    for (const Seq& s : call->seqs) {
      if (s.submitted && !s.engine_done) ids.push_back(s.engine_id);
    }
  }
  aborts_++;
  for (engine::RequestId id : ids) (void)engine_->Abort(id);
}

void EngineBackend::AddToken(Call& call, Seq& seq,
                             const engine::RequestEvent& ev, size_t k,
                             GenerateEvent* out) {
  const engine::TokenId tok = ev.new_tokens[k];
  out->token_ids.push_back(tok);
  // With control tokens' text kept, the end-of-generation ones stay out.
  if (!call.g.render_special ||
      !std::binary_search(call.stop_ids.begin(), call.stop_ids.end(), tok)) {
    out->text += seq.text->Push(tok);
  }
  if (call.g.sampling.logprobs < 0) return;
  std::span<const std::pair<engine::TokenId, float>> top;
  if (k < ev.top_logprobs.size()) top = ev.top_logprobs[k];
  out->logprobs.push_back(
      WithText(tok, k < ev.logprobs.size() ? ev.logprobs[k] : 0.0f, top,
               call.g.sampling.logprobs));
}

PositionLogprobs EngineBackend::WithText(
    engine::TokenId token, float logprob,
    std::span<const std::pair<engine::TokenId, float>> top,
    int32_t max_top) const {
  PositionLogprobs p;
  p.chosen = {token, std::string(tokenizer_->TokenToPiece(token)), logprob};
  for (const auto& [id, lp] : top) {
    if (static_cast<int32_t>(p.top.size()) >= max_top) break;
    p.top.push_back({id, std::string(tokenizer_->TokenToPiece(id)), lp});
  }
  return p;
}

void EngineBackend::AddPromptLogprobs(Call& call,
                                      const engine::RequestEvent& ev,
                                      GenerateEvent* out) {
  // With sequence 0's first event (a one-token prompt has no others).
  if (!call.prompt_first_sent && !call.g.prompt_ids.empty()) {
    call.prompt_first_sent = true;
    PositionLogprobs first = WithText(call.g.prompt_ids[0], 0.0f, {}, 0);
    first.has_logprob = false;
    out->prompt_logprobs.push_back(std::move(first));
  }
  for (const engine::PromptTokenLogprob& e : ev.prompt_logprobs) {
    out->prompt_logprobs.push_back(
        WithText(e.token, e.logprob, e.top, call.g.prompt_logprobs));
  }
}

void EngineBackend::OnEngineEvent(const std::shared_ptr<Call>& call,
                                  int index, const engine::RequestEvent& ev) {
  std::vector<GenerateEvent> events;
  bool stop_engine = false;
  bool start_siblings = false;
  {
    std::lock_guard<std::mutex> lock(call->mu);
    if (call->last_sent) return;  // Submit failed; the client never knew
    Seq& seq = call->seqs[static_cast<size_t>(index)];
    GenerateEvent out;
    out.index = index;
    seq.tokens = std::max(seq.tokens, ev.num_output_tokens);
    seq.cached = ev.num_cached_tokens;
    if (index == 0 && ev.queue_seconds) call->queue_seconds = ev.queue_seconds;
    if (!seq.done && index == 0 && call->g.prompt_logprobs >= 0) {
      AddPromptLogprobs(*call, ev, &out);
    }
    if (!seq.done) {
      size_t k = 0;
      for (; k < ev.new_tokens.size() && !seq.text->stopped(); ++k) {
        AddToken(*call, seq, ev, k, &out);
      }
      if (seq.text->stopped() && k < ev.new_tokens.size()) {
        // A stop string inside a speculative run: the tokens after it
        // are not output.
        seq.tokens = ev.num_output_tokens -
                     static_cast<int>(ev.new_tokens.size() - k);
      }
      if (seq.text->stopped()) {
        out.finish = FinishReason::kStop;
        out.stop_string = seq.text->matched();
        seq.done = true;
        stop_engine = !ev.finished;
      } else if (ev.finished) {
        out.text += seq.text->Finish();
        out.finish = seq.text->stopped() ? FinishReason::kStop
                                         : MapReason(ev.reason);
        out.stop_string = seq.text->matched();
        if (*out.finish == FinishReason::kError) {
          out.error_message = ev.error.empty() ? "generation failed" : ev.error;
        }
        seq.done = true;
      }
      if (!out.text.empty() || !out.token_ids.empty() || out.finish ||
          !out.prompt_logprobs.empty()) {
        events.push_back(std::move(out));
      }
    }
    if (ev.finished) seq.engine_done = true;
    // After sequence 0's prefill (not a prompt-logprobs chunk before it).
    if (index == 0 && !call->siblings_sent &&
        (!ev.new_tokens.empty() || ev.finished)) {
      call->siblings_sent = true;
      start_siblings = true;
    }
  }
  if (stop_engine) {
    (void)engine_->Finish(call->seqs[static_cast<size_t>(index)].engine_id,
                          engine::FinishReason::kStop);
  }
  if (start_siblings) SubmitSiblings(call, &events);
  Emit(call, std::move(events));
}

void EngineBackend::SubmitSiblings(const std::shared_ptr<Call>& call,
                                   std::vector<GenerateEvent>* out) {
  const int n = call->g.n;
  bool aborted;
  {
    std::lock_guard<std::mutex> lock(call->mu);
    aborted = call->aborted;
    for (int i = 1; i < n; ++i) {
      Seq& s = call->seqs[static_cast<size_t>(i)];
      if (aborted) {
        s.done = true;  // never started
        GenerateEvent ev;
        ev.index = i;
        ev.finish = FinishReason::kAbort;
        out->push_back(std::move(ev));
      } else {
        s.submitted = true;
      }
    }
  }
  if (aborted) return;
  for (int i = 1; i < n; ++i) {
    Status st = SubmitSeq(call, i);
    if (st.ok()) continue;
    std::lock_guard<std::mutex> lock(call->mu);
    Seq& s = call->seqs[static_cast<size_t>(i)];
    s.submitted = false;
    s.done = true;
    GenerateEvent ev;
    ev.index = i;
    ev.finish = FinishReason::kError;
    ev.error_message = st.message();
    out->push_back(std::move(ev));
  }
  // An Abort() that raced with the submissions above may have missed them.
  std::vector<engine::RequestId> late;
  {
    std::lock_guard<std::mutex> lock(call->mu);
    if (call->aborted) {
      for (int i = 1; i < n; ++i) {
        const Seq& s = call->seqs[static_cast<size_t>(i)];
        if (s.submitted && !s.engine_done) late.push_back(s.engine_id);
      }
    }
  }
  for (engine::RequestId id : late) (void)engine_->Abort(id);
}

void EngineBackend::Emit(const std::shared_ptr<Call>& call,
                         std::vector<GenerateEvent> events) {
  bool finished = false;
  {
    std::lock_guard<std::mutex> lock(call->mu);
    if (call->last_sent) return;
    finished = call->siblings_sent &&
               std::all_of(call->seqs.begin(), call->seqs.end(),
                           [](const Seq& s) {
                             return s.done && (!s.submitted || s.engine_done);
                           });
    if (finished) {
      call->last_sent = true;
      Usage u;
      u.prompt_tokens = static_cast<int32_t>(call->g.prompt_ids.size());
      for (const Seq& s : call->seqs) u.completion_tokens += s.tokens;
      u.cached_prompt_tokens = call->seqs[0].cached;
      u.queue_seconds = call->queue_seconds;
      if (events.empty()) events.emplace_back();
      events.back().last = true;
      events.back().usage = u;
    }
  }
  if (finished) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.erase(call->g.request_id);
  }
  for (GenerateEvent& ev : events) call->cb(std::move(ev));
}

}  // namespace weft::server
