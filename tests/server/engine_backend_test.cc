// EngineBackend over the real Engine with a scripted executor and a small
// synthetic SPM vocabulary: stop strings across token boundaries and their
// hold-back, EOS, n > 1 with seeds, logprobs, abort, usage, validation,
// tokenize/detokenize and chat templates.
#include "server/engine_backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"
#include "util/strings.h"

namespace weft::server {
namespace {

using engine::TokenId;

// Token ids of the synthetic vocabulary.
enum : TokenId {
  kUnk = 0, kBos = 1, kEos = 2,
  kByte0 = 3,  // <0x00> .. <0xFF> are 3 .. 258
  kHello = 259, kWorld, kSt, kOp, kBang, kThe, kEnd, kSpace, kNumTokens
};
TokenId ByteTok(int b) { return kByte0 + b; }

std::shared_ptr<const tokenizer::Tokenizer> MakeTokenizer() {
  tokenizer::Vocab v;
  v.kind = tokenizer::VocabKind::kLlama;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) v.tokens.push_back(StrFormat("<0x%02X>", b));
  for (const char* w : {"\xE2\x96\x81Hello", "\xE2\x96\x81world",
                        "\xE2\x96\x81ST", "OP", "!", "\xE2\x96\x81the",
                        "\xE2\x96\x81" "end", "\xE2\x96\x81"}) {
    v.tokens.push_back(w);
  }
  v.attrs.assign(v.tokens.size(), tokenizer::kAttrNormal);
  v.attrs[kUnk] = tokenizer::kAttrUnknown;
  v.attrs[kBos] = tokenizer::kAttrControl;
  v.attrs[kEos] = tokenizer::kAttrControl;
  for (int b = 0; b < 256; ++b) v.attrs[ByteTok(b)] = tokenizer::kAttrByte;
  v.scores.assign(v.tokens.size(), 0.0f);
  v.bos = kBos;
  v.eos = kEos;
  v.unk = kUnk;
  v.eog_ids = {kEos};
  v.add_bos = true;
  v.add_space_prefix = true;
  EXPECT_TRUE(tokenizer::FinalizeVocab(&v).ok());
  auto tok = tokenizer::Tokenizer::Create(std::move(v));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return std::shared_ptr<const tokenizer::Tokenizer>(std::move(*tok));
}

// Output token k of a request is script[(k + seed) % size]; logprob
// -(k + 1) / 10; top-N alternatives are the next script entries.
class ScriptExecutor : public engine::Executor {
 public:
  ScriptExecutor(std::vector<TokenId> script, int delay_ms)
      : script_(std::move(script)), delay_ms_(delay_ms) {}

