// `weft tokenize MODEL TEXT`: shows how a model's tokenizer splits text, or
// turns ids back into text with --detokenize.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "apps/command.h"
#include "apps/flags.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using tokenizer::TokenId;

// Printable form of a piece: valid UTF-8 kept, control and invalid bytes
// escaped.
std::string Printable(std::string_view s) {
  std::string out;
  size_t pos = 0;
  while (pos < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[pos]);
    const int n = tokenizer::ValidUtf8SeqLen(s, pos);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (n > 1 || (n == 1 && c >= 0x20 && c != 0x7f)) {
      out.append(s.substr(pos, n));
      pos += n;
      continue;
    } else {
      out += StrFormat("\\x%02x", c);
    }
    ++pos;
  }
  return out;
}

// "1,2,3", "1 2 3" or "[1, 2, 3]".
bool ParseIds(const std::string& text, std::vector<TokenId>* ids) {
  std::string cleaned;
  for (char c : text) {
    cleaned.push_back(c == ',' || c == '[' || c == ']' || c == '\n' || c == '\t' ? ' ' : c);
  }
  for (std::string_view part : StrSplit(cleaned, ' ')) {
    if (part.empty()) continue;
    const std::string s(part);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0' || errno != 0 || v < INT32_MIN || v > INT32_MAX) {
      return false;
    }
    ids->push_back(static_cast<TokenId>(v));
  }
  return true;
}

int RunTokenize(int argc, char** argv) {
  FlagSet flags(
      "weft tokenize MODEL TEXT | weft tokenize MODEL --detokenize IDS",
      "Prints the token ids and pieces of TEXT (\"-\" reads stdin) under "
      "MODEL's tokenizer, or the text of comma/space separated IDS.");
  bool ids_only = false, no_bos = false, special = false;
  std::string detokenize;
  flags.Bool("ids-only", &ids_only, "print only the ids, space separated");
  flags.Bool("no-bos", &no_bos, "do not add BOS/EOS even if the model asks for them");
  flags.Bool("special", &special,
             "parse control-token text (e.g. <start_of_turn>) as those tokens; "
             "with --detokenize, render control tokens");
  flags.String("detokenize", &detokenize, "ids to turn back into text");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  const bool decode = flags.WasSet("detokenize");
  if (args.size() != (decode ? 1u : 2u)) {
    std::fprintf(stderr, "usage: %s\n", flags.Usage().c_str());
    return 2;
  }
  // A file that cannot be used is a bad argument: exit 2, as run/inspect.
  auto file = gguf::GgufFile::Open(args[0]);
  if (!file.ok()) {
    std::fprintf(stderr, "error: %s\n", file.status().message().c_str());
    return 2;
  }
  auto tok = tokenizer::Tokenizer::FromGguf(**file);
  if (!tok.ok()) {
    std::fprintf(stderr, "error: %s\n", tok.status().message().c_str());
    return 2;
  }
  if (decode) {
    std::vector<TokenId> ids;
    if (!ParseIds(detokenize, &ids)) {
      std::fprintf(stderr, "error: --detokenize wants integers separated by commas or spaces\n");
      return 2;
    }
    auto text = (*tok)->Decode(ids, {.render_special = special});
    if (!text.ok()) {
      std::fprintf(stderr, "error: %s\n", text.status().message().c_str());
      return 2;
    }
    std::fwrite(text->data(), 1, text->size(), stdout);
    std::fputc('\n', stdout);
    return 0;
  }
  std::string text = args[1];
  if (text == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  auto ids = (*tok)->Encode(text, {.add_special = !no_bos, .parse_special = special});
  if (!ids.ok()) {
    std::fprintf(stderr, "error: %s\n", ids.status().message().c_str());
    return 2;
  }
  if (ids_only) {
    std::string line;
    for (size_t i = 0; i < ids->size(); ++i) {
      if (i) line += ' ';
      line += std::to_string((*ids)[i]);
    }
    std::printf("%s\n", line.c_str());
    return 0;
  }
  for (TokenId id : *ids) {
    std::printf("%7d -> '%s'\n", id,
                Printable((*tok)->TokenToPiece(id, /*render_special=*/true)).c_str());
  }
  return 0;
}

}  // namespace

WEFT_COMMAND("tokenize", "show a model's tokens for a text, or --detokenize ids",
             RunTokenize);

}  // namespace weft::apps
