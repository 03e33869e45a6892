// A deterministic stand-in for the model, for scheduler and engine tests.
// It simulates the KV cache contents: every slot remembers which (position,
// token) was written into it, so a plan that reads the wrong blocks (bad
// prefix hit, missed copy-on-write, stale table after preemption) fails.
// Sampled token = a pure function of (request id, position), so a request's
// output is the same however often it is preempted and recomputed.
// Simulated pass time = a + b * tokens + c * context / 1000 + d * rows
// (context: attention (query, key) pairs; rows: sequences that sample).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "util/strings.h"

namespace weft::engine::testing {

inline constexpr TokenId kFakeStopToken = 2;

// The token the fake samples at `pos` for request `id`; with period > 0
// the token at pos repeats every `period` positions (text that n-gram
// speculation can guess).
inline TokenId FakeToken(RequestId id, int pos, int period = 0) {
  if (period > 0) pos %= period;
  uint64_t x = static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ULL +
               static_cast<uint64_t>(pos) * 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 29;
  if (x % 40 == 0) return kFakeStopToken;  // sometimes "EOS"
  return static_cast<TokenId>(10 + x % 1000);
}

// The output a request must end with, absent aborts and errors.
inline std::vector<TokenId> ExpectedOutput(RequestId id, int prompt_len,
                                           const StopConditions& stop,
                                           int max_model_len, int period = 0) {
  std::vector<TokenId> out;
  for (;;) {
    TokenId t =
        FakeToken(id, prompt_len + static_cast<int>(out.size()), period);
    out.push_back(t);
    const int n = static_cast<int>(out.size());
    bool is_stop = false;
    for (TokenId s : stop.stop_token_ids) is_stop |= s == t;
    if (is_stop && n > stop.min_tokens) break;
    if (n >= stop.max_tokens || prompt_len + n >= max_model_len) break;
  }
  return out;
}

class FakeExecutor : public Executor {
 public:
  // `lookup(id, pos)` gives the token request `id` holds at `pos` (what the
  // KV there must encode); `window` > 0 skips positions out of the window.
  FakeExecutor(int num_blocks, int block_size, int window,
               std::function<TokenId(RequestId, int)> lookup)
      : block_size_(block_size),
        window_(window),
        lookup_(std::move(lookup)),
        slots_(static_cast<size_t>(num_blocks) * block_size) {}

  // Simulates a second KV group (kv::kLocalGroup) of `num_blocks` blocks
  // whose layers see only `window` positions: the plan's local tables are
  // written and verified like the full ones.
  void EnableLocalGroup(int num_blocks, int window) {
    local_window_ = window;
    local_slots_.assign(static_cast<size_t>(num_blocks) * block_size_, Cell{});
  }

  double a = 1.0;   // fixed cost of a pass
  double b = 0.01;  // cost per token
  double c = 0;     // cost per 1,000 attention (query, key) pairs
  double d = 0;     // cost per sequence that samples
  int period = 0;   // FakeToken's period
  double time = 0;  // simulated clock
  double last_ms = 0;  // the last pass's simulated time
  std::string error;  // first inconsistency found, if any

  StatusOr<std::vector<SampledToken>> Execute(const StepPlan& plan) override {
    last_ms = a + b * plan.num_batched_tokens;
    for (const ScheduledSeq& s : plan.seqs) {
      const double n = s.num_new_tokens;
      last_ms += c * (n * s.start_pos + n * (n + 1) / 2) / 1000.0 +
                 (s.needs_logits ? d * (1 + s.num_draft_tokens) : 0.0);
    }
    time += last_ms;
    prompt_logprobs_.clear();
    for (const kv::BlockCopy& c : plan.copies) {
      std::vector<Cell>& cells = c.group == kv::kLocalGroup ? local_slots_
                                                            : slots_;
      if (c.group == kv::kLocalGroup && local_slots_.empty()) {
        Fail("copy in a local group that does not exist");
        continue;
      }
      for (int i = 0; i < block_size_; ++i) {
        cells[Slot(c.dst, i)] = cells[Slot(c.src, i)];
      }
    }
    std::vector<SampledToken> out;
    for (const ScheduledSeq& s : plan.seqs) {
      Verify(s);
      if (!local_slots_.empty()) VerifyLocal(s);
      for (int i = 0; i < s.num_new_tokens; ++i) {
        const Cell cell{s.start_pos + i, s.tokens[static_cast<size_t>(i)], true};
        slots_[static_cast<size_t>(s.slots[static_cast<size_t>(i)])] = cell;
        if (!local_slots_.empty() && error.empty()) {
          const int p = s.start_pos + i;
          const kv::BlockId b =
              s.local_block_table[static_cast<size_t>(p / block_size_)];
          local_slots_[Slot(b, p % block_size_)] = cell;
        }
      }
      if (!s.prompt_targets.empty()) {
        // Each target must be the token after its position.
        PromptLogprobs p;
        p.id = s.id;
        p.first_token = s.prompt_logprobs_from + 1;
        for (size_t i = 0; i < s.prompt_targets.size(); ++i) {
          const int pos = s.prompt_logprobs_from + static_cast<int>(i);
          if (pos < s.start_pos || pos >= s.start_pos + s.num_new_tokens ||
              s.prompt_targets[i] != lookup_(s.id, pos + 1)) {
            Fail(StrFormat("req %lld: bad prompt target at %d",
                           (long long)s.id, pos));
          }
          p.entries.push_back({s.prompt_targets[i], -0.25f, {}});
        }
        prompt_logprobs_.push_back(std::move(p));
      }
      if (s.needs_logits) {
        // Speculation: the guesses the fake agrees with, then its own token.
        const int first = s.num_new_tokens - s.num_draft_tokens;
        for (int i = 0; i <= s.num_draft_tokens; ++i) {
          SampledToken t;
          t.id = s.id;
          t.token = FakeToken(s.id, s.start_pos + first + i, period);
          t.logprob = -0.5f;
          out.push_back(t);
          if (i == s.num_draft_tokens ||
              t.token != s.tokens[static_cast<size_t>(first + i)]) {
            break;
          }
        }
      }
    }
    return out;
  }

