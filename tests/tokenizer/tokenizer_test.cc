// Unit tests on small in-memory vocabularies: the algorithms, special token
// handling, decoding, streaming and UTF-8 helpers.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tokenizer/detokenizer.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"

namespace weft::tokenizer {
namespace {

using Ids = std::vector<TokenId>;

void Add(Vocab* v, std::string text, float score, TokenType type = TokenType::kNormal) {
  v->tokens.push_back(std::move(text));
  v->scores.push_back(score);
  v->attrs.push_back(AttrFromTokenType(static_cast<int32_t>(type)));
}

// A small SentencePiece-style vocabulary.
std::unique_ptr<Tokenizer> SpmTokenizer(bool add_space_prefix = true) {
  Vocab v;
  v.kind = VocabKind::kLlama;
  Add(&v, "<unk>", 0, TokenType::kUnknown);  // 0
  Add(&v, "<s>", 0, TokenType::kControl);    // 1
  Add(&v, "</s>", 0, TokenType::kControl);   // 2
  for (int b = 0; b < 256; ++b) {            // 3..258
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    Add(&v, buf, 0, TokenType::kByte);
  }
  Add(&v, "\xe2\x96\x81", -1);        // 259 "▁"
  Add(&v, "a", -2);                   // 260
  Add(&v, "b", -2);                   // 261
  Add(&v, "c", -2);                   // 262
  Add(&v, "ab", -3);                  // 263
  Add(&v, "bc", -1.5);                // 264: preferred over "ab"
  Add(&v, "\xe2\x96\x81" "a", -4);    // 265 "▁a"
  Add(&v, "<tag>", 0, TokenType::kUserDefined);  // 266
  Add(&v, "<ctl>", 0, TokenType::kControl);      // 267
  Add(&v, "abc", -0.5);               // 268
  v.bos = 1;
  v.eos = 2;
  v.unk = 0;
  v.add_bos = true;
  v.add_space_prefix = add_space_prefix;
  auto tok = Tokenizer::Create(std::move(v));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return std::move(tok).value();
}

Ids Enc(const Tokenizer& t, std::string_view s, bool add_special = false,
        bool parse_special = false) {
  auto ids = t.Encode(s, {.add_special = add_special, .parse_special = parse_special});
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : Ids{};
}

TEST(SpmTest, MergesByScore) {
  auto t = SpmTokenizer(/*add_space_prefix=*/false);
  // "bc" (-1.5) beats "ab" (-3), then "a"+"bc" makes "abc".
  EXPECT_EQ(Enc(*t, "abc"), (Ids{268}));
  // "bc" first leaves "a", "bc", "a": no "bca" token.
  EXPECT_EQ(Enc(*t, "abca"), (Ids{268, 260}));
  EXPECT_EQ(Enc(*t, "bcab"), (Ids{264, 263}));
  EXPECT_EQ(Enc(*t, "ab"), (Ids{263}));
  EXPECT_EQ(Enc(*t, "cab"), (Ids{262, 263}));
}

TEST(SpmTest, DummyPrefixAndBos) {
  auto t = SpmTokenizer();
  EXPECT_EQ(Enc(*t, "a"), (Ids{265}));
  EXPECT_EQ(Enc(*t, "a", /*add_special=*/true), (Ids{1, 265}));
  EXPECT_EQ(Enc(*t, "", /*add_special=*/true), (Ids{1}));
  EXPECT_EQ(Enc(*t, ""), Ids{});
  EXPECT_EQ(Enc(*t, " "), (Ids{259, 259}));
}

TEST(SpmTest, ByteFallback) {
  auto t = SpmTokenizer(false);
  // "é" = C3 A9 is not a token: two byte tokens.
  EXPECT_EQ(Enc(*t, "\xc3\xa9"), (Ids{3 + 0xC3, 3 + 0xA9}));
  // Invalid UTF-8 and NUL bytes go through byte fallback too.
  EXPECT_EQ(Enc(*t, std::string("\xff\x00", 2)), (Ids{3 + 0xFF, 3}));
  // A truncated multibyte character at the end.
  EXPECT_EQ(Enc(*t, "a\xe2\x82"), (Ids{260, 3 + 0xE2, 3 + 0x82}));
}

TEST(SpecialTest, ControlTokensOnlyWhenAsked) {
  auto t = SpmTokenizer(false);
  const Ids plain = Enc(*t, "<ctl>");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 267), 0);
  EXPECT_EQ(Enc(*t, "<ctl>", false, /*parse_special=*/true), (Ids{267}));
  EXPECT_EQ(Enc(*t, "a<s>b", false, true), (Ids{260, 1, 261}));
  const Ids no_parse = Enc(*t, "a<s>b");
  EXPECT_EQ(std::count(no_parse.begin(), no_parse.end(), 1), 0);
}

