// A byte-level context-free grammar and its recognizer, the engine under
// every structured-output constraint (GBNF, regex, choice, JSON Schema; see
// gbnf.h, regex_grammar.h, schema_grammar.h and grammar_constraint.h).
//
//   GrammarBuilder b;                       // build the IR ...
//   int digit = b.AddRule("digit", {{b.Bytes('0', '9')}});
//   b.SetRoot(b.AddRule("root", {{b.Ref(digit), b.Ref(digit)}}));
//   StatusOr<std::shared_ptr<const Grammar>> g = std::move(b).Build();
//   GrammarState s = g->Start();            // ... and run it
//   g->Advance(&s, '4'); g->Complete(s);
//
// A grammar is a list of rules; a rule is a list of alternatives; an
// alternative is a sequence of elements, each a set of bytes or a reference
// to a rule. The recognizer is a pushdown automaton whose state is a sorted,
// deduplicated set of stacks of positions (llama.cpp's GBNF sampler works
// the same way); every stack's top is a byte-set element, or the stack is
// empty (the input so far is a whole sentence).
//
// Build() rejects, with an INVALID_ARGUMENT naming the rule: references to
// undefined rules, left recursion (direct or through nullable prefixes;
// the stack set would grow without bound), and rules that can never finish
// (so that every accepted prefix can still be completed). At run time the
// stack depth is capped at kMaxStackDepth and the stack set at kMaxStacks:
// a byte that would pass either cap is rejected (fail closed) rather than
// growing memory without bound.
//
// Thread safety: a built Grammar is immutable (share it across threads);
// a GrammarState is a value used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"
#include "util/strings.h"

namespace weft::sampling {

inline constexpr size_t kMaxStackDepth = 512;
inline constexpr size_t kMaxStacks = 256;
// Elements of one grammar, at most (bounds what a request can make us build).
inline constexpr size_t kMaxGrammarElements = 1 << 20;

// 256 bits: byte b is in the set if bit b % 64 of word b / 64 is set.
struct ByteSet {
  std::array<uint64_t, 4> w{};
  bool Has(uint8_t b) const { return (w[b >> 6] >> (b & 63)) & 1; }
  void Add(uint8_t b) { w[b >> 6] |= uint64_t{1} << (b & 63); }
  void AddRange(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) Add(static_cast<uint8_t>(b));
  }
  bool operator==(const ByteSet&) const = default;
};

struct GrammarElement {
  enum Kind : uint8_t { kEnd, kBytes, kRule };
  Kind kind = kEnd;
  uint32_t arg = 0;  // kBytes: index into sets; kRule: rule id
};

using GrammarSeq = std::vector<GrammarElement>;
using GrammarAlts = std::vector<GrammarSeq>;

// What Advance calls met (GrammarMaskIndex bounds a whole state's caps by
// the runs of its stacks' tops alone; mask_index.h).
struct AdvanceStats {
  size_t max_stacks = 0;  // most stacks one byte made, before deduplication
  size_t max_depth = 0;   // deepest stack an expansion checked against the cap
  bool capped = false;    // a cap above was reached
};

// The recognizer's state: stacks of element positions, top last.
struct GrammarState {
  std::vector<std::vector<uint32_t>> stacks;  // sorted, unique
  bool operator==(const GrammarState&) const = default;
  uint64_t Hash() const;
};

class Grammar {
 public:
  // The state before any byte.
  GrammarState Start() const { return start_; }
  // Feeds one byte; false (and *s empty) if the input is no longer a
  // prefix of a sentence, or a cap above was reached.
  bool Advance(GrammarState* s, uint8_t byte) const { return Advance(s, byte, nullptr); }
  // The same, adding what it met to *stats (when not null).
  bool Advance(GrammarState* s, uint8_t byte, AdvanceStats* stats) const;
  bool Advance(GrammarState* s, std::string_view bytes) const {
    for (char c : bytes) {
      if (!Advance(s, static_cast<uint8_t>(c))) return false;
    }
    return true;
  }
  // Whether the input so far is a whole sentence.
  bool Complete(const GrammarState& s) const;
  // Whether a whole sentence may still be longer than the input so far.
  bool CanContinue(const GrammarState& s) const;

  // Whether `text` is a sentence (for tests and diagnostics).
  bool Matches(std::string_view text) const;
  // GBNF-like text of the rules (for debugging).
  std::string DebugString() const;
  size_t num_elements() const { return elems_.size(); }

 private:
  friend class GrammarBuilder;
  // Pushes onto *out every expansion of `stack` whose top is a byte set
  // (or that is empty). false if a cap was reached.
  bool Expand(std::vector<uint32_t>* stack, std::vector<std::vector<uint32_t>>* out,
              AdvanceStats* stats = nullptr) const;

  std::vector<GrammarElement> elems_;  // alternatives, each ended by kEnd
  std::vector<ByteSet> sets_;
  std::vector<std::vector<uint32_t>> alts_;  // per rule: start positions
  std::vector<std::string> names_;
  GrammarState start_;
};

// Builds a Grammar. Rules may be declared first (NewRule) and defined later
// (Define), for recursion. Helpers build common shapes out of anonymous
// rules. Not thread-safe; one builder per compile.
class GrammarBuilder {
 public:
  int NewRule(std::string name);
  void Define(int rule, GrammarAlts alts);
  int AddRule(std::string name, GrammarAlts alts) {
    const int r = NewRule(std::move(name));
    Define(r, std::move(alts));
    return r;
  }
  void SetRoot(int rule) { root_ = rule; }

  GrammarElement Bytes(const ByteSet& set);
  GrammarElement Bytes(uint8_t lo, uint8_t hi);
  GrammarElement Ref(int rule) const {
    return {GrammarElement::kRule, static_cast<uint32_t>(rule)};
  }
  // The bytes of `text` in order.
  GrammarSeq Literal(std::string_view text);
  // One element for `alts` (an anonymous rule unless it is one element).
  GrammarElement Group(GrammarAlts alts);
  // x{min,max}; max < 0: unbounded. Tail-recursive, so the stack stays flat.
  GrammarElement Repeat(GrammarElement x, int min, int max);
  // Code points in [lo, hi] ranges (sorted or not), as UTF-8 sequences.
  GrammarAlts CodePoints(const std::vector<std::pair<uint32_t, uint32_t>>& ranges);
  // Whether the grammar being built is already too large.
  bool TooLarge() const { return elements_ > kMaxGrammarElements; }
  // Copies every rule of a built grammar into this builder; returns the
  // rule for its root (grammar_import.cc; for composing grammars).
  int Import(const Grammar& g);

  // Checks the rules and builds the automaton (see the top of this file).
  StatusOr<std::shared_ptr<const Grammar>> Build() &&;

 private:
  std::vector<std::string> names_;
  std::vector<GrammarAlts> rules_;
  std::vector<bool> defined_;
  std::vector<ByteSet> sets_;
  size_t elements_ = 0;
  int root_ = -1;
};

// Code point ranges (inclusive) to their complement within Unicode scalar
// values (no surrogates).
std::vector<std::pair<uint32_t, uint32_t>> ComplementCodePoints(
    std::vector<std::pair<uint32_t, uint32_t>> ranges);

// Appends the UTF-8 encoding of code point cp to *out (util/strings.h).
using ::weft::AppendUtf8;

}  // namespace weft::sampling