  StatusOr<std::vector<engine::SampledToken>> Execute(
      const engine::StepPlan& plan) override {
    if (delay_ms_ > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    }
    std::vector<engine::SampledToken> out;
    for (const engine::ScheduledSeq& s : plan.seqs) {
      if (!s.needs_logits) continue;
      const int k = s.start_pos + s.num_new_tokens - s.num_prompt_tokens;
      const uint64_t seed = s.sampling->seed.value_or(0);
      auto at = [&](int i) {
        return script_[(static_cast<uint64_t>(i) + seed) % script_.size()];
      };
      engine::SampledToken t;
      t.id = s.id;
      t.token = at(k);
      t.logprob = -0.1f * static_cast<float>(k + 1);
      for (int j = 0; j < s.sampling->logprobs.value_or(0); ++j) {
        t.top_logprobs.push_back({at(k + j), -0.1f * (j + 1)});
      }
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  std::vector<TokenId> script_;
  int delay_ms_;
};

// Collects a request's events; Wait() blocks until the last one.
class Collector {
 public:
  EventCallback Callback() {
    return [this](GenerateEvent ev) {
      std::lock_guard<std::mutex> lock(mu_);
      EXPECT_FALSE(done_) << "event after the last one";
      done_ = ev.last;
      events_.push_back(std::move(ev));
      cv_.notify_all();
    };
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return done_; });
  }
  bool WaitForTokens(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] {
      int t = 0;
      for (const auto& e : events_) t += static_cast<int>(e.token_ids.size());
      return t >= n;
    });
  }
  std::vector<GenerateEvent> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::string Text(int index) {
    std::string s;
    for (const GenerateEvent& e : events()) {
      if (e.index == index) s += e.text;
    }
    return s;
  }
  std::vector<int32_t> Tokens(int index) {
    std::vector<int32_t> t;
    for (const GenerateEvent& e : events()) {
      if (e.index == index) t.insert(t.end(), e.token_ids.begin(), e.token_ids.end());
    }
    return t;
  }
  std::optional<FinishReason> Finish(int index) {
    std::optional<FinishReason> f;
    for (const GenerateEvent& e : events()) {
      if (e.index == index && e.finish) {
        EXPECT_FALSE(f) << "two finishes for sequence " << index;
        f = e.finish;
      }
    }
    return f;
  }
  Usage usage() {
    auto ev = events();
    EXPECT_FALSE(ev.empty());
    EXPECT_TRUE(ev.back().last);
    return ev.back().usage.value_or(Usage{});
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<GenerateEvent> events_;
  bool done_ = false;
};

std::unique_ptr<EngineBackend> MakeBackend(std::vector<TokenId> script,
                                           int delay_ms = 0,
                                           std::string chat_template = "") {
  auto tok = MakeTokenizer();
  engine::SchedulerConfig sc;
  sc.max_batched_tokens = 256;
  sc.max_seqs = 8;
  sc.max_model_len = 512;
  kv::KvCacheConfig kv;
  kv.num_blocks = 64;
  kv.block_size = 16;
  auto eng = engine::Engine::Create(
      sc, kv, std::make_unique<ScriptExecutor>(std::move(script), delay_ms));
  EXPECT_TRUE(eng.ok()) << eng.status().ToString();
  EngineBackendOptions opt;
  opt.model_info.id = "synthetic";
  opt.model_info.context_length = 512;
  auto b = EngineBackend::Create(
      tok, std::move(*eng), ChatRenderer::Create(chat_template, "<s>", "</s>"),
      opt, nullptr);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return std::move(*b);
}

