#include "server/testing/fake_backend.h"

#include <algorithm>
#include <chrono>

#include "util/strings.h"

namespace weft::server::testing {

FakeBackend::FakeBackend(FakeBackendOptions options)
    : opt_(std::move(options)),
      token_delay_ms_(opt_.token_delay_ms),
      fail_after_(opt_.fail_after) {
  worker_ = std::thread([this] { Loop(); });
}

FakeBackend::~FakeBackend() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

std::string FakeBackend::ExpectedText(uint64_t seed, int index, int tokens) {
  std::string out;
  for (int t = 0; t < tokens; ++t) {
    out += kWords[(seed + index + t) % kNumWords];
    out += " ";
  }
  return out;
}

Readiness FakeBackend::readiness() const {
  std::lock_guard<std::mutex> lock(mu_);
  return readiness_;
}

ModelInfo FakeBackend::model_info() const {
  ModelInfo m;
  m.id = opt_.model_id;
  m.path = "/fake/model.gguf";
  m.architecture = "fake";
  m.context_length = opt_.context_length;
  m.vocab_size = opt_.vocab_size;
  m.created = 1700000000;
  m.chat_stop = opt_.chat_stop;
  m.chat_template_source = opt_.chat_template_source;
  return m;
}

EngineInfo FakeBackend::engine_info() const {
  EngineInfo e;
  e.scheduler_kind = "fake";
  e.threads = 1;
  e.max_in_flight = opt_.max_running > 0 ? opt_.max_running : 1024;
  return e;
}

BackendStats FakeBackend::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BackendStats s;
  for (const auto& r : running_) s.num_running += r->g.n;
  s.num_waiting = static_cast<int64_t>(waiting_.size());
  s.kv_blocks_total = 100;
  s.kv_blocks_used = s.num_running;
  s.kv_blocks_cached = 0;
  s.steps = steps_;
  s.aborts = aborts_;
  s.peak_in_flight = peak_;
  return s;
}

StatusOr<std::vector<int32_t>> FakeBackend::Tokenize(std::string_view text,
                                                     bool add_special,
                                                     bool parse_special) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    ++tokenize_waiters_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !hold_tokenize_; });
    --tokenize_waiters_;
  }
  std::vector<int32_t> ids;
  if (add_special) ids.push_back(1);
  for (unsigned char c : text) ids.push_back(c + 3);
  return ids;
}

StatusOr<std::string> FakeBackend::Detokenize(std::span<const int32_t> ids,
                                              bool /*render_special*/) {
  std::string out;
  for (int32_t id : ids) {
    if (id >= 3 && id < 259) {
      out += static_cast<char>(id - 3);
    } else if (id >= kWordIdBase && id < kWordIdBase + kNumWords) {
      out += std::string(kWords[id - kWordIdBase]) + " ";
    } else if (id < 0 || id >= opt_.vocab_size) {
      return InvalidArgumentError(StrFormat("token id %d out of range", id));
    }
  }
  return out;
}

StatusOr<std::string> FakeBackend::ApplyChatTemplate(
    const ChatTemplateRequest& req) {
  std::string out;
  for (const ChatMessage& m : req.messages) {
    std::string content = m.content.value_or("");
    if (content.find("{{raise}}") != std::string::npos) {
      return InvalidArgumentError("Conversation roles must alternate");
    }
    out += "<|" + m.role + "|>" + content + "\n";
  }
  if (req.add_generation_prompt) out += "<|assistant|>";
  return out;
}

Status FakeBackend::Submit(GenerateRequest req, EventCallback on_event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (readiness_ != Readiness::kReady) return UnavailableError("not ready");
  if (reject_) return ResourceExhaustedError("fake queue full");
  for (int32_t id : req.prompt_ids) {
    if (id < 0 || id >= opt_.vocab_size) {
      return InvalidArgumentError(StrFormat("token id %d out of range", id));
    }
  }
  submitted_.push_back(req);
  auto r = std::make_shared<Req>();
  r->seqs.resize(req.n);
  r->g = std::move(req);
  r->cb = std::move(on_event);
  r->submitted = std::chrono::steady_clock::now();
  waiting_.push_back(std::move(r));
  cv_.notify_all();
  return OkStatus();
}

void FakeBackend::Abort(const std::string& request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_.push_back(request_id);
  for (auto& r : running_) {
    if (r->g.request_id == request_id) r->aborted = true;
  }
  for (auto& r : waiting_) {
    if (r->g.request_id == request_id) r->aborted = true;
  }
  cv_.notify_all();
}

