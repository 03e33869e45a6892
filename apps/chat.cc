// `weft chat [-m MODEL]`: an interactive terminal chat, like `ollama run`.
// The model's chat template renders the conversation (a built-in one when
// the file has none); answers stream as they are generated.
//
//   >>> Write a haiku about the sea.
//   Waves fold into foam ...
//
// Commands: /clear (forget the conversation), /system TEXT (set the system
// message; "/system" alone clears it), /exit or /bye (and Ctrl-D) leave,
// /? lists them. A message between lines of """ spans several lines.
// Ctrl-C stops the answer being generated (what was shown stays in the
// conversation) and, at the prompt, drops the line being typed.
//
// When the conversation no longer fits the context with room for an
// answer, the oldest turns are dropped, with a notice.
//
// Threads: the main thread reads input and prints; the engine's callbacks
// only queue events (AnswerStream). SIGINT is blocked in every thread but
// the main one, whose handler only sets a flag.
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "apps/build_info.h"
#include "apps/command.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "model/kv_storage.h"
#include "runtime/engine_builder.h"
#include "server/backend.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::apps {

namespace {

// `s` without leading and trailing ASCII whitespace.
std::string Strip(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::atomic<bool> g_interrupted{false};

void OnSigint(int) { g_interrupted.store(true); }

// Reads lines from a file descriptor with read(2), so that a Ctrl-C
// (SIGINT, installed without SA_RESTART) interrupts a read in progress.
class LineReader {
 public:
  enum class Result { kLine, kEof, kInterrupted };

  explicit LineReader(int fd) : fd_(fd) {}

  // The next line without its '\n'. kInterrupted drops what was typed.
  Result Read(std::string* line) {
    line->clear();
    while (true) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        line->assign(buf_, 0, nl);
        buf_.erase(0, nl + 1);
        return Result::kLine;
      }
      char chunk[4096];
      const ssize_t n = ::read(fd_, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) {
        if (g_interrupted.exchange(false)) {
          buf_.clear();
          return Result::kInterrupted;
        }
        continue;
      }
      if (n <= 0) {
        if (buf_.empty()) return Result::kEof;
        line->swap(buf_);  // a last line without '\n'
        buf_.clear();
        return Result::kLine;
      }
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buf_;  // read but not yet returned
};

// Events of one answer, from the engine's thread to the main thread.
class AnswerStream {
 public:
  void Push(server::GenerateEvent ev) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(ev));
    cv_.notify_one();
  }
  // The next event, or nullopt after `timeout` without one.
  std::optional<server::GenerateEvent> Pop(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) {
      return std::nullopt;
    }
    server::GenerateEvent ev = std::move(events_.front());
    events_.pop_front();
    return ev;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<server::GenerateEvent> events_;  // guarded by mu_
};

struct ChatOptions {
  server::SamplingFields sampling;  // as `weft run`'s flags set them
  int64_t n_predict = 0;            // tokens per answer; 0 = to the context
  int context = 0;                  // tokens, from the loaded engine
  std::string system;               // system message; empty = none
};

class ChatSession {
 public:
  ChatSession(server::Backend* backend, ChatOptions opt)
      : backend_(backend), opt_(std::move(opt)) {}

  // Runs until /exit, /bye or end of input. Returns the exit code.
  int Run() {
    LineReader in(STDIN_FILENO);
    std::printf(">>> Send a message (/? for help)\n");
    while (true) {
      std::string text;
      const LineReader::Result r = ReadMessage(in, &text);
      if (r == LineReader::Result::kEof) break;
      if (r == LineReader::Result::kInterrupted) {
        std::printf("\nUse Ctrl + d or /bye to exit.\n");
        continue;
      }
      if (text.empty()) continue;
      if (text[0] == '/' && text.rfind("\"\"\"", 0) != 0) {
        if (!Command(text)) break;
        continue;
      }
      Answer(text);
    }
    std::printf("\n");
    std::fflush(stdout);
    return 0;
  }

