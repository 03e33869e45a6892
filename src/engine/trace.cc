#include "engine/trace.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include "util/log.h"
#include "util/strings.h"

namespace weft::engine {

std::string TraceMs(double ms) {
  if (!(ms >= 0) || !std::isfinite(ms)) return "null";
  return StrFormat("%.3f", ms);
}

StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(
    const std::string& path, bool append) {
  if (path.empty()) return InvalidArgumentError("empty trace path");
  std::FILE* f = std::fopen(path.c_str(), append ? "a" : "w");
  if (f == nullptr) {
    return InvalidArgumentError(StrFormat("cannot open trace file %s: %s",
                                          CEscape(path, 256).c_str(),
                                          std::strerror(errno)));
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(f, path));
}

TraceWriter::TraceWriter(std::FILE* f, std::string path)
    : f_(f), path_(std::move(path)) {}

TraceWriter::~TraceWriter() {
  Flush();
  if (std::fclose(f_) != 0 && !failed_) {
    LOG(ERROR) << "trace " << path_ << ": close failed";
  }
}

void TraceWriter::Line(const std::string& s) {
  if (failed_) return;
  buf_ += s;
  buf_ += '\n';
  ++lines_;
}

void TraceWriter::AddStart(const TraceStart& s) {
  Line(StrFormat(
      "{\"ev\":\"start\",\"unix_ms\":%lld,"
      "\"max_batched_tokens\":%d,\"prefill_chunk\":%d,"
      "\"idle_prefill_tokens\":%d,\"max_seqs\":%d,\"target_itl_ms\":%s,"
      "\"target_itl_ratio\":%s,\"policy\":\"%s\"}",
      (long long)s.unix_ms, s.max_batched_tokens, s.prefill_chunk,
      s.idle_prefill_tokens, s.max_seqs,
      s.target_itl_ms > 0 ? TraceMs(s.target_itl_ms).c_str() : "null",
      s.target_itl_ratio > 0 ? TraceMs(s.target_itl_ratio).c_str() : "null",
      s.policy));
}

void TraceWriter::AddPass(const PassTrace& p) {
  std::string line = StrFormat(
      "{\"ev\":\"pass\",\"step\":%llu,\"t_ms\":%s,\"seqs\":%d,\"decode\":%d,"
      "\"prefill_seqs\":%d,\"prefill_tokens\":%d,\"tokens\":%d,"
      "\"budget\":%d,\"admitted\":%d,\"preempted\":%d,\"running\":%d,"
      "\"waiting\":%d,\"finished\":%d,\"ok\":%s,\"schedule_ms\":%s,"
      "\"execute_ms\":%s,\"forward_ms\":%s,\"sample_ms\":%s,"
      "\"update_ms\":%s,\"emit_ms\":%s,\"pass_ms\":%s,\"predicted_ms\":%s,"
      "\"target_ms\":%s",
      (unsigned long long)p.step, TraceMs(p.t_ms).c_str(), p.seqs, p.decode,
      p.prefill_seqs, p.prefill_tokens, p.tokens, p.budget, p.admitted,
      p.preempted, p.running, p.waiting, p.finished, p.ok ? "true" : "false",
      TraceMs(p.schedule_ms).c_str(), TraceMs(p.execute_ms).c_str(),
      TraceMs(p.forward_ms).c_str(), TraceMs(p.sample_ms).c_str(),
      TraceMs(p.update_ms).c_str(), TraceMs(p.emit_ms).c_str(),
      TraceMs(p.pass_ms).c_str(), TraceMs(p.predicted_ms).c_str(),
      TraceMs(p.target_ms).c_str());
  if (p.draft_ms > 0) line += ",\"draft_ms\":" + TraceMs(p.draft_ms);
  if (!p.spec.empty()) {
    line += ",\"spec\":[";
    for (size_t i = 0; i < p.spec.size(); ++i) {
      line += StrFormat("%s[%lld,%d,%d]", i ? "," : "",
                        (long long)p.spec[i].id, p.spec[i].drafted,
                        p.spec[i].accepted);
    }
    line += "]";
  }
  Line(line + "}");
}

void TraceWriter::AddCostModel(const CostModelTrace& c) {
  Line(StrFormat(
      "{\"ev\":\"cost_model\",\"step\":%llu,\"samples\":%lld,"
      "\"fixed_ms\":%.4f,\"per_token_ms\":%.5f,\"per_logit_row_ms\":%.5f,"
      "\"per_1k_context_ms\":%.5f,\"rms_ms\":%.4f}",
      (unsigned long long)c.step, (long long)c.model.samples, c.model.coefficients.fixed_ms,
      c.model.coefficients.per_token_ms, c.model.coefficients.per_logit_row_ms,
      c.model.coefficients.per_1k_context_ms, c.model.rms_ms));
}

void TraceWriter::AddRequest(const RequestTrace& r) {
  if (failed_) return;
  std::string s = StrFormat(
      "{\"ev\":\"request\",\"id\":%lld,\"queued_ms\":%s,\"scheduled_ms\":%s,"
      "\"first_token_ms\":%s,\"finished_ms\":%s,\"prompt_tokens\":%d,"
      "\"cached_tokens\":%d,\"generated_tokens\":%d,\"preemptions\":%d,"
      "\"finish\":\"%s\",\"token_ms\":[",
      (long long)r.id, TraceMs(r.queued_ms).c_str(),
      TraceMs(r.scheduled_ms).c_str(), TraceMs(r.first_token_ms).c_str(),
      TraceMs(r.finished_ms).c_str(), r.prompt_tokens, r.cached_tokens,
      r.generated_tokens, r.preemptions, r.finish);
  for (size_t i = 0; i < r.token_ms.size(); ++i) {
    if (i > 0) s += ',';
    s += TraceMs(r.token_ms[i]);
  }
  s += "]}";
  Line(s);
}

void TraceWriter::Flush() {
  if (failed_ || buf_.empty()) return;
  const size_t n = std::fwrite(buf_.data(), 1, buf_.size(), f_);
  if (n != buf_.size() || std::fflush(f_) != 0) {
    failed_ = true;
    LOG(ERROR) << "trace " << path_ << ": write failed ("
               << std::strerror(errno) << "); tracing stops";
  }
  buf_.clear();
}

}  // namespace weft::engine
