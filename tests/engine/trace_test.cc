// The engine trace (engine/trace.h, docs/trace.md): every line of the file
// is a JSON object (checked by a small strict parser below), there is one
// request record per request, and the per-pass and per-request figures
// agree with the scheduler's counters and with what the clients saw.
#include "engine/trace.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tests/engine/fake_executor.h"

namespace weft::engine {
namespace {

// A flat JSON object: values are numbers, strings, booleans, null or arrays
// of numbers (all the trace writes).
struct JsonValue {
  enum Kind { kNull, kNumber, kString, kBool, kArray } kind = kNull;
  double num = 0;
  std::string str;
  bool b = false;
  std::vector<double> arr;
};
using JsonObject = std::map<std::string, JsonValue>;

// Strict enough to reject what a real JSON parser rejects for this subset.
class FlatJsonParser {
 public:
  explicit FlatJsonParser(const std::string& s) : s_(s) {}
  bool Parse(JsonObject* out) {
    Ws();
    if (!Eat('{')) return false;
    Ws();
    if (Eat('}')) return End();
    for (;;) {
      std::string key;
      Ws();
      if (!String(&key)) return false;
      Ws();
      if (!Eat(':')) return false;
      Ws();
      JsonValue v;
      if (!Value(&v)) return false;
      if (out->count(key)) return false;  // duplicate key
      (*out)[key] = std::move(v);
      Ws();
      if (Eat('}')) return End();
      if (!Eat(',')) return false;
    }
  }

 private:
  bool End() {
    Ws();
    return i_ == s_.size();
  }
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
      ++i_;
  }
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Lit(const char* w) {
    const std::string ws(w);
    if (s_.compare(i_, ws.size(), ws) != 0) return false;
    i_ += ws.size();
    return true;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\' || static_cast<unsigned char>(s_[i_]) < 0x20) {
        return false;  // the trace never needs escapes
      }
      out->push_back(s_[i_++]);
    }
    return Eat('"');
  }
  bool Number(double* out) {
    const size_t start = i_;
    Eat('-');
    if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_])))
      return false;
    if (s_[i_] == '0' && i_ + 1 < s_.size() &&
        std::isdigit(static_cast<unsigned char>(s_[i_ + 1]))) {
      return false;  // leading zero
    }
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
      ++i_;
    if (Eat('.')) {
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_])))
        return false;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        ++i_;
    }
    *out = std::stod(s_.substr(start, i_ - start));
    return true;
  }
  bool Value(JsonValue* v) {
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '"') {
      v->kind = JsonValue::kString;
      return String(&v->str);
    }
    if (c == 't' || c == 'f') {
      v->kind = JsonValue::kBool;
      v->b = c == 't';
      return Lit(c == 't' ? "true" : "false");
    }
    if (c == 'n') return Lit("null");
    if (c == '[') {
      ++i_;
      v->kind = JsonValue::kArray;
      Ws();
      if (Eat(']')) return true;
      for (;;) {
        Ws();
        double d;
        if (!Number(&d)) return false;
        v->arr.push_back(d);
        Ws();
        if (Eat(']')) return true;
        if (!Eat(',')) return false;
      }
    }
    v->kind = JsonValue::kNumber;
    return Number(&v->num);
  }

  const std::string& s_;
  size_t i_ = 0;
};

std::vector<JsonObject> ReadTrace(const std::string& path) {
  std::vector<JsonObject> out;
  std::ifstream f(path);
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    JsonObject o;
    EXPECT_TRUE(FlatJsonParser(line).Parse(&o)) << "line " << n << ": " << line;
    EXPECT_EQ(o["ev"].kind, JsonValue::kString) << line;
    out.push_back(std::move(o));
  }
  return out;
}

double Num(JsonObject& o, const std::string& key) {
  EXPECT_TRUE(o.count(key)) << "missing " << key;
  EXPECT_EQ(o[key].kind, JsonValue::kNumber) << key;
  return o[key].num;
}