 private:
  // One message: a line, or the lines between """ and """.
  LineReader::Result ReadMessage(LineReader& in, std::string* text) {
    std::printf(">>> ");
    std::fflush(stdout);
    std::string line;
    LineReader::Result r = in.Read(&line);
    if (r != LineReader::Result::kLine) return r;
    if (line.rfind("\"\"\"", 0) != 0) {
      *text = Strip(line);
      return r;
    }
    std::string body = line.substr(3);
    while (!(body.size() >= 3 && body.ends_with("\"\"\""))) {
      std::printf("... ");
      std::fflush(stdout);
      r = in.Read(&line);
      if (r != LineReader::Result::kLine) return r;
      body += "\n" + line;
    }
    body.resize(body.size() - 3);
    *text = Strip(body);
    return LineReader::Result::kLine;
  }

  // A /command; false to leave.
  bool Command(const std::string& text) {
    const size_t sp = text.find(' ');
    const std::string cmd = text.substr(0, sp);
    const std::string arg =
        sp == std::string::npos
            ? std::string()
            : Strip(text.substr(sp + 1));
    if (cmd == "/exit" || cmd == "/bye") return false;
    if (cmd == "/clear") {
      history_.clear();
      std::printf("Cleared the conversation.\n");
    } else if (cmd == "/system") {
      opt_.system = arg;
      std::printf(arg.empty() ? "Cleared the system message.\n"
                              : "Set the system message.\n");
    } else if (cmd == "/?" || cmd == "/help") {
      std::printf(
          "  /clear          forget the conversation\n"
          "  /system TEXT    set the system message (/system alone clears it)\n"
          "  /exit, /bye     leave (or Ctrl-D)\n"
          "  \"\"\"             begin and end a message of several lines\n"
          "  Ctrl-C          stop the answer being written\n");
    } else {
      std::printf("Unknown command '%s'. Type /? for help\n", cmd.c_str());
    }
    std::fflush(stdout);
    return true;
  }

  server::ChatTemplateRequest Conversation(const std::string& user) const {
    server::ChatTemplateRequest req;
    auto add = [&](const char* role, const std::string& content) {
      server::ChatMessage m;
      m.role = role;
      m.content = content;
      req.messages.push_back(std::move(m));
    };
    if (!opt_.system.empty()) add("system", opt_.system);
    for (const auto& [u, a] : history_) {
      add("user", u);
      add("assistant", a);
    }
    add("user", user);
    return req;
  }

  // The prompt for `user` after the history, dropping the oldest turns
  // until it leaves room for an answer; nullopt (with a message) when even
  // the message alone does not fit.
  std::optional<std::vector<int32_t>> Prompt(const std::string& user) {
    const int64_t room = opt_.n_predict > 0
                             ? opt_.n_predict
                             : std::min<int64_t>(256, opt_.context / 4);
    int dropped = 0;
    while (true) {
      StatusOr<std::string> text =
          backend_->ApplyChatTemplate(Conversation(user));
      StatusOr<std::vector<int32_t>> ids =
          text.ok() ? server::TokenizeChatPrompt(*backend_, *text)
                    : StatusOr<std::vector<int32_t>>(text.status());
      if (!ids.ok()) {
        std::printf("error: %s\n", ids.status().message().c_str());
        return std::nullopt;
      }
      const int64_t len = static_cast<int64_t>(ids->size());
      if (len + room <= opt_.context || (history_.empty() && len < opt_.context)) {
        if (dropped > 0) {
          std::printf("(the context is full: dropped the oldest %d turn%s)\n",
                      dropped, dropped == 1 ? "" : "s");
        }
        return std::move(*ids);
      }
      if (history_.empty()) {
        std::printf("error: the message is %lld tokens; the context holds %d\n",
                    (long long)len, opt_.context);
        return std::nullopt;
      }
      history_.pop_front();
      ++dropped;
    }
  }

