#include "sampling/grammar.h"

#include <algorithm>
#include <utility>

namespace weft::sampling {
namespace {

// Expansion steps for one stack, at most (bounds the work a byte can cost).
constexpr size_t kMaxExpandSteps = 1 << 16;

}  // namespace

uint64_t GrammarState::Hash() const {
  uint64_t h = 1469598103934665603ull;
  for (const auto& st : stacks) {
    for (uint32_t p : st) h = (h ^ p) * 1099511628211ull;
    h = (h ^ 0xFFFFFFFFull) * 1099511628211ull;
  }
  return h;
}

bool Grammar::Expand(std::vector<uint32_t>* stack, std::vector<std::vector<uint32_t>>* out,
                     AdvanceStats* stats) const {
  std::vector<std::vector<uint32_t>> work;
  work.push_back(std::move(*stack));
  size_t steps = 0;
  while (!work.empty()) {
    if (++steps > kMaxExpandSteps) return false;
    std::vector<uint32_t> st = std::move(work.back());
    work.pop_back();
    if (st.empty()) {
      out->push_back(std::move(st));
      continue;
    }
    const uint32_t p = st.back();
    const GrammarElement& e = elems_[p];
    if (e.kind == GrammarElement::kBytes) {
      out->push_back(std::move(st));
      continue;
    }
    st.pop_back();
    if (e.kind == GrammarElement::kEnd) {
      work.push_back(std::move(st));
      continue;
    }
    // A rule: continue after it (unless it ends the sequence: a tail call
    // keeps the stack flat) once one of its alternatives is read.
    if (elems_[p + 1].kind != GrammarElement::kEnd) st.push_back(p + 1);
    if (stats != nullptr) stats->max_depth = std::max(stats->max_depth, st.size());
    if (st.size() >= kMaxStackDepth) {  // too deep: fail closed
      if (stats != nullptr) stats->capped = true;
      continue;
    }
    for (uint32_t a : alts_[e.arg]) {
      std::vector<uint32_t> next = st;
      if (elems_[a].kind != GrammarElement::kEnd) next.push_back(a);
      work.push_back(std::move(next));
    }
  }
  return true;
}

bool Grammar::Advance(GrammarState* s, uint8_t byte, AdvanceStats* stats) const {
  std::vector<std::vector<uint32_t>> next;
  for (const auto& st : s->stacks) {
    if (st.empty()) continue;
    const GrammarElement& e = elems_[st.back()];
    if (!sets_[e.arg].Has(byte)) continue;
    std::vector<uint32_t> moved = st;
    moved.back() += 1;
    if (!Expand(&moved, &next, stats) || next.size() > 4 * kMaxStacks) {
      if (stats != nullptr) stats->capped = true;
      s->stacks.clear();
      return false;
    }
  }
  if (stats != nullptr) stats->max_stacks = std::max(stats->max_stacks, next.size());
  std::sort(next.begin(), next.end());
  next.erase(std::unique(next.begin(), next.end()), next.end());
  if (next.empty() || next.size() > kMaxStacks) {
    if (stats != nullptr && !next.empty()) stats->capped = true;
    s->stacks.clear();
    return false;
  }
  s->stacks = std::move(next);
  return true;
}

bool Grammar::Complete(const GrammarState& s) const {
  return !s.stacks.empty() && s.stacks.front().empty();
}

bool Grammar::CanContinue(const GrammarState& s) const {
  return !s.stacks.empty() && !s.stacks.back().empty();
}

bool Grammar::Matches(std::string_view text) const {
  GrammarState s = Start();
  return Advance(&s, text) && Complete(s);
}

namespace {

void AppendSet(const ByteSet& set, std::string* out) {
  auto hex = [&](int b) {
    const char* d = "0123456789ABCDEF";
    if (b > 0x20 && b < 0x7F && b != ']' && b != '\\' && b != '-' && b != '^') {
      out->push_back(static_cast<char>(b));
    } else {
      *out += "\\x";
      out->push_back(d[b >> 4]);
      out->push_back(d[b & 15]);
    }
  };
  out->push_back('[');
  for (int b = 0; b < 256; ++b) {
    if (!set.Has(static_cast<uint8_t>(b))) continue;
    int e = b;
    while (e + 1 < 256 && set.Has(static_cast<uint8_t>(e + 1))) ++e;
    hex(b);
    if (e > b) {
      out->push_back('-');
      hex(e);
    }
    b = e;
  }
  out->push_back(']');
}

}  // namespace

std::string Grammar::DebugString() const {
  std::string out;
  for (size_t r = 0; r < alts_.size(); ++r) {
    out += names_[r] + " ::=";
    for (size_t i = 0; i < alts_[r].size(); ++i) {
      if (i > 0) out += " |";
      for (uint32_t p = alts_[r][i]; elems_[p].kind != GrammarElement::kEnd; ++p) {
        out += ' ';
        if (elems_[p].kind == GrammarElement::kRule) {
          out += names_[elems_[p].arg];
        } else {
          AppendSet(sets_[elems_[p].arg], &out);
        }
      }
    }
    out += '\n';
  }
  return out;
}

// ---- GrammarBuilder ----

int GrammarBuilder::NewRule(std::string name) {
  names_.push_back(std::move(name));
  rules_.emplace_back();
  defined_.push_back(false);
  return static_cast<int>(rules_.size()) - 1;
}

void GrammarBuilder::Define(int rule, GrammarAlts alts) {
  for (const GrammarSeq& seq : alts) elements_ += seq.size() + 1;
  rules_[rule] = std::move(alts);
  defined_[rule] = true;
}

GrammarElement GrammarBuilder::Bytes(const ByteSet& set) {
  // Most sets repeat (digits, string characters): share the last few.
  const size_t n = sets_.size();
  for (size_t i = n; i > 0 && i + 16 > n; --i) {
    if (sets_[i - 1] == set) return {GrammarElement::kBytes, static_cast<uint32_t>(i - 1)};
  }
  sets_.push_back(set);
  return {GrammarElement::kBytes, static_cast<uint32_t>(n)};
}

GrammarElement GrammarBuilder::Bytes(uint8_t lo, uint8_t hi) {
  ByteSet s;
  s.AddRange(lo, hi);
  return Bytes(s);
}

GrammarSeq GrammarBuilder::Literal(std::string_view text) {
  GrammarSeq seq;
  for (char c : text) {
    const auto b = static_cast<uint8_t>(c);
    seq.push_back(Bytes(b, b));
  }
  return seq;
}

GrammarElement GrammarBuilder::Group(GrammarAlts alts) {
  if (alts.size() == 1 && alts[0].size() == 1) return alts[0][0];
  return Ref(AddRule("group", std::move(alts)));
}

GrammarElement GrammarBuilder::Repeat(GrammarElement x, int min, int max) {
  GrammarSeq seq(static_cast<size_t>(std::max(min, 0)), x);
  if (max < 0) {
    const int star = NewRule("star");
    Define(star, {{x, Ref(star)}, {}});
    seq.push_back(Ref(star));
  } else if (max > min) {
    int tail = AddRule("opt", {{x}, {}});
    for (int i = min + 1; i < max && !TooLarge(); ++i) {
      tail = AddRule("opt", {{x, Ref(tail)}, {}});
    }
    seq.push_back(Ref(tail));
  }
  if (seq.empty()) return Ref(AddRule("empty", {{}}));
  return Group({std::move(seq)});
}

namespace {

// Fixpoints over the rules: nullable (derives the empty string) and
// productive (derives some finite string).
std::vector<bool> Fixpoint(const std::vector<GrammarAlts>& rules, bool bytes_ok) {
  std::vector<bool> yes(rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules.size(); ++r) {
      if (yes[r]) continue;
      for (const GrammarSeq& seq : rules[r]) {
        const bool all = std::all_of(seq.begin(), seq.end(), [&](const GrammarElement& e) {
          return e.kind == GrammarElement::kBytes ? bytes_ok : yes[e.arg];
        });
        if (all) {
          yes[r] = changed = true;
          break;
        }
      }
    }
  }
  return yes;
}

// The first rule on a cycle of "r may begin with s" edges, or -1.
int LeftRecursive(const std::vector<GrammarAlts>& rules, const std::vector<bool>& nullable) {
  const size_t n = rules.size();
  std::vector<std::vector<uint32_t>> edges(n);
  for (size_t r = 0; r < n; ++r) {
    for (const GrammarSeq& seq : rules[r]) {
      for (const GrammarElement& e : seq) {
        if (e.kind != GrammarElement::kRule) break;
        edges[r].push_back(e.arg);
        if (!nullable[e.arg]) break;
      }
    }
  }
  // Iterative DFS (a request's grammar may be deep): 0 new, 1 open, 2 done.
  std::vector<uint8_t> color(n, 0);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (size_t root = 0; root < n; ++root) {
    if (color[root] != 0) continue;
    stack.push_back({static_cast<uint32_t>(root), 0});
    color[root] = 1;
    while (!stack.empty()) {
      auto& [r, i] = stack.back();
      if (i == edges[r].size()) {
        color[r] = 2;
        stack.pop_back();
        continue;
      }
      const uint32_t s = edges[r][i++];
      if (color[s] == 1) return static_cast<int>(s);
      if (color[s] == 0) {
        color[s] = 1;
        stack.push_back({s, 0});
      }
    }
  }
  return -1;
}

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> GrammarBuilder::Build() && {
  if (root_ < 0) return InvalidArgumentError("grammar has no root rule");
  if (TooLarge()) return InvalidArgumentError("grammar is too large");
  for (size_t r = 0; r < rules_.size(); ++r) {
    if (!defined_[r]) return InvalidArgumentError("rule '" + names_[r] + "' is not defined");
  }
  const std::vector<bool> nullable = Fixpoint(rules_, false);
  const std::vector<bool> productive = Fixpoint(rules_, true);
  for (size_t r = 0; r < rules_.size(); ++r) {
    if (!productive[r]) {
      return InvalidArgumentError("rule '" + names_[r] + "' can never finish");
    }
  }
  if (const int r = LeftRecursive(rules_, nullable); r >= 0) {
    return InvalidArgumentError("rule '" + names_[r] +
                                "' is left-recursive (or repeats something that can be empty)");
  }
  auto g = std::make_shared<Grammar>();
  g->sets_ = std::move(sets_);
  g->names_ = std::move(names_);
  // Position 0: the root reference the start stack points at.
  g->elems_.push_back({GrammarElement::kRule, static_cast<uint32_t>(root_)});
  g->elems_.push_back({GrammarElement::kEnd, 0});
  g->alts_.resize(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r) {
    for (const GrammarSeq& seq : rules_[r]) {
      g->alts_[r].push_back(static_cast<uint32_t>(g->elems_.size()));
      g->elems_.insert(g->elems_.end(), seq.begin(), seq.end());
      g->elems_.push_back({GrammarElement::kEnd, 0});
    }
  }
  std::vector<uint32_t> start = {0};
  if (!g->Expand(&start, &g->start_.stacks)) {
    return InvalidArgumentError("grammar's start expands too far");
  }
  auto& st = g->start_.stacks;
  std::sort(st.begin(), st.end());
  st.erase(std::unique(st.begin(), st.end()), st.end());
  if (st.size() > kMaxStacks) return InvalidArgumentError("grammar is too ambiguous at its start");
  return std::shared_ptr<const Grammar>(std::move(g));
}

// ---- Unicode ----

std::vector<std::pair<uint32_t, uint32_t>> ComplementCodePoints(
    std::vector<std::pair<uint32_t, uint32_t>> ranges) {
  ranges.push_back({0xD800, 0xDFFF});  // never a scalar value
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t next = 0;
  for (auto [lo, hi] : ranges) {
    if (lo > next) out.push_back({next, lo - 1});
    next = std::max(next, hi + 1);
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return out;
}

namespace {

// Splits [lo, hi] (scalar values, one encoded length... or not yet) into
// ranges whose UTF-8 forms are byte-range sequences (as Rust's
// regex-syntax Utf8Sequences does), appending each as byte ranges.
void Utf8Split(uint32_t lo, uint32_t hi,
               std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  if (lo > hi) return;
  for (uint32_t b : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= b && b < hi) {
      Utf8Split(lo, b, out);
      Utf8Split(b + 1, hi, out);
      return;
    }
  }
  for (int i = 1; i < 4; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Utf8Split(lo, lo | m, out);
        Utf8Split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Utf8Split(lo, (hi & ~m) - 1, out);
        Utf8Split(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  AppendUtf8(lo, &a);
  AppendUtf8(hi, &b);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (size_t i = 0; i < a.size(); ++i) {
    seq.push_back({static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])});
  }
  out->push_back(std::move(seq));
}

}  // namespace

GrammarAlts GrammarBuilder::CodePoints(
    const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
  // Surrogates are not scalar values: leave them out of every range.
  for (auto [lo, hi] : ranges) {
    hi = std::min<uint32_t>(hi, 0x10FFFF);
    if (lo <= 0xDFFF && hi >= 0xD800) {
      if (lo < 0xD800) Utf8Split(lo, 0xD7FF, &seqs);
      if (hi > 0xDFFF) Utf8Split(0xE000, hi, &seqs);
    } else {
      Utf8Split(lo, hi, &seqs);
    }
  }
  // One-byte sequences merge into one set.
  ByteSet ascii;
  bool any_ascii = false;
  GrammarAlts alts;
  for (const auto& seq : seqs) {
    if (seq.size() == 1) {
      ascii.AddRange(seq[0].first, seq[0].second);
      any_ascii = true;
      continue;
    }
    GrammarSeq s;
    for (auto [a, b] : seq) s.push_back(Bytes(a, b));
    alts.push_back(std::move(s));
  }
  if (any_ascii) alts.insert(alts.begin(), GrammarSeq{Bytes(ascii)});
  return alts;
}

}  // namespace weft::sampling