// Samples like the fake model; optionally reports a forward/sample split.
class TimedExecutor : public Executor {
 public:
  bool report_times = false;
  StatusOr<std::vector<SampledToken>> Execute(const StepPlan& plan) override {
    std::vector<SampledToken> out;
    for (const ScheduledSeq& s : plan.seqs) {
      if (s.needs_logits) {
        SampledToken t;
        t.id = s.id;
        t.token = testing::FakeToken(s.id, s.start_pos + s.num_new_tokens);
        out.push_back(std::move(t));
      }
    }
    return out;
  }
  ExecuteTimes LastExecuteTimes() const override {
    ExecuteTimes t;
    if (report_times) {
      t.forward_ms = 0.25;
      t.sample_ms = 0.125;
    }
    return t;
  }
};

std::string TracePath(const std::string& name) {
  return ::testing::TempDir() + "/weft_trace_" + name + ".jsonl";
}

TEST(TraceWriterTest, FormatsNullForUnknownTimes) {
  EXPECT_EQ(TraceMs(-1), "null");
  EXPECT_EQ(TraceMs(1.5), "1.500");
  EXPECT_EQ(TraceMs(std::nan("")), "null");
  const std::string path = TracePath("writer");
  auto w = TraceWriter::Open(path, false).value();
  PassTrace p;
  p.step = 3;
  p.decode = 2;
  p.prefill_tokens = 5;
  p.tokens = 7;
  w->AddPass(p);
  RequestTrace r;
  r.id = 9;
  r.finish = "length";
  w->AddRequest(r);
  r.token_ms = {1, 2.5};
  w->AddRequest(r);
  w.reset();
  std::vector<JsonObject> lines = ReadTrace(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["forward_ms"].kind, JsonValue::kNull);
  EXPECT_EQ(lines[0]["ok"].kind, JsonValue::kBool);
  EXPECT_EQ(Num(lines[0], "step"), 3);
  EXPECT_EQ(lines[1]["scheduled_ms"].kind, JsonValue::kNull);
  EXPECT_TRUE(lines[1]["token_ms"].arr.empty());
  EXPECT_EQ(lines[2]["token_ms"].arr, (std::vector<double>{1, 2.5}));
  EXPECT_EQ(lines[2]["finish"].str, "length");
}

TEST(TraceWriterTest, UnopenableFileIsAnErrorNotACrash) {
  EngineOptions o;
  o.trace_path = "/nonexistent-dir/x/trace.jsonl";
  auto e = Engine::Create(SchedulerConfig(), kv::KvCacheConfig(),
                          std::make_unique<TimedExecutor>(), o);
  EXPECT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("trace"), std::string::npos);
}

