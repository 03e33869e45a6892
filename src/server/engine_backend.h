// EngineBackend: the server::Backend over the real engine. It turns the
// server's plain requests into engine RequestSpecs (one per sequence; n > 1
// gives n engine requests with seeds seed + i), the engine's token events
// into text events (per-sequence streaming detokenizer, stop strings across
// token boundaries with hold-back, logprobs with token text), and reports
// usage, stats, model facts and readiness. Tokenize/Detokenize use the
// model's tokenizer; chat prompts come from the chat template (chat_render.h).
//
// Sequences 1..n-1 of a request are submitted when sequence 0 reports its
// first event (its prompt KV is then in the prefix cache), so the n
// sequences share the prompt's full KV blocks instead of each computing
// them.
//
// Thread safety: all Backend methods are thread-safe. Engine callbacks run
// on the engine's loop thread; every client callback is made from there too
// (so per-request events are ordered) and never under a lock of this class.
// Invariant: a request stays in calls_ until its `last` event was sent.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "server/backend.h"
#include "server/chat_render.h"
#include "server/file_hasher.h"
#include "tokenizer/tokenizer.h"

namespace weft::server {

struct EngineBackendOptions {
  ModelInfo model_info;       // reported as is (vocab_size filled if unset)
  EngineInfo engine_info;     // reported as is
  // Submit sibling sequences (n > 1) after the first one's prefill, so they
  // hit the prefix cache.
  bool defer_siblings = true;
  // Hash model_info.path on a background thread (FileHasher) and report
  // the digest as model_info.sha256 once known (unless one was given).
  bool hash_model_file = false;
};

class EngineBackend : public Backend {
 public:
  // `resources` (e.g. the model the engine's executor reads) is released
  // after the engine is destroyed. `chat` renders chat prompts.
  static StatusOr<std::unique_ptr<EngineBackend>> Create(
      std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
      std::unique_ptr<engine::Engine> engine, ChatRenderer chat,
      EngineBackendOptions options, std::shared_ptr<const void> resources);
  ~EngineBackend() override;
  EngineBackend(const EngineBackend&) = delete;
  EngineBackend& operator=(const EngineBackend&) = delete;

  // New submissions fail with Unavailable; readiness() says kDraining.
  void StartDraining();
  // Requests that have not yet sent their last event.
  size_t num_in_flight() const;

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

 private:
  struct Call;
  struct Seq;
  EngineBackend(std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                std::unique_ptr<engine::Engine> engine, ChatRenderer chat,
                EngineBackendOptions options,
                std::shared_ptr<const void> resources);

  // The engine request for sequence `index` of `call`.
  engine::RequestSpec MakeSpec(const Call& call, int index) const;
  // Submits sequence `index` to the engine.
  Status SubmitSeq(const std::shared_ptr<Call>& call, int index);
  // Engine callback of sequence `index` (loop thread).
  void OnEngineEvent(const std::shared_ptr<Call>& call, int index,
                     const engine::RequestEvent& ev);
  // Converts one engine token (with its logprobs) into the event.
  void AddToken(Call& call, Seq& seq, const engine::RequestEvent& ev,
                size_t k, GenerateEvent* out);
  // A position's logprobs with token texts, at most max_top alternatives.
  PositionLogprobs WithText(
      engine::TokenId token, float logprob,
      std::span<const std::pair<engine::TokenId, float>> top,
      int32_t max_top) const;
  // Converts sequence 0's prompt logprobs, the first prompt token (which
  // has none) with its first event. Caller holds call.mu.
  void AddPromptLogprobs(Call& call, const engine::RequestEvent& ev,
                         GenerateEvent* out);
  // Submits the deferred siblings of a call (loop thread).
  void SubmitSiblings(const std::shared_ptr<Call>& call,
                      std::vector<GenerateEvent>* out);
  // Sends `events` and, when the call is over, its last event; forgets it.
  void Emit(const std::shared_ptr<Call>& call,
            std::vector<GenerateEvent> events);

  std::shared_ptr<const void> resources_;  // outlives engine_
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<engine::Engine> engine_;
  const ChatRenderer chat_;
  const EngineBackendOptions options_;
  std::unique_ptr<FileHasher> hasher_;  // null unless hash_model_file

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Call>> calls_;  // guarded by mu_
  std::atomic<engine::RequestId> next_id_{1};
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> aborts_{0};
  std::atomic<int64_t> rejections_{0};
};

}  // namespace weft::server