ChatMessage Msg(std::string role, std::string content) {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

GenerateRequest Req(std::string id, int max_tokens,
                    std::vector<std::string> stop = {}) {
  GenerateRequest g;
  g.request_id = std::move(id);
  g.prompt_ids = {kBos, kThe, kEnd};
  g.max_tokens = max_tokens;
  g.stop = std::move(stop);
  g.sampling.temperature = 0;
  return g;
}

TEST(EngineBackendTest, FirstTokenKeepsItsLeadingSpace) {
  auto b = MakeBackend({kHello, kWorld, kBang});
  Collector c;
  ASSERT_TRUE(b->Submit(Req("r", 3), c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  EXPECT_EQ(c.Text(0), " Hello world!");
  EXPECT_EQ(c.Finish(0), FinishReason::kLength);
  EXPECT_EQ(c.Tokens(0), (std::vector<int32_t>{kHello, kWorld, kBang}));
  Usage u = c.usage();
  EXPECT_EQ(u.prompt_tokens, 3);
  EXPECT_EQ(u.completion_tokens, 3);
}

TEST(EngineBackendTest, StopStringAcrossTokensIsHeldBackAndCut) {
  // " Hello ST" + "OP" completes "STOP" across two tokens.
  auto b = MakeBackend({kHello, kSt, kOp, kWorld, kBang});
  Collector c;
  ASSERT_TRUE(b->Submit(Req("r", 50, {"STOP"}), c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  auto events = c.events();
  // The event of the " ST" token carries no "ST" text.
  for (const GenerateEvent& e : events) {
    EXPECT_EQ(e.text.find("S"), std::string::npos) << e.text;
  }
  EXPECT_EQ(c.Text(0), " Hello ");
  EXPECT_EQ(c.Finish(0), FinishReason::kStop);
  // Generation stopped at the token that completed the stop string.
  EXPECT_EQ(c.Tokens(0), (std::vector<int32_t>{kHello, kSt, kOp}));
  EXPECT_EQ(c.usage().completion_tokens, 3);
  b->Stats();  // no crash after the engine finished the request
}

TEST(EngineBackendTest, HeldBackTextIsReleasedWhenItCannotMatch) {
  auto b = MakeBackend({kSt, kWorld, kBang});
  Collector c;
  ASSERT_TRUE(b->Submit(Req("r", 3, {"STOP", "xyz"}), c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  auto events = c.events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].text, " ");  // "ST" could start "STOP"
  EXPECT_EQ(c.Text(0), " ST world!");
  EXPECT_EQ(c.Finish(0), FinishReason::kLength);
}

TEST(EngineBackendTest, HeldBackTextIsReleasedAtTheEnd) {
  auto b = MakeBackend({kHello, kSt});
  Collector c;
  ASSERT_TRUE(b->Submit(Req("r", 2, {"STOP"}), c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  EXPECT_EQ(c.Text(0), " Hello ST");
  EXPECT_EQ(c.Finish(0), FinishReason::kLength);
}

TEST(EngineBackendTest, StopStringInsideOneToken) {
  auto b = MakeBackend({kHello, kWorld, kBang});
  Collector c;
  ASSERT_TRUE(b->Submit(Req("r", 10, {"orl"}), c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  EXPECT_EQ(c.Text(0), " Hello w");
  EXPECT_EQ(c.Finish(0), FinishReason::kStop);
}

TEST(EngineBackendTest, EosStopsUnlessIgnored) {
  auto b = MakeBackend({kHello, kEos, kWorld});
  Collector c;
  ASSERT_TRUE(b->Submit(Req("r", 10), c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  EXPECT_EQ(c.Text(0), " Hello");
  EXPECT_EQ(c.Finish(0), FinishReason::kStop);
  EXPECT_EQ(c.usage().completion_tokens, 2);

  Collector d;
  GenerateRequest g = Req("r2", 4);
  g.ignore_eos = true;
  ASSERT_TRUE(b->Submit(g, d.Callback()).ok());
  ASSERT_TRUE(d.Wait());
  EXPECT_EQ(d.Text(0), " Hello world Hello");  // EOS renders as nothing
  EXPECT_EQ(d.Finish(0), FinishReason::kLength);

  Collector e;
  g = Req("r3", 10);
  g.stop_token_ids = {kWorld};
  ASSERT_TRUE(b->Submit(g, e.Callback()).ok());
  ASSERT_TRUE(e.Wait());
  EXPECT_EQ(e.Finish(0), FinishReason::kStop);
}

TEST(EngineBackendTest, SplitUtf8ComesOutWhole) {
  auto b = MakeBackend({ByteTok(0xC3), ByteTok(0xA9), kBang});
  Collector c;
  ASSERT_TRUE(b->Submit(Req("r", 3), c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  auto events = c.events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].text, "");
  EXPECT_EQ(c.Text(0), "\xC3\xA9!");
}

TEST(EngineBackendTest, NSequencesWithSeedsShareThePrompt) {
  auto b = MakeBackend({kHello, kWorld, kBang, kThe});
  Collector c;
  GenerateRequest g = Req("r", 2);
  g.n = 3;
  g.sampling.seed = 1;
  g.prompt_ids.assign(40, kThe);  // > 2 blocks of 16
  ASSERT_TRUE(b->Submit(g, c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  // Sequence i is seeded with seed + i.
  EXPECT_EQ(c.Text(0), " world!");
  EXPECT_EQ(c.Text(1), "! the");
  EXPECT_EQ(c.Text(2), " the Hello");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.Finish(i), FinishReason::kLength);
  Usage u = c.usage();
  EXPECT_EQ(u.prompt_tokens, 40);
  EXPECT_EQ(u.completion_tokens, 6);
  // The siblings found the first sequence's prompt blocks.
  BackendStats s = b->Stats();
  EXPECT_GE(s.prefix_cache_hits, 2 * 32);
  EXPECT_EQ(s.kv_blocks_used.value_or(-1), 0);
}

TEST(EngineBackendTest, LogprobsCarryTokenTextAndTopN) {
  auto b = MakeBackend({kHello, kWorld, kBang});
  Collector c;
  GenerateRequest g = Req("r", 2);
  g.sampling.logprobs = 2;
  ASSERT_TRUE(b->Submit(g, c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  std::vector<PositionLogprobs> lps;
  for (const GenerateEvent& e : c.events()) {
    EXPECT_EQ(e.logprobs.size(), e.token_ids.size());
    lps.insert(lps.end(), e.logprobs.begin(), e.logprobs.end());
  }
  ASSERT_EQ(lps.size(), 2u);
  EXPECT_EQ(lps[0].chosen.id, kHello);
  EXPECT_EQ(lps[0].chosen.text, " Hello");
  EXPECT_FLOAT_EQ(lps[0].chosen.logprob, -0.1f);
  ASSERT_EQ(lps[1].top.size(), 2u);
  EXPECT_EQ(lps[1].top[0].id, kWorld);
  EXPECT_EQ(lps[1].top[1].text, "!");
  EXPECT_FLOAT_EQ(lps[1].top[1].logprob, -0.2f);

  Collector d;  // not asked: none
  ASSERT_TRUE(b->Submit(Req("r2", 2), d.Callback()).ok());
  ASSERT_TRUE(d.Wait());
  for (const GenerateEvent& e : d.events()) EXPECT_TRUE(e.logprobs.empty());
}

TEST(EngineBackendTest, AbortFinishesEverySequenceAndFreesBlocks) {
  auto b = MakeBackend({kHello, kWorld}, /*delay_ms=*/2);
  Collector c;
  GenerateRequest g = Req("r", 100000);
  g.n = 2;
  g.prompt_ids.assign(20, kThe);
  ASSERT_TRUE(b->Submit(g, c.Callback()).ok());
  ASSERT_TRUE(c.WaitForTokens(5));
  b->Abort("r");
  b->Abort("r");        // twice: harmless
  b->Abort("unknown");  // ignored
  ASSERT_TRUE(c.Wait());
  EXPECT_EQ(c.Finish(0), FinishReason::kAbort);
  EXPECT_EQ(c.Finish(1), FinishReason::kAbort);
  EXPECT_GE(c.usage().completion_tokens, 5);
  BackendStats s = b->Stats();
  EXPECT_EQ(s.aborts, 1);
  EXPECT_EQ(s.kv_blocks_used.value_or(-1), 0);
  EXPECT_EQ(s.num_running, 0);
  EXPECT_EQ(b->num_in_flight(), 0u);
}

TEST(EngineBackendTest, AbortBeforeSiblingsStart) {
  auto b = MakeBackend({kHello}, /*delay_ms=*/20);
  Collector c;
  GenerateRequest g = Req("r", 1000);
  g.n = 4;
  ASSERT_TRUE(b->Submit(g, c.Callback()).ok());
  b->Abort("r");
  ASSERT_TRUE(c.Wait());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.Finish(i), FinishReason::kAbort);
  EXPECT_EQ(b->Stats().kv_blocks_used.value_or(-1), 0);
}

TEST(EngineBackendTest, ConcurrentRequestsAllComplete) {
  auto b = MakeBackend({kHello, kWorld, kBang});
  std::vector<std::unique_ptr<Collector>> cs;
  for (int i = 0; i < 20; ++i) {
    cs.push_back(std::make_unique<Collector>());
    ASSERT_TRUE(b->Submit(Req(StrFormat("r%d", i), 5, {"!"}), cs.back()->Callback()).ok());
  }
  for (auto& c : cs) {
    ASSERT_TRUE(c->Wait());
    EXPECT_EQ(c->Text(0), " Hello world");
    EXPECT_EQ(c->Finish(0), FinishReason::kStop);
  }
  EXPECT_EQ(b->num_in_flight(), 0u);
}

TEST(EngineBackendTest, BadRequestsAreRefusedWithoutEvents) {
  auto b = MakeBackend({kHello});
  Collector c;
  GenerateRequest g = Req("r", 2);
  g.sampling.temperature = -1;
  Status s = b->Submit(g, c.Callback());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("temperature"), std::string::npos) << s.message();

  g = Req("r", 2);
  g.prompt_ids = {kBos, 99999};
  EXPECT_EQ(b->Submit(g, c.Callback()).code(), StatusCode::kInvalidArgument);
  g.prompt_ids.assign(600, kThe);  // longer than the context
  EXPECT_EQ(b->Submit(g, c.Callback()).code(), StatusCode::kInvalidArgument);
  g = Req("r", 2);
  g.sampling.logit_bias[99999] = 1;
  EXPECT_EQ(b->Submit(g, c.Callback()).code(), StatusCode::kInvalidArgument);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(c.events().empty());

  b->StartDraining();
  EXPECT_EQ(b->readiness(), Readiness::kDraining);
  EXPECT_EQ(b->Submit(Req("x", 2), c.Callback()).code(),
            StatusCode::kUnavailable);
}

TEST(EngineBackendTest, TokenizeDetokenize) {
  auto b = MakeBackend({kHello});
  auto ids = b->Tokenize("Hello world", false, false);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  ASSERT_FALSE(ids->empty());
  auto text = b->Detokenize(*ids, false);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "Hello world");
  ids = b->Tokenize("Hello", true, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->front(), kBos);
  // Control tokens: dropped from text, shown by /detokenize.
  text = b->Detokenize(*ids, false);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find("<s>"), std::string::npos) << *text;
  text = b->Detokenize(*ids, true);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->rfind("<s>", 0), 0u) << *text;
  std::vector<int32_t> bad = {99999};
  EXPECT_FALSE(b->Detokenize(bad, false).ok());
  EXPECT_EQ(b->model_info().vocab_size, kNumTokens);
}

TEST(EngineBackendTest, ChatTemplates) {
  auto b = MakeBackend({kHello});  // ChatML fallback
  ChatTemplateRequest req;
  req.messages.push_back(Msg("user", "hi"));
  auto text = b->ApplyChatTemplate(req);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");

  auto custom = MakeBackend(
      {kHello}, 0,
      "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}"
      "{{ raise_exception('no system') }}{% endif %}[{{ m.content }}]"
      "{% endfor %}{% if tools %}{{ tools[0].name }}{% endif %}"
      "{{ flavour | default('') }}");
  req.tools_json = R"([{"name": "f"}])";
  req.kwargs_json["flavour"] = "\"x\"";
  text = custom->ApplyChatTemplate(req);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "<s>[hi]fx");
  req.messages.insert(req.messages.begin(), Msg("system", "s"));
  text = custom->ApplyChatTemplate(req);
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), "no system");

  auto broken = MakeBackend({kHello}, 0, "{% if %}");
  text = broken->ApplyChatTemplate(req);
  EXPECT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("--chat-template"), std::string::npos);
  // Completions still work.
  Collector c;
  ASSERT_TRUE(broken->Submit(Req("r", 1), c.Callback()).ok());
  ASSERT_TRUE(c.Wait());
  EXPECT_EQ(c.Text(0), " Hello");
}

}  // namespace
}  // namespace weft::server