// Many requests through a small cache (preemptions), chunked prompts, and
// aborts; then every count in the trace is checked.
TEST(EngineTraceTest, CountsMatchTheSchedulerAndTheClients) {
  SchedulerConfig c;
  c.max_batched_tokens = 24;
  c.max_seqs = 6;
  c.prefill_chunk = 8;
  c.idle_prefill_tokens = 40;  // passes without a decode may hold 40
  kv::KvCacheConfig k;
  k.num_blocks = 14;
  k.block_size = 4;
  const std::string path = TracePath("engine");
  EngineOptions o;
  o.trace_path = path;
  std::mutex mu;
  std::map<RequestId, int> tokens_seen;
  std::map<RequestId, std::string> reason;
  std::map<RequestId, int> prompt_len;
  SchedulerStats sched;
  EngineStats loop;
  constexpr int kRequests = 30;
  {
    auto engine =
        Engine::Create(c, k, std::make_unique<TimedExecutor>(), o).value();
    for (int i = 0; i < kRequests; ++i) {
      RequestSpec spec;
      spec.id = 100 + i;
      const int n = 3 + (i * 7) % 19;  // 3..21 tokens: some chunked
      for (int t = 0; t < n; ++t) spec.prompt.push_back(50 + t + i);
      spec.stop.max_tokens = 4 + i % 13;
      prompt_len[spec.id] = n;
      ASSERT_TRUE(engine
                      ->Submit(std::move(spec),
                               [&](const RequestEvent& ev) {
                                 std::lock_guard<std::mutex> lock(mu);
                                 tokens_seen[ev.id] +=
                                     static_cast<int>(ev.new_tokens.size());
                                 if (ev.finished) {
                                   reason[ev.id] =
                                       std::string(FinishReasonName(ev.reason));
                                 }
                               })
                      .ok());
      if (i % 9 == 8) (void)engine->Abort(100 + i - 1);
    }
    engine->WaitUntilIdle();
    sched = engine->stats();
    loop = engine->loop_stats();
  }
  std::vector<JsonObject> lines = ReadTrace(path);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0]["ev"].str, "start");
  EXPECT_EQ(Num(lines[0], "max_batched_tokens"), 24);
  EXPECT_EQ(Num(lines[0], "prefill_chunk"), 8);
  EXPECT_EQ(Num(lines[0], "max_seqs"), 6);

  int64_t passes = 0, tokens = 0, decode = 0, prefill = 0, preempted = 0;
  int64_t finished_in_passes = 0;
  double last_step = 0, last_t = -1;
  std::set<int64_t> ids;
  int64_t req_preemptions = 0, generated = 0;
  int64_t cost_models = 0, predicted = 0;
  for (size_t li = 1; li < lines.size(); ++li) {
    JsonObject& o = lines[li];
    const std::string ev = o["ev"].str;
    if (ev == "pass") {
      ++passes;
      const double d = Num(o, "decode"), pt = Num(o, "prefill_tokens");
      const double t = Num(o, "tokens");
      EXPECT_EQ(d + pt, t);
      EXPECT_LE(t, Num(o, "budget"));
      // The configured budget when a running request decodes at the start
      // of the pass (it stays if the pass preempts them all), else the idle
      // one. An idle pass may still hold decodes, but only admitted ones: a
      // preempted request whose blocks, all but its last token, are still
      // in the prefix cache resumes as a one-token decode (see
      // SchedulerTest.PreemptedRequestResumesFromItsCachedBlocks).
      if (Num(o, "budget") == 40) {
        EXPECT_LE(d, Num(o, "admitted"));
      } else {
        EXPECT_EQ(Num(o, "budget"), 24);
      }
      EXPECT_EQ(Num(o, "seqs"), d + Num(o, "prefill_seqs"));
      EXPECT_LE(Num(o, "seqs"), 6);
      EXPECT_GE(pt, Num(o, "prefill_seqs"));
      EXPECT_GT(Num(o, "step"), last_step);
      last_step = Num(o, "step");
      EXPECT_GE(Num(o, "t_ms"), last_t);
      last_t = Num(o, "t_ms");
      EXPECT_TRUE(o["ok"].b);
      EXPECT_EQ(o["forward_ms"].kind, JsonValue::kNull);  // not reported
      for (const char* key :
           {"schedule_ms", "execute_ms", "update_ms", "emit_ms", "pass_ms"}) {
        EXPECT_GE(Num(o, key), 0) << key;
      }
      EXPECT_EQ(o["target_ms"].kind, JsonValue::kNull);  // no target set
      if (o["predicted_ms"].kind != JsonValue::kNull) {
        ++predicted;
        EXPECT_GE(Num(o, "predicted_ms"), 0);
      }
      EXPECT_LE(Num(o, "running"), 6);
      tokens += static_cast<int64_t>(t);
      decode += static_cast<int64_t>(d);
      prefill += static_cast<int64_t>(pt);
      preempted += static_cast<int64_t>(Num(o, "preempted"));
      finished_in_passes += static_cast<int64_t>(Num(o, "finished"));
    } else if (ev == "cost_model") {
      ++cost_models;
      EXPECT_GE(Num(o, "samples"), 16);
      EXPECT_LE(Num(o, "step"), last_step);
      for (const char* key : {"fixed_ms", "per_token_ms", "per_logit_row_ms",
                              "per_1k_context_ms", "rms_ms"}) {
        EXPECT_GE(Num(o, key), 0) << key;
      }
    } else if (ev == "request") {
      const int64_t id = static_cast<int64_t>(Num(o, "id"));
      EXPECT_TRUE(ids.insert(id).second) << "two records for " << id;
      const int gen = static_cast<int>(Num(o, "generated_tokens"));
      EXPECT_EQ(gen, tokens_seen[id]) << id;
      EXPECT_EQ(o["token_ms"].arr.size(), static_cast<size_t>(gen)) << id;
      EXPECT_EQ(o["finish"].str, reason[id]) << id;
      EXPECT_EQ(Num(o, "prompt_tokens"), prompt_len[id]);
      EXPECT_GE(Num(o, "cached_tokens"), 0);
      EXPECT_LT(Num(o, "cached_tokens"), prompt_len[id]);
      const double q = Num(o, "queued_ms"), f = Num(o, "finished_ms");
      EXPECT_LE(q, f);
      if (o["scheduled_ms"].kind == JsonValue::kNumber) {
        EXPECT_LE(q, o["scheduled_ms"].num);
        EXPECT_LE(o["scheduled_ms"].num, f);
      } else {
        EXPECT_EQ(gen, 0) << "tokens without being scheduled: " << id;
      }
      if (gen > 0) {
        EXPECT_EQ(o["first_token_ms"].num, o["token_ms"].arr.front());
        EXPECT_LE(o["scheduled_ms"].num, o["first_token_ms"].num);
        EXPECT_LE(o["token_ms"].arr.back(), f);
        for (size_t t = 1; t < o["token_ms"].arr.size(); ++t) {
          EXPECT_LE(o["token_ms"].arr[t - 1], o["token_ms"].arr[t]);
        }
      } else {
        EXPECT_EQ(o["first_token_ms"].kind, JsonValue::kNull);
      }
      req_preemptions += static_cast<int64_t>(Num(o, "preemptions"));
      generated += gen;
    } else {
      ADD_FAILURE() << "unexpected record " << ev;
    }
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kRequests));
  // The cost model is written when ready (16 passes seen, the first pass
  // not counted) and every 64 after; passes then carry its prediction.
  ASSERT_GT(passes, 17);
  EXPECT_EQ(cost_models, 1 + (passes - 1) / 64);
  EXPECT_GE(predicted, passes - 17);
  EXPECT_EQ(passes, sched.num_steps);
  EXPECT_EQ(passes, loop.num_passes);
  EXPECT_EQ(tokens, sched.num_scheduled_tokens);
  EXPECT_EQ(decode, loop.num_decode_tokens);
  EXPECT_EQ(prefill, loop.num_prefill_tokens);
  EXPECT_EQ(preempted, sched.num_preemptions);
  EXPECT_EQ(req_preemptions, sched.num_preemptions);
  EXPECT_GT(sched.num_preemptions, 0) << "the cache should be too small";
  EXPECT_LE(decode, generated);  // every decode samples one token
  EXPECT_LE(finished_in_passes, kRequests);
  EXPECT_EQ(loop.trace_lines, static_cast<int64_t>(lines.size()));
  EXPECT_FALSE(loop.trace_failed);
}