  std::vector<PromptLogprobs> TakePromptLogprobs() override {
    return std::exchange(prompt_logprobs_, {});
  }

 private:
  std::vector<PromptLogprobs> prompt_logprobs_;
  struct Cell {
    int pos = -1;
    TokenId token = -1;
    bool written = false;
  };
  size_t Slot(kv::BlockId b, int off) const {
    return static_cast<size_t>(b) * static_cast<size_t>(block_size_) +
           static_cast<size_t>(off);
  }
  void Fail(const std::string& m) {
    if (error.empty()) error = m;
  }
  // Every earlier position the sequence attends to must hold its token.
  void Verify(const ScheduledSeq& s) {
    const int end = s.start_pos + s.num_new_tokens;
    if (static_cast<int>(s.block_table.size()) * block_size_ < end) {
      Fail(StrFormat("req %lld: table too short", (long long)s.id));
      return;
    }
    for (int i = 0; i < s.num_new_tokens; ++i) {
      const int p = s.start_pos + i;
      const kv::BlockId b = s.block_table[static_cast<size_t>(p / block_size_)];
      if (s.slots[static_cast<size_t>(i)] !=
          int64_t{b} * block_size_ + p % block_size_) {
        Fail(StrFormat("req %lld pos %d: slot not in table", (long long)s.id,
                       p));
      }
      const bool draft = i >= s.num_new_tokens - s.num_draft_tokens;
      if (!draft && s.tokens[static_cast<size_t>(i)] != lookup_(s.id, p)) {
        Fail(StrFormat("req %lld pos %d: wrong input token", (long long)s.id,
                       p));
      }
    }
    const int first = window_ > 0 ? std::max(0, s.start_pos - window_ + 1) : 0;
    for (int p = first; p < s.start_pos; ++p) {
      const kv::BlockId b = s.block_table[static_cast<size_t>(p / block_size_)];
      if (b == kv::kNullBlock) {
        Fail(StrFormat("req %lld pos %d: released block in window",
                       (long long)s.id, p));
        return;
      }
      const Cell& c = slots_[Slot(b, p % block_size_)];
      if (!c.written || c.pos != p || c.token != lookup_(s.id, p)) {
        Fail(StrFormat("req %lld pos %d: KV holds (%d, %d), want token %d",
                       (long long)s.id, p, c.pos, c.token, lookup_(s.id, p)));
        return;
      }
    }
  }

  // The local group: the table covers the new tokens with real blocks and
  // every position in the window holds its token.
  void VerifyLocal(const ScheduledSeq& s) {
    const int end = s.start_pos + s.num_new_tokens;
    if (s.local_block_table.size() != s.block_table.size()) {
      Fail(StrFormat("req %lld: local table of %zu blocks, full %zu",
                     (long long)s.id, s.local_block_table.size(),
                     s.block_table.size()));
      return;
    }
    const int first = std::max(0, s.start_pos - local_window_ + 1);
    for (int p = first; p < end; ++p) {
      const kv::BlockId b =
          s.local_block_table[static_cast<size_t>(p / block_size_)];
      if (b == kv::kNullBlock ||
          Slot(b, 0) >= local_slots_.size()) {
        Fail(StrFormat("req %lld pos %d: no local block in the window",
                       (long long)s.id, p));
        return;
      }
      if (p >= s.start_pos) continue;  // written by this pass
      const Cell& c = local_slots_[Slot(b, p % block_size_)];
      if (!c.written || c.pos != p || c.token != lookup_(s.id, p)) {
        Fail(StrFormat("req %lld pos %d: local KV holds (%d, %d), want %d",
                       (long long)s.id, p, c.pos, c.token, lookup_(s.id, p)));
        return;
      }
    }
  }

  int block_size_;
  int window_;
  int local_window_ = 0;
  std::vector<Cell> local_slots_;  // empty without a local group
  std::function<TokenId(RequestId, int)> lookup_;
  std::vector<Cell> slots_;
};

}  // namespace weft::engine::testing
