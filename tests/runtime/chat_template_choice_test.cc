// Which chat template a model gets (runtime::ChooseChatTemplate): the GGUF's,
// a --chat-template file, or the built-in one its vocabulary supports. Each
// case builds a small GGUF vocabulary here, and every rendered chat is
// checked to write no control marker that is not a special token.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "chat/builtin_templates.h"
#include "chat/template.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "runtime/chat_template_choice.h"
#include "tokenizer/vocab.h"

namespace weft::runtime {
namespace {

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4;

struct Tok {
  std::string text;
  int32_t type;
};

// A GGUF holding an SPM vocabulary of <unk>, <s>, </s>, a few words and
// `extra`, plus `chat_template` when not empty.
class VocabFile {
 public:
  explicit VocabFile(const std::vector<Tok>& extra,
                     const std::string& chat_template = "") {
    std::vector<std::string> texts = {"<unk>", "<s>", "</s>", "\xE2\x96\x81Hi",
                                      "User", "Assistant", ":"};
    std::vector<int32_t> types = {2, kControl, kControl, kNormal, kNormal,
                                  kNormal, kNormal};
    for (const Tok& t : extra) {
      texts.push_back(t.text);
      types.push_back(t.type);
    }
    gguf::GgufWriter w;
    w.SetString("general.architecture", "llama");
    w.SetString("tokenizer.ggml.model", "llama");
    w.SetStringArray("tokenizer.ggml.tokens", texts);
    w.SetInt32Array("tokenizer.ggml.token_type", types);
    w.SetFloat32Array("tokenizer.ggml.scores",
                      std::vector<float>(texts.size(), 0.0f));
    if (!chat_template.empty()) {
      w.SetString("tokenizer.chat_template", chat_template);
    }
    auto bytes = w.Serialize();
    EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
    bytes_ = std::move(*bytes);
    auto f = gguf::GgufFile::Parse("vocab.gguf", bytes_);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    file_ = std::move(*f);
    auto v = tokenizer::LoadVocab(*file_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    vocab_ = std::move(*v);
  }

  ChatTemplateChoice Choose(std::string_view override_source = {},
                            std::string_view override_path = {}) const {
    return ChooseChatTemplate(*file_, vocab_, override_source, override_path);
  }
  const tokenizer::Vocab& vocab() const { return vocab_; }

 private:
  std::vector<uint8_t> bytes_;
  std::unique_ptr<gguf::GgufFile> file_;
  tokenizer::Vocab vocab_;
};

chat::Value Msg(const char* role, const char* content) {
  chat::Dict d;
  d.Set(chat::Value("role"), chat::Value(role));
  d.Set(chat::Value("content"), chat::Value(content));
  return chat::Value::MakeDict(std::move(d));
}

// Renders a system + two-turn chat with `source`.
std::string Render(const std::string& source) {
  auto t = chat::Template::Parse(source);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return "";
  chat::Value::List msgs = {Msg("system", "Be brief."), Msg("user", "Hi"),
                            Msg("assistant", "Hello."), Msg("user", "Bye")};
  auto out = chat::RenderChat(*t, chat::Value::MakeList(std::move(msgs)),
                              "<s>", "</s>", true);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : "";
}

// Every "<...>" run in `text` is a special token of `vocab`.
void ExpectMarkersAreSpecialTokens(const std::string& text,
                                   const tokenizer::Vocab& vocab) {
  for (size_t at = text.find('<'); at != std::string::npos;
       at = text.find('<', at + 1)) {
    const size_t end = text.find('>', at);
    ASSERT_NE(end, std::string::npos) << text;
    const std::string marker = text.substr(at, end - at + 1);
    EXPECT_TRUE(IsSpecialToken(vocab, marker)) << marker << " in " << text;
  }
}

TEST(ChatTemplateChoice, GemmaTurnTokens) {
  VocabFile f({{"<start_of_turn>", kControl}, {"<end_of_turn>", kControl},
               {"<|im_start|>", kControl}, {"<|im_end|>", kControl}});
  ChatTemplateChoice c = f.Choose();
  EXPECT_EQ(c.origin, "builtin:gemma");
  EXPECT_TRUE(c.stop.empty());
  const std::string out = Render(c.source);
  EXPECT_EQ(out,
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
            "<start_of_turn>model\nHello.<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
  ExpectMarkersAreSpecialTokens(out, f.vocab());
}

TEST(ChatTemplateChoice, Llama3Headers) {
  VocabFile f({{"<|start_header_id|>", kControl},
               {"<|end_header_id|>", kControl},
               {"<|eot_id|>", kControl}});
  ChatTemplateChoice c = f.Choose();
  EXPECT_EQ(c.origin, "builtin:llama3");
  const std::string out = Render(c.source);
  EXPECT_TRUE(out.starts_with(
      "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"))
      << out;
  EXPECT_TRUE(out.ends_with("<|start_header_id|>assistant<|end_header_id|>\n\n"));
  ExpectMarkersAreSpecialTokens(out, f.vocab());
}

TEST(ChatTemplateChoice, ChatMlOnlyWhenItsMarkersAreTokens) {
  // User-defined special tokens count as well as control ones.
  VocabFile f({{"<|im_start|>", kUserDefined}, {"<|im_end|>", kControl}});
  ChatTemplateChoice c = f.Choose();
  EXPECT_EQ(c.origin, "builtin:chatml");
  const std::string out = Render(c.source);
  EXPECT_TRUE(out.starts_with("<|im_start|>system\nBe brief.<|im_end|>\n"));
  ExpectMarkersAreSpecialTokens(out, f.vocab());
}

TEST(ChatTemplateChoice, PlainWithoutTurnTokens) {
  // <start_of_turn> as a normal token (text, not a marker) and a ChatML
  // start without its end: neither template may be used.
  VocabFile f({{"<start_of_turn>", kNormal}, {"<end_of_turn>", kControl},
               {"<|im_start|>", kControl}});
  ChatTemplateChoice c = f.Choose();
  EXPECT_EQ(c.origin, "builtin:plain");
  EXPECT_EQ(c.stop, std::vector<std::string>{"\nUser:"});
  const std::string out = Render(c.source);
  EXPECT_EQ(out,
            "Be brief.\n\nUser: Hi\nAssistant: Hello.\nUser: Bye\nAssistant:");
  EXPECT_EQ(out.find('<'), std::string::npos);
}

TEST(ChatTemplateChoice, FileTemplateWinsThenOverride) {
  const std::string own = "{% for m in messages %}{{ m.content }}{% endfor %}";
  VocabFile f({{"<start_of_turn>", kControl}, {"<end_of_turn>", kControl}},
              own);
  ChatTemplateChoice c = f.Choose();
  EXPECT_EQ(c.origin, "gguf");
  EXPECT_EQ(c.source, own);
  ChatTemplateChoice o = f.Choose("{{ 'x' }}", "/tmp/t.jinja");
  EXPECT_EQ(o.origin, "file:/tmp/t.jinja");
  EXPECT_EQ(o.source, "{{ 'x' }}");
}

}  // namespace
}  // namespace weft::runtime
