#include "sampling/mask_index.h"

#include <algorithm>
#include <list>
#include <utility>

#include "sampling/token_mask.h"
#include "util/check.h"

namespace weft::sampling {
namespace {

// The states a key's walk meets, interned, and their transitions, found
// once each: the walk meets few distinct states many times (inside a
// string, every plain character leads back to the same one).
class StateMemo {
 public:
  StateMemo(const Grammar& g, AdvanceStats* stats) : g_(g), stats_(stats) {}

  int32_t Intern(GrammarState s) {
    const uint64_t h = s.Hash();
    auto [lo, hi] = by_hash_.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      if (states_[static_cast<size_t>(it->second)] == s) return it->second;
    }
    const auto id = static_cast<int32_t>(states_.size());
    complete_.push_back(g_.Complete(s));
    states_.push_back(std::move(s));
    by_hash_.emplace(h, id);
    return id;
  }
  // The state after `byte` from state `id`; -1 if it is rejected.
  int32_t Next(int32_t id, uint8_t byte) {
    const uint64_t key = static_cast<uint64_t>(id) << 8 | byte;
    auto it = next_.find(key);
    if (it != next_.end()) return it->second;
    GrammarState s = states_[static_cast<size_t>(id)];
    const int32_t to = g_.Advance(&s, byte, stats_) ? Intern(std::move(s)) : -1;
    next_.emplace(key, to);
    return to;
  }
  bool complete(int32_t id) const { return complete_[static_cast<size_t>(id)]; }

 private:
  const Grammar& g_;
  AdvanceStats* stats_;
  std::vector<GrammarState> states_;
  std::vector<bool> complete_;
  std::unordered_multimap<uint64_t, int32_t> by_hash_;
  std::unordered_map<uint64_t, int32_t> next_;  // id << 8 | byte
};

// The run of a piece from a key alone (GrammarMaskIndex::Build).
struct LocalRun {
  int32_t state = 0;    // StateMemo id
  bool popped = false;  // a byte came after a stack popped the key
  bool dead = false;    // no stack left after popping the key once
};

}  // namespace

size_t GrammarMaskIndex::KeyHash::operator()(const Key& k) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t p : k) h = (h ^ p) * 1099511628211ull;
  return static_cast<size_t>(h);
}

GrammarMaskIndex::GrammarMaskIndex(std::shared_ptr<const Grammar> grammar,
                                   std::shared_ptr<const VocabBytes> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)) {
  CHECK(grammar_ != nullptr);
  CHECK(vocab_ != nullptr);
}

std::shared_ptr<GrammarMaskIndex> GrammarMaskIndex::For(
    const std::shared_ptr<const Grammar>& grammar, const std::shared_ptr<const VocabBytes>& vocab) {
  // Indexes hold their grammar and vocabulary: a pointer is not reused
  // while its entry is here.
  static constexpr size_t kIndexes = 8;
  static std::mutex mu;
  static std::list<std::shared_ptr<GrammarMaskIndex>> lru;  // most recent first
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = lru.begin(); it != lru.end(); ++it) {
    if ((*it)->grammar_ == grammar && (*it)->vocab_ == vocab) {
      lru.splice(lru.begin(), lru, it);
      return lru.front();
    }
  }
  lru.push_front(std::make_shared<GrammarMaskIndex>(grammar, vocab));
  if (lru.size() > kIndexes) lru.pop_back();
  return lru.front();
}

GrammarMaskIndex::Stats GrammarMaskIndex::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t GrammarMaskIndex::num_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

std::shared_ptr<const GrammarMaskIndex::Entry> GrammarMaskIndex::Get(const Key& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    if (entries_.size() >= kMaxEntries) return nullptr;
  }
  std::shared_ptr<const Entry> e = Build(key);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.built;
  if (entries_.size() >= kMaxEntries) return e;  // used once, not kept
  return entries_.emplace(key, std::move(e)).first->second;
}

std::shared_ptr<const GrammarMaskIndex::Entry> GrammarMaskIndex::Build(const Key& key) const {
  auto e = std::make_shared<Entry>();
  const bool whole = key[0] == 1;
  AdvanceStats stats;
  StateMemo memo(*grammar_, &stats);
  GrammarState key_state;
  key_state.stacks.emplace_back(key.begin() + 1, key.end());
  LocalRun start;
  start.state = memo.Intern(std::move(key_state));
  // A stack that popped the key is the empty stack (it accepts no byte):
  // with the whole stack that is the real run; else what lies below the
  // key would go on, so a run that reads on from there is uncertain.
  auto advance = [&](LocalRun* r, uint8_t byte) {
    if (r->dead) return true;
    if (!whole && memo.complete(r->state)) r->popped = true;
    const int32_t next = memo.Next(r->state, byte);
    if (next >= 0) {
      r->state = next;
      return true;
    }
    r->dead = r->popped;
    return r->dead;
  };
  e->accepted.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
  std::vector<int32_t> uncertain;
  VisitVocabTrie(*vocab_, vocab_->all(), start, advance, [&](int32_t id, const LocalRun& r) {
    if (r.popped || r.dead || (!whole && memo.complete(r.state))) {
      uncertain.push_back(id);
    } else {
      MaskSet(&e->accepted, static_cast<size_t>(id));
    }
  });
  e->uncertain = vocab_->SortedOf(std::move(uncertain));
  e->max_stacks = stats.max_stacks;
  e->max_depth = stats.max_depth;
  e->capped = stats.capped;
  return e;
}

bool GrammarMaskIndex::Mask(const GrammarState& state, std::vector<uint64_t>* bits) {
  const bool ok = TryMask(state, bits);
  std::lock_guard<std::mutex> lock(mu_);
  ++(ok ? stats_.masks : stats_.fallbacks);
  return ok;
}

bool GrammarMaskIndex::TryMask(const GrammarState& state, std::vector<uint64_t>* bits) {
  std::vector<std::shared_ptr<const Entry>> used;
  size_t stacks = 0;
  for (const std::vector<uint32_t>& st : state.stacks) {
    if (st.empty()) continue;  // accepts no byte
    const size_t n = std::min(st.size(), kKeyDepth);
    Key key;
    key.reserve(n + 1);
    key.push_back(st.size() <= kKeyDepth ? 1 : 0);
    key.insert(key.end(), st.end() - static_cast<ptrdiff_t>(n), st.end());
    std::shared_ptr<const Entry> e = Get(key);
    // Below the key the real stacks are deeper by st.size() - n.
    if (e == nullptr || e->capped || st.size() - n + e->max_depth >= kMaxStackDepth) return false;
    stacks += e->max_stacks;
    if (std::find(used.begin(), used.end(), e) == used.end()) used.push_back(std::move(e));
  }
  // Runs that stay above their keys make at most `stacks` stacks a byte.
  if (stacks > kMaxStacks) return false;
  bits->assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
  for (const auto& e : used) {
    for (size_t w = 0; w < bits->size(); ++w) (*bits)[w] |= e->accepted[w];
  }
  // An uncertain token's bit is the whole state's walk's, even where
  // another stack's key accepts it (its popping run could reach a cap).
  for (const auto& e : used) {
    for (int32_t t : e->uncertain.order) MaskClear(bits, static_cast<size_t>(t));
  }
  auto advance = [this](GrammarState* s, uint8_t byte) { return grammar_->Advance(s, byte); };
  for (const auto& e : used) WalkVocabTrie(*vocab_, e->uncertain, state, advance, bits);
  return true;
}

}  // namespace weft::sampling