TEST(SpecialTest, UserDefinedTokensAlwaysMatch) {
  auto t = SpmTokenizer();
  // Matched without parse_special; the text after it gets the dummy prefix.
  EXPECT_EQ(Enc(*t, "<tag>a"), (Ids{266, 265}));
  EXPECT_EQ(Enc(*t, "a<tag><tag>"), (Ids{265, 266, 266}));
}

TEST(DecodeTest, PiecesAndLeadingSpace) {
  auto t = SpmTokenizer();
  auto s = t->Decode(Ids{265, 263, 259, 262});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "aab c");  // first token's leading space stripped
  EXPECT_EQ(*t->Decode(Ids{1, 265}), " a");  // BOS renders empty, eats the strip
  EXPECT_EQ(*t->Decode(Ids{1, 265}, {.render_special = true}), "<s> a");
  EXPECT_EQ(*t->Decode(Ids{1, 265}, {.remove_special = true}), " a");
  EXPECT_EQ(*t->Decode(Ids{3 + 0xC3, 3 + 0xA9}), "\xc3\xa9");
  EXPECT_EQ(*t->Decode(Ids{266}), "<tag>");
  EXPECT_EQ(*t->Decode(Ids{267}), "");
}

TEST(DecodeTest, RejectsBadIds) {
  auto t = SpmTokenizer();
  EXPECT_FALSE(t->Decode(Ids{5, -1}).ok());
  EXPECT_FALSE(t->Decode(Ids{100000}).ok());
  EXPECT_EQ(t->TokenToPiece(-7), "");
}

TEST(TokenizerTest, FitsAModelWithAtLeastAsManyRows) {
  auto t = SpmTokenizer();  // 269 tokens
  EXPECT_TRUE(t->CheckFitsModel(t->n_tokens()).ok());
  EXPECT_TRUE(t->CheckFitsModel(t->n_tokens() + 31).ok());  // padded rows
  const Status st = t->CheckFitsModel(t->n_tokens() - 1);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      st.message().find("the vocabulary has 269 tokens but the model only 268"),
      std::string::npos)
      << st.message();
}

TEST(StreamTest, HoldsPartialCharacters) {
  auto t = SpmTokenizer();
  StreamDetokenizer stream(*t);
  // "€" = E2 82 AC spelled with byte tokens, after "a".
  EXPECT_EQ(stream.Push(265), "a");
  EXPECT_EQ(stream.Push(3 + 0xE2), "");
  EXPECT_EQ(stream.Push(3 + 0x82), "");
  EXPECT_EQ(stream.pending_bytes(), 2u);
  EXPECT_EQ(stream.Push(3 + 0xAC), "\xe2\x82\xac");
  EXPECT_EQ(stream.Push(3 + 0xFF), "\xef\xbf\xbd");  // never valid: U+FFFD
  EXPECT_EQ(stream.Push(3 + 0xE2), "");
  EXPECT_EQ(stream.Flush(), "\xef\xbf\xbd");  // unfinished at the end
}

TEST(StreamTest, MatchesDecode) {
  auto t = SpmTokenizer();
  const std::vector<Ids> cases = {
      {265, 263, 259, 262},
      {1, 265, 259, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80, 262},
      {259, 259, 265},
      {3 + 0xE2, 3 + 0x28, 3 + 0xA1},  // invalid sequence
      {}};
  for (const Ids& ids : cases) {
    StreamDetokenizer stream(*t);
    std::string streamed;
    for (TokenId id : ids) streamed += stream.Push(id);
    streamed += stream.Flush();
    EXPECT_EQ(streamed, SanitizeUtf8(*t->Decode(ids)));
  }
}

