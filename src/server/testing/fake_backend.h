// A deterministic Backend for tests of the HTTP edge. Tokens are bytes
// (id = byte + 3; 1 = BOS, 2 = EOS); sequence i of a request produces the
// words of kWords starting at (seed + i), one word + " " per token, so
// outputs are predictable. Honours max_tokens, stop strings (held back
// until they cannot start a match), n, seed, logprobs, Abort, and can be
// slowed down, capped (requests beyond max_running wait), made to fail,
// or made to refuse submissions.
//
// Thread safety: all methods are thread-safe; one worker thread produces
// tokens and calls the callbacks (outside the lock).
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/backend.h"

namespace weft::server::testing {

struct FakeBackendOptions {
  std::string model_id = "fake-model";  // ModelInfo.id
  int64_t context_length = 256;         // tokens
  int64_t vocab_size = 300;             // bytes + specials + words
  int max_running = 0;                  // 0 = unlimited; others wait
  int token_delay_ms = 0;               // pause between steps
  int eos_after = -1;                   // emit EOS after N tokens (-1 never)
  int fail_after = -1;                  // finish with kError after N tokens
  std::vector<std::string> chat_stop;   // ModelInfo.chat_stop
  std::string chat_template_source;     // ModelInfo.chat_template_source
  // Non-empty: every sequence writes this text instead of words, 3 bytes
  // per token, then stops (a recorded model output).
  std::string script;
};

class FakeBackend : public Backend {
 public:
  static constexpr const char* kWords[] = {"the",  "quick", "brown", "fox",
                                           "jumps", "over", "lazy",  "dog"};
  static constexpr int kNumWords = 8;
  static constexpr int32_t kWordIdBase = 260;  // word w has id 260 + w

  explicit FakeBackend(FakeBackendOptions options = {});
  ~FakeBackend() override;

  // The text sequence `index` of a request with `seed` produces first
  // `tokens` tokens (before stop strings).
  static std::string ExpectedText(uint64_t seed, int index, int tokens);

  // Backend:
  Readiness readiness() const override;
  ModelInfo model_info() const override;
  EngineInfo engine_info() const override;
  BackendStats Stats() const override;
  StatusOr<std::vector<int32_t>> Tokenize(std::string_view text,
                                          bool add_special,
                                          bool parse_special) override;
  StatusOr<std::string> Detokenize(std::span<const int32_t> ids,
                                   bool render_special) override;
  StatusOr<std::string> ApplyChatTemplate(
      const ChatTemplateRequest& req) override;
  Status Submit(GenerateRequest req, EventCallback on_event) override;
  void Abort(const std::string& request_id) override;

  // Test controls.
  void set_readiness(Readiness r);
  void set_token_delay_ms(int ms);
  void set_fail_after(int n);
  void set_reject_submits(bool reject);  // Submit -> ResourceExhausted
  // While held, Tokenize waits (a slow tokenizer).
  void HoldTokenize(bool hold);
  // Blocks until n Tokenize calls wait on the hold or ~5 s pass; returns
  // whether they do.
  bool WaitTokenizeWaiters(int n);
  std::vector<std::string> aborted_ids() const;
  std::vector<GenerateRequest> submitted() const;
  // Blocks until `pred(Stats())` holds or ~5 s pass; returns whether held.
  bool WaitFor(const std::function<bool(const BackendStats&)>& pred);

 private:
  // *field = value under mu_ (the test controls' setters).
  template <typename T>
  void SetLocked(T* field, T value) {
    std::lock_guard<std::mutex> lock(mu_);
    *field = value;
  }

  struct Seq {
    std::string text;     // everything generated
    size_t emitted = 0;   // bytes of `text` already sent
    int tokens = 0;
    bool done = false;
  };
  struct Req {
    GenerateRequest g;
    EventCallback cb;
    std::vector<Seq> seqs;
    bool aborted = false;
    double queue_s = 0;
    std::chrono::steady_clock::time_point submitted;
  };
  void Loop();
  // Advances one sequence by a token; appends events to `out`.
  void Step(Req& r, int index, std::vector<GenerateEvent>* out);

  const FakeBackendOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Req>> waiting_;
  std::vector<std::shared_ptr<Req>> running_;
  Readiness readiness_ = Readiness::kReady;
  int token_delay_ms_;
  int fail_after_;
  bool reject_ = false;
  bool hold_tokenize_ = false;
  int tokenize_waiters_ = 0;
  bool stop_ = false;
  std::vector<std::string> aborted_;
  std::vector<GenerateRequest> submitted_;
  int64_t aborts_ = 0;
  int64_t steps_ = 0;
  int64_t peak_ = 0;
  std::thread worker_;
};

}  // namespace weft::server::testing
