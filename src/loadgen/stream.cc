#include "loadgen/stream.h"

#include <nlohmann/json.hpp>

#include "loadgen/stats.h"
#include "util/enum_name.h"

namespace weft::loadgen {

using json = nlohmann::json;

const char* FailureKindName(FailureKind k) {
  static constexpr const char* kNames[] = {
      "none",    "http_status",    "connection_error",
      "timeout", "invalid_stream", "stream_error"};
  return EnumName<FailureKind::kStreamError>(k, kNames, "unknown");
}

namespace {

// Text of a choice: completions "text", chat "delta.content" (or a
// reasoning field some servers use).
std::string ChoiceText(const json& choice) {
  if (auto t = choice.find("text"); t != choice.end() && t->is_string()) {
    return t->get<std::string>();
  }
  if (auto d = choice.find("delta"); d != choice.end() && d->is_object()) {
    std::string out;
    for (const char* key : {"content", "reasoning_content", "reasoning"}) {
      if (auto c = d->find(key); c != d->end() && c->is_string()) {
        out += c->get<std::string>();
      }
    }
    return out;
  }
  return "";
}

// Tokens listed in a choice's logprobs: completions "tokens", chat
// "content"; 0 when absent.
int64_t LogprobTokens(const json& choice) {
  auto lp = choice.find("logprobs");
  if (lp == choice.end() || !lp->is_object()) return 0;
  for (const char* key : {"tokens", "content"}) {
    if (auto t = lp->find(key); t != lp->end() && t->is_array()) {
      return static_cast<int64_t>(t->size());
    }
  }
  return 0;
}

}  // namespace

bool ParseChunk(std::string_view data, ChunkInfo* out) {
  *out = ChunkInfo();
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    std::string msg = "error event";
    if (e->is_object()) {
      if (auto m = e->find("message"); m != e->end() && m->is_string()) {
        msg = m->get<std::string>();
      }
    } else if (e->is_string()) {
      msg = e->get<std::string>();
    }
    out->error = msg;
    return true;
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    if (auto c = u->find("completion_tokens");
        c != u->end() && c->is_number_integer()) {
      out->completion_tokens = c->get<int64_t>();
    }
    if (auto p = u->find("prompt_tokens");
        p != u->end() && p->is_number_integer()) {
      out->prompt_tokens = p->get<int64_t>();
    }
  }
  if (auto cs = j.find("choices"); cs != j.end() && cs->is_array()) {
    for (const json& choice : *cs) {
      if (!choice.is_object()) continue;
      if (auto f = choice.find("finish_reason");
          f != choice.end() && f->is_string()) {
        out->finish_reason = f->get<std::string>();
      }
      const int64_t lp = LogprobTokens(choice);
      if (lp > 0) {
        out->tokens += lp;
      } else if (!ChoiceText(choice).empty()) {
        out->tokens += 1;
      }
    }
  }
  return true;
}

std::optional<double> RequestResult::tpot() const {
  if (!ok() || ttft < 0) return std::nullopt;
  return Tpot(e2e, ttft, output_tokens);
}

void StreamAccumulator::OnBytes(std::string_view bytes, double at) {
  if (!r_->ok()) return;
  events_.clear();
  parser_.Feed(bytes, &events_);
  for (const SseEvent& ev : events_) {
    OnEvent(ev, at);
    if (!r_->ok()) return;
  }
}

void StreamAccumulator::OnEvent(const SseEvent& ev, double at) {
  if (done_) return;  // anything after [DONE] is ignored
  if (ev.done) {
    done_ = true;
    return;
  }
  ChunkInfo c;
  if (!ParseChunk(ev.data, &c)) {
    return Fail(FailureKind::kInvalidStream,
                "unparsable chunk: " + ev.data.substr(0, 120), at);
  }
  if (c.error || ev.event == "error") {
    return Fail(FailureKind::kStreamError, c.error.value_or(ev.data), at);
  }
  if (c.finish_reason) r_->finish_reason = *c.finish_reason;
  if (c.prompt_tokens) r_->prompt_tokens = *c.prompt_tokens;
  int64_t k = c.tokens;
  if (c.completion_tokens) {
    r_->usage_seen = true;
    // A per-chunk (continuous) usage count tells how many tokens came.
    if (k > 0 && *c.completion_tokens > last_usage_tokens_) {
      k = *c.completion_tokens - last_usage_tokens_;
    }
    last_usage_tokens_ = std::max(last_usage_tokens_, *c.completion_tokens);
    r_->output_tokens = *c.completion_tokens;
  }
  if (k <= 0) return;
  const double rel = at - r_->sent_at;
  if (r_->chunk_at.empty()) {
    r_->ttft = rel;
  } else {
    const double gap = (at - r_->chunk_at.back()) / static_cast<double>(k);
    for (int64_t i = 0; i < k; ++i) r_->itl.push_back(gap);
  }
  r_->chunk_at.push_back(at);
  r_->chunk_tokens.push_back(k);
  counted_ += k;
}

void StreamAccumulator::OnEnd(double at) {
  if (!r_->ok()) return;
  events_.clear();
  parser_.Finish(&events_);
  for (const SseEvent& ev : events_) {
    OnEvent(ev, at);
    if (!r_->ok()) return;
  }
  r_->e2e = at - r_->sent_at;
  if (!done_) {
    return Fail(FailureKind::kInvalidStream, "stream ended without [DONE]", at);
  }
  if (r_->chunk_at.empty()) {
    return Fail(FailureKind::kInvalidStream, "no content in the stream", at);
  }
  if (!r_->usage_seen) r_->output_tokens = counted_;
}

void StreamAccumulator::Fail(FailureKind kind, std::string error, double at) {
  if (!r_->ok()) return;
  r_->failure = kind;
  r_->error = std::move(error);
  r_->e2e = at - r_->sent_at;
}

}  // namespace weft::loadgen
