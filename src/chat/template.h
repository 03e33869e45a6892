// Chat templates: parses and renders the Jinja2 chat templates shipped in
// GGUF files / Hugging Face tokenizer configs, byte for byte as Hugging Face
// transformers renders them (jinja2 ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks, loopcontrols, its tojson, raise_exception and
// strftime_now). See interpreter.h for the runtime and parser.h for syntax.
//
//   ASSIGN_OR_RETURN(Template t, Template::Parse(source));
//   ASSIGN_OR_RETURN(std::string prompt,
//                    RenderChat(t, messages, "<s>", "</s>", true));
//
// Errors: a template that does not parse -> InvalidArgument naming the line;
// the template's raise_exception(msg) -> a Status with IsRaisedException()
// true and message() == msg; other render failures -> InvalidArgument with
// the line; resource limits (RenderConfig) -> ResourceExhausted.
//
// Thread safety: a Template is immutable after Parse; Render may be called
// concurrently from many threads (each call has its own state).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "chat/interpreter.h"
#include "chat/value.h"
#include "util/status.h"

namespace weft::chat {

class Template {
 public:
  // Parses `source`; also rejects unknown filter and test names (jinja2
  // does at compile time).
  static StatusOr<Template> Parse(std::string_view source);

  // Renders with `context` (a dict of top-level variables).
  StatusOr<std::string> Render(const Value& context,
                               const RenderConfig& config = {}) const;

 private:
  explicit Template(std::shared_ptr<const std::vector<NodePtr>> body)
      : body_(std::move(body)) {}
  std::shared_ptr<const std::vector<NodePtr>> body_;
};

// Whether `s` is the error of a template's raise_exception(msg).
bool IsRaisedException(const Status& s);

// Renders a chat the way transformers' apply_chat_template does: variables
// messages, tools (None when `tools` is undefined), documents (None),
// add_generation_prompt, bos_token, eos_token, then every entry of
// `extra_kwargs` (a dict; may override the others).
StatusOr<std::string> RenderChat(const Template& tmpl, const Value& messages,
                                 std::string_view bos_token,
                                 std::string_view eos_token,
                                 bool add_generation_prompt,
                                 const Value& tools = Value(),
                                 const Value& extra_kwargs = Value(),
                                 const RenderConfig& config = {});

}  // namespace weft::chat