  void Answer(const std::string& user) {
    std::optional<std::vector<int32_t>> ids = Prompt(user);
    if (!ids) {
      std::fflush(stdout);
      return;
    }
    server::GenerateRequest req;
    req.request_id = StrFormat("chat-%d", ++turns_);
    const int64_t left = opt_.context - static_cast<int64_t>(ids->size());
    req.max_tokens = static_cast<int32_t>(
        opt_.n_predict > 0 ? std::min<int64_t>(opt_.n_predict, left) : left);
    req.prompt_ids = std::move(*ids);
    req.sampling = opt_.sampling;
    req.stop = backend_->model_info().chat_stop;
    auto stream = std::make_shared<AnswerStream>();
    g_interrupted.store(false);
    Status st = backend_->Submit(
        std::move(req), [stream](server::GenerateEvent ev) { stream->Push(std::move(ev)); });
    if (!st.ok()) {
      std::printf("error: %s\n", st.message().c_str());
      std::fflush(stdout);
      return;
    }
    std::string answer;
    bool aborted = false;
    std::optional<server::FinishReason> finish;
    while (true) {
      if (g_interrupted.exchange(false) && !aborted) {
        backend_->Abort(StrFormat("chat-%d", turns_));
        aborted = true;
      }
      std::optional<server::GenerateEvent> ev =
          stream->Pop(std::chrono::milliseconds(50));
      if (!ev) continue;
      if (!ev->text.empty()) {
        std::fwrite(ev->text.data(), 1, ev->text.size(), stdout);
        std::fflush(stdout);
        answer += ev->text;
      }
      if (ev->finish) finish = ev->finish;
      if (ev->last) break;
    }
    std::printf("\n");
    if (finish == server::FinishReason::kAbort) {
      std::printf("(stopped)\n");
    } else if (finish == server::FinishReason::kLength) {
      std::printf("(the answer reached its length limit)\n");
    } else if (finish == server::FinishReason::kError) {
      std::printf("(the answer failed)\n");
    }
    std::printf("\n");
    std::fflush(stdout);
    history_.emplace_back(user, Strip(answer));
  }

  server::Backend* backend_;
  ChatOptions opt_;
  std::deque<std::pair<std::string, std::string>> history_;  // user, answer
  int turns_ = 0;
};

int Fail(int code, const std::string& msg) {
  std::fprintf(stderr, "weft chat: %s\n", msg.c_str());
  return code;
}

// The flags of `weft chat`.
struct ChatFlags {
  // -m: the GGUF file.
  ModelFlags model{WEFT_DEFAULT_MODEL};
  // --temp, --top-p, ...: the sampler.
  SamplingFlags sampling;
  // -t: compute threads; 0 = all cores.
  ThreadFlags threads;
  // --kv-type, --kv-memory: the KV cache.
  KvFlags kv{"KV cache storage: f16, f32 or q8_0",
             "KV cache size: bytes (512M, 2G) or a fraction of free memory"};
  // System message; empty = none.
  std::string system;
  // Most tokens per answer; 0 = until the end of the turn.
  int64_t n_predict = 0;
  // Context size in tokens; 0 = min(training context, 4096).
  int64_t ctx = 0;
  // Log the engine's start-up to stderr.
  bool verbose = false;
};

// Checks the values' ranges: an empty string, or the message.
std::string CheckChatFlags(const ChatFlags& o) {
  const SamplingFlags& sp = o.sampling;
  if (o.n_predict < 0 || o.n_predict > (int64_t{1} << 24)) return "-n must be in [0, 16777216]";
  if (o.threads.threads < 0 || o.threads.threads > 1024) return "--threads must be in [0, 1024]";
  if (o.ctx < 0 || o.ctx > (int64_t{1} << 24) || o.ctx == 1) {
    return "--ctx must be 0 or in [2, 16777216]";
  }
  if (!(sp.temp >= 0 && sp.temp <= 100)) return "--temp must be in [0, 100]";
  if (!(sp.top_p > 0 && sp.top_p <= 1)) return "--top-p must be in (0, 1]";
  if (!(sp.min_p >= 0 && sp.min_p <= 1)) return "--min-p must be in [0, 1]";
  if (!(sp.repeat_penalty > 0 && sp.repeat_penalty <= 100)) {
    return "--repeat-penalty must be in (0, 100]";
  }
  if (!model::ParseKvType(o.kv.type).ok()) return "--kv-type must be f32, f16 or q8_0";
  return "";
}