TEST(UnicodeTest, LenientDecodeMatchesLlamaCpp) {
  EXPECT_EQ(NormalizeUtf8Lenient("abc"), "abc");
  EXPECT_EQ(NormalizeUtf8Lenient("\xff"), "\xef\xbf\xbd");
  EXPECT_EQ(NormalizeUtf8Lenient("\xe2\x82" "a"), "\xef\xbf\xbd\xef\xbf\xbd" "a");
  EXPECT_EQ(NormalizeUtf8Lenient("\xed\xa0\x80"), "\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(NormalizeUtf8Lenient("\xc0\xaf"), "/");  // overlong, normalised
  EXPECT_TRUE(IsValidUtf8("h\xc3\xa9llo \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));
  EXPECT_EQ(ValidUtf8SeqLen("\xf0\x9f", 0), -1);
  EXPECT_EQ(ValidUtf8SeqLen("\xf0\x41", 0), 0);
}

TEST(UnicodeTest, Gpt2ByteMapRoundTrips) {
  EXPECT_EQ(ByteToUnicode(' '), "\xc4\xa0");  // "Ġ"
  EXPECT_EQ(ByteToUnicode('A'), "A");
  for (int b = 0; b < 256; ++b) {
    size_t pos = 0;
    const std::string_view s = ByteToUnicode(static_cast<uint8_t>(b));
    EXPECT_EQ(UnicodeToByte(DecodeUtf8Lenient(s, &pos)), b);
  }
}

TEST(PreTokenizerTest, Gpt2Pattern) {
  auto pre = PreTokenizer::Create("gpt-2");
  ASSERT_TRUE(pre.ok());
  const std::string text = "Hello world's  123 ünï!!\n";
  std::vector<std::string> words;
  for (auto [b, e] : (*pre)->Split(text)) words.push_back(text.substr(b, e - b));
  EXPECT_EQ(words, (std::vector<std::string>{"Hello", " world", "'s", " ", " 123",
                                             " ünï", "!!", "\n"}));
  EXPECT_FALSE(PreTokenizer::Create("no-such-pre").ok());
}

TEST(PreTokenizerTest, Llama3Pattern) {
  auto pre = PreTokenizer::Create("llama3");
  ASSERT_TRUE(pre.ok());
  const std::string text = "I'M 12345 abc\n\n  x";
  std::vector<std::string> words;
  for (auto [b, e] : (*pre)->Split(text)) words.push_back(text.substr(b, e - b));
  EXPECT_EQ(words, (std::vector<std::string>{"I", "'M", " ", "123", "45", " abc",
                                             "\n\n", " ", " x"}));
}

// A tiny byte-level BPE vocabulary: all 256 byte characters plus merges.
std::unique_ptr<Tokenizer> BpeTokenizer() {
  Vocab v;
  v.kind = VocabKind::kGpt2;
  v.pre = "gpt-2";
  for (int b = 0; b < 256; ++b) Add(&v, std::string(ByteToUnicode(b)), 0);
  Add(&v, "ab", 0);                 // 256
  Add(&v, "abc", 0);                // 257
  Add(&v, "\xc4\xa0" "a", 0);       // 258 "Ġa"
  Add(&v, "<|end|>", 0, TokenType::kControl);  // 259
  v.merges = {{"a", "b"}, {"ab", "c"}, {"\xc4\xa0", "a"}};
  v.bos = v.eos = 259;
  auto tok = Tokenizer::Create(std::move(v));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return std::move(tok).value();
}

TEST(BpeTest, MergesByRank) {
  auto t = BpeTokenizer();
  EXPECT_EQ(Enc(*t, "abc"), (Ids{257}));
  EXPECT_EQ(Enc(*t, "abd"), (Ids{256, 'd'}));
  // "ab" (rank 0) is merged before "Ġa" (rank 2).
  EXPECT_EQ(Enc(*t, " ab"), (Ids{' ', 256}));
  EXPECT_EQ(Enc(*t, " a"), (Ids{258}));
  EXPECT_EQ(*t->Decode(Enc(*t, "x abc\xe2\x82\xac!")), "x abc\xe2\x82\xac!");
  // Invalid UTF-8 reads as U+FFFD, as in llama.cpp.
  EXPECT_EQ(*t->Decode(Enc(*t, "a\xff")), "a\xef\xbf\xbd");
  EXPECT_EQ(Enc(*t, "<|end|>", false, true), (Ids{259}));
}

}  // namespace
}  // namespace weft::tokenizer