void FakeBackend::Step(Req& r, int index, std::vector<GenerateEvent>* out) {
  Seq& s = r.seqs[index];
  GenerateEvent ev;
  ev.index = index;
  const GenerateRequest& g = r.g;
  if (r.aborted) {
    ev.finish = FinishReason::kAbort;
  } else if (fail_after_ >= 0 && s.tokens >= fail_after_) {
    ev.finish = FinishReason::kError;
    ev.error_message = "injected failure";
  } else if (opt_.eos_after >= 0 && s.tokens >= opt_.eos_after &&
             !g.ignore_eos) {
    ev.finish = FinishReason::kStop;
  } else if (!opt_.script.empty()) {
    ev.text = opt_.script.substr(std::min(s.emitted, opt_.script.size()), 3);
    s.emitted += ev.text.size();
    s.tokens++;
    ev.token_ids.push_back(3);
    if (s.emitted >= opt_.script.size()) ev.finish = FinishReason::kStop;
  } else {
    uint64_t seed = g.sampling.seed.value_or(0);
    int w = static_cast<int>((seed + index + s.tokens) % kNumWords);
    s.text += std::string(kWords[w]) + " ";
    s.tokens++;
    ev.token_ids.push_back(kWordIdBase + w);
    if (g.sampling.logprobs >= 0) {
      PositionLogprobs p;
      p.chosen = {kWordIdBase + w, kWords[w] + std::string(" "), -0.5f};
      for (int k = 0; k < g.sampling.logprobs; ++k) {
        int alt = (w + k) % kNumWords;
        p.top.push_back({kWordIdBase + alt, kWords[alt] + std::string(" "),
                         -0.5f - 0.25f * k});
      }
      ev.logprobs.push_back(std::move(p));
    }
    // Stop strings: cut at the earliest match; otherwise hold back a tail
    // that could still start one.
    size_t cut = std::string::npos, hold = 0;
    std::string matched;
    for (const std::string& st : g.stop) {
      size_t pos = s.text.find(st);
      if (pos != std::string::npos && pos < cut) {
        cut = pos;
        matched = st;
      }
      hold = std::max(hold, st.size() - 1);
    }
    if (cut != std::string::npos) {
      ev.finish = FinishReason::kStop;
      ev.stop_string = matched;
      if (cut > s.emitted) ev.text = s.text.substr(s.emitted, cut - s.emitted);
      s.emitted = std::max(s.emitted, cut);
    } else {
      size_t safe = s.text.size() > hold ? s.text.size() - hold : 0;
      if (s.tokens >= g.max_tokens) {
        safe = s.text.size();
        ev.finish = FinishReason::kLength;
      }
      if (safe > s.emitted) ev.text = s.text.substr(s.emitted, safe - s.emitted);
      s.emitted = std::max(s.emitted, safe);
    }
  }
  if (ev.finish) s.done = true;
  out->push_back(std::move(ev));
}

void FakeBackend::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] {
      return stop_ || !running_.empty() || !waiting_.empty();
    });
    if (stop_) break;
    // Admit.
    while (!waiting_.empty() &&
           (opt_.max_running <= 0 ||
            static_cast<int>(running_.size()) < opt_.max_running ||
            waiting_.front()->aborted)) {
      auto r = waiting_.front();
      waiting_.pop_front();
      r->queue_s = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - r->submitted)
                       .count();
      running_.push_back(std::move(r));
    }
    peak_ = std::max<int64_t>(peak_, running_.size());
    steps_++;
    // One token for every live sequence.
    std::vector<std::pair<EventCallback, GenerateEvent>> calls;
    for (auto& r : running_) {
      std::vector<GenerateEvent> evs;
      for (int i = 0; i < r->g.n; ++i) {
        if (!r->seqs[i].done) Step(*r, i, &evs);
      }
      bool all_done = std::all_of(r->seqs.begin(), r->seqs.end(),
                                  [](const Seq& s) { return s.done; });
      if (all_done) {
        GenerateEvent last;
        last.last = true;
        Usage u;
        u.prompt_tokens = static_cast<int32_t>(r->g.prompt_ids.size());
        for (const Seq& s : r->seqs) u.completion_tokens += s.tokens;
        u.queue_seconds = r->queue_s;
        last.usage = u;
        evs.push_back(std::move(last));
        if (r->aborted) aborts_++;
      }
      for (auto& e : evs) calls.emplace_back(r->cb, std::move(e));
    }
    std::erase_if(running_, [](const std::shared_ptr<Req>& r) {
      return std::all_of(r->seqs.begin(), r->seqs.end(),
                         [](const Seq& s) { return s.done; });
    });
    int delay = token_delay_ms_;
    lock.unlock();
    for (auto& [cb, ev] : calls) cb(std::move(ev));
    calls.clear();
    if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    lock.lock();
  }
}

void FakeBackend::set_readiness(Readiness r) { SetLocked(&readiness_, r); }
void FakeBackend::set_token_delay_ms(int ms) { SetLocked(&token_delay_ms_, ms); }
void FakeBackend::HoldTokenize(bool hold) {
  SetLocked(&hold_tokenize_, hold);
  cv_.notify_all();
}
bool FakeBackend::WaitTokenizeWaiters(int n) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::seconds(5),
                      [&] { return tokenize_waiters_ >= n; });
}
void FakeBackend::set_fail_after(int n) { SetLocked(&fail_after_, n); }
void FakeBackend::set_reject_submits(bool reject) { SetLocked(&reject_, reject); }
std::vector<std::string> FakeBackend::aborted_ids() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}
std::vector<GenerateRequest> FakeBackend::submitted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return submitted_;
}

bool FakeBackend::WaitFor(
    const std::function<bool(const BackendStats&)>& pred) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred(Stats())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace weft::server::testing