// Parses and checks the flags; false with *rc the exit code when the
// command is done.
bool ParseChatFlags(int argc, char** argv, ChatFlags* o, int* rc) {
  FlagSet flags("weft chat [-m MODEL] [flags]",
                "Chat with a model in the terminal, answers streamed as they "
                "are written. /? lists the commands; Ctrl-C stops an answer, "
                "Ctrl-D or /bye leaves.");
  o->model.Register(&flags);
  flags.String("system", &o->system, "system message (also /system TEXT)");
  flags.Int("n-predict", &o->n_predict, "most tokens per answer; 0 = until the end of the turn",
            'n');
  o->sampling.Register(&flags);
  flags.Int("ctx", &o->ctx, "context size in tokens; 0 = min(training context, 4096)");
  o->threads.Register(&flags);
  o->kv.Register(&flags);
  flags.Bool("verbose", &o->verbose, "log the engine's start-up to stderr");
  std::vector<std::string> args;
  if (!flags.Parse(argc, argv, &args, rc)) return false;
  const std::string error = args.empty() ? CheckChatFlags(*o)
                                         : "unexpected argument '" + CEscape(args[0]) + "'";
  if (!error.empty()) {
    *rc = Fail(2, error);
    return false;
  }
  return true;
}

int RunChat(int argc, char** argv) {
  ChatFlags o;
  if (int rc; !ParseChatFlags(argc, argv, &o, &rc)) return rc;

  runtime::EngineConfig mc;
  std::string error;
  if (!ParseKvMemory(o.kv.memory, &mc.kv_bytes, &error)) return Fail(2, error);
  mc.model_path = o.model.path;
  mc.kv_type = o.kv.type;
  mc.threads = static_cast<int>(o.threads.threads);
  mc.scheduler.max_seqs = 1;
  mc.scheduler.max_model_len = static_cast<int>(o.ctx);
  if (!o.verbose) SetMinLogLevel(LogLevel::kWarning);

  // SIGINT goes to the main thread only: block it before the engine's
  // threads start (they inherit the mask), then handle it here.
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigint, nullptr);
  std::fprintf(stderr, "weft chat: loading %s\n", o.model.path.c_str());
  runtime::EngineSummary summary;
  StatusOr<std::unique_ptr<server::EngineBackend>> backend =
      runtime::BuildBackend(mc, &summary);
  if (!backend.ok()) {
    const std::string msg = backend.status().message();
    return Fail(backend.status().code() == StatusCode::kResourceExhausted ? 1 : 2,
                msg.find(o.model.path) != std::string::npos ? msg : o.model.path + ": " + msg);
  }
  struct sigaction sa = {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a read in progress returns EINTR
  sigaction(SIGINT, &sa, nullptr);
  pthread_sigmask(SIG_UNBLOCK, &sigint, nullptr);
  std::fprintf(stderr, "weft chat: %s, chat template %s, context %d tokens\n",
               summary.model.c_str(), summary.chat_template.c_str(),
               summary.max_model_len);

  ChatOptions opt;
  opt.sampling.temperature = static_cast<float>(o.sampling.temp);
  opt.sampling.top_p = static_cast<float>(o.sampling.top_p);
  opt.sampling.top_k = static_cast<int32_t>(o.sampling.top_k);
  opt.sampling.min_p = static_cast<float>(o.sampling.min_p);
  opt.sampling.repetition_penalty = static_cast<float>(o.sampling.repeat_penalty);
  if (o.sampling.seed >= 0) opt.sampling.seed = static_cast<uint64_t>(o.sampling.seed);
  opt.n_predict = o.n_predict;
  opt.context = summary.max_model_len;
  opt.system = o.system;
  ChatSession session(backend->get(), std::move(opt));
  const int rc = session.Run();
  (*backend)->StartDraining();
  return rc;
}

}  // namespace

WEFT_COMMAND("chat", "chat with a model in the terminal", RunChat);

}  // namespace weft::apps