TEST(EngineTraceTest, AppendsRunsAndRecordsTheExecutorsSplit) {
  const std::string path = TracePath("append");
  for (int run = 0; run < 2; ++run) {
    EngineOptions o;
    o.trace_path = path;
    o.trace_append = run > 0;
    auto exec = std::make_unique<TimedExecutor>();
    exec->report_times = true;
    auto engine = Engine::Create(SchedulerConfig(), kv::KvCacheConfig(),
                                 std::move(exec), o)
                      .value();
    RequestSpec spec;
    spec.id = 1;
    spec.prompt = {5, 6, 7};
    spec.stop.max_tokens = 3;
    ASSERT_TRUE(engine->Submit(std::move(spec), nullptr).ok());
    engine->WaitUntilIdle();
    const EngineStats st = engine->loop_stats();
    EXPECT_EQ(st.num_passes, 3);  // prefill + 2 decodes
    EXPECT_DOUBLE_EQ(st.forward_ms, 0.75);
    EXPECT_DOUBLE_EQ(st.sample_ms, 0.375);
  }
  std::vector<JsonObject> lines = ReadTrace(path);
  int starts = 0, passes = 0, requests = 0;
  for (JsonObject& o : lines) {
    const std::string ev = o["ev"].str;
    starts += ev == "start";
    requests += ev == "request";
    if (ev == "pass") {
      ++passes;
      EXPECT_EQ(Num(o, "forward_ms"), 0.25);
      EXPECT_EQ(Num(o, "sample_ms"), 0.125);
    }
  }
  EXPECT_EQ(starts, 2);
  EXPECT_EQ(passes, 6);
  EXPECT_EQ(requests, 2);
}

}  // namespace
}  // namespace weft::engine
