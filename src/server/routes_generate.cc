// POST /v1/completions and /v1/chat/completions: parse, template, tokenize,
// check the context, submit to the backend, and turn its events into one
// JSON response or an SSE stream.
#include <ctime>

#include "server/api_format.h"
#include "server/chat_output.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/server_state.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::server {

namespace {

using Clock = std::chrono::steady_clock;

// One prepared prompt.
struct Prepared {
  std::vector<int32_t> ids;
  std::string echo_text;  // for echo (completions)
  std::string log_text;   // for log_prompts
};

// One generation request from the client's point of view: one or more
// backend requests (one per prompt), each with n sequences.
//
// Thread safety: Run() runs on the connection's strand and hands Prepare()
// to ServerState::prepare (off the I/O threads; nothing else touches the
// call meanwhile); from Start() on, every method runs on the connection's
// strand (backend events are posted there). Kept alive by the prepare task,
// then by ServerState's registry.
class GenerationCall : public std::enable_shared_from_this<GenerationCall> {
 public:
  // `format`: null writes chat completions / completions.
  GenerationCall(ServerState& s, std::shared_ptr<Exchange> ex, OpenAiRequest req,
                 std::unique_ptr<ApiFormat> format)
      : s_(s), ex_(std::move(ex)), req_(std::move(req)), format_(std::move(format)) {}

  void Run();

 private:
  std::optional<ApiError> Prepare(const ModelInfo& info);
  // Back on the strand after Prepare: registers and submits.
  void Start(std::optional<ApiError> prepare_error);
  // Whether `waiting` requests fill max_queue; if so answers 429.
  bool QueueFull(int64_t waiting);
  void Submit();
  void OnEvent(size_t prompt, GenerateEvent ev);
  void Complete();
  void AbortAll();
  // max_request_seconds passed: abort; sequences end with "abort".
  void OnTimeout() {
    if (remaining_ == 0 || timed_out_) return;
    timed_out_ = true;
    AbortAll();
  }
  void WriteChunk(const ChunkPiece& p) {
    ex_->Write(format_ ? format_->StreamPiece(p) : SseData(ChunkJson(meta_, p)));
  }
  void WriteStreamError(const ApiError& e) {
    ex_->Write(format_ ? format_->StreamError(e) : SseData(e.ToJson()));
  }
  // Choice idx's new text `p` through its output parser, if it has one;
  // written when streaming. `end`: the choice's text is over.
  void WriteText(size_t idx, ChunkPiece p, bool streaming, bool end = false);
  bool want_logprobs() const { return req_.sampling.logprobs >= 0; }

  ServerState& s_;
  std::shared_ptr<Exchange> ex_;
  OpenAiRequest req_;
  std::unique_ptr<ApiFormat> format_;     // another API's output, or null
  ResponseMeta meta_;
  std::vector<Prepared> prompts_;
  // echo + logprobs: prompt index -> its tokens' logprobs (from choice 0).
  std::map<size_t, std::vector<PositionLogprobs>> prompt_logprobs_;
  int32_t max_tokens_ = 16;
  // Stop strings the chat template adds to every chat request (ModelInfo).
  std::vector<std::string> chat_stop_;
  std::vector<std::string> backend_ids_;  // submitted so far
  std::vector<ChoiceResult> choices_;     // prompts * n
  ChatOutputPlan plan_;                   // chat: tool calls, reasoning
  std::vector<ChatOutput> outputs_;       // per choice when plan_.enabled
  size_t remaining_ = 0;                  // backend requests not yet `last`
  Usage usage_;
  bool failed_ = false;                   // an error response was sent
  std::optional<std::string> error_;      // a sequence failed
  bool registered_ = false;
  bool timed_out_ = false;                // max_request_seconds passed
  Clock::time_point t0_ = Clock::now();
  std::optional<Clock::time_point> first_token_;
  // Per choice: when its last token came (inter-token latency is per
  // sequence, as in vLLM).
  std::vector<std::optional<Clock::time_point>> last_token_;
};

std::optional<ApiError> GenerationCall::Prepare(const ModelInfo& info) {
  Backend& b = *s_.backend;
  const char* prompt_param = req_.chat ? "messages" : "prompt";
  if (req_.chat) {
    ApiResult<std::string> text = RenderChatPrompt(b, info, &req_, &plan_);
    if (!text.ok()) return text.error();
    if (auto e = CheckPromptBytes(info, text.value().size(), "messages")) return e;
    StatusOr<std::vector<int32_t>> ids = TokenizeChatPrompt(b, text.value());
    if (!ids.ok()) return FromStatus(ids.status(), "messages");
    prompts_.push_back({std::move(*ids), "", text.value()});
    chat_stop_ = info.chat_stop;
  } else {
    for (PromptInput& in : req_.prompts) {
      Prepared p;
      if (in.text) {
        if (auto e = CheckPromptBytes(info, in.text->size(), "prompt"))
          return e;
        StatusOr<std::vector<int32_t>> ids = b.Tokenize(*in.text, true, true);
        if (!ids.ok()) return FromStatus(ids.status(), "prompt");
        p.ids = std::move(*ids);
        p.echo_text = *in.text;
        p.log_text = *in.text;
      } else {
        p.ids = std::move(in.ids);
        if (req_.echo) {
          StatusOr<std::string> text = b.Detokenize(p.ids, false);
          if (!text.ok()) return FromStatus(text.status(), "prompt");
          p.echo_text = *text;
        }
      }
      prompts_.push_back(std::move(p));
    }
  }
  const int64_t ctx = info.context_length.value_or(0);
  for (const Prepared& p : prompts_) {
    int64_t len = static_cast<int64_t>(p.ids.size());
    if (len == 0) return BadRequest("the prompt is empty", prompt_param);
    if (ctx > 0 && len >= ctx) {
      return PromptTooLong(ctx, len, /*at_least=*/false, prompt_param);
    }
    if (ctx > 0 && req_.max_tokens && len + *req_.max_tokens > ctx) {
      return BadRequest(
          StrFormat("This model's maximum context length is %lld tokens. "
                    "However, you requested %lld tokens (%lld in the prompt, "
                    "%d in the completion).",
                    (long long)ctx, (long long)(len + *req_.max_tokens),
                    (long long)len, *req_.max_tokens),
          "max_tokens", "context_length_exceeded");
    }
  }
  if (req_.max_tokens) {
    max_tokens_ = *req_.max_tokens;
  } else {
    int64_t longest = 0;
    for (const Prepared& p : prompts_) {
      longest = std::max<int64_t>(longest, p.ids.size());
    }
    int64_t room = ctx > 0 ? ctx - longest : 2048;
    max_tokens_ = static_cast<int32_t>(
        req_.chat ? room : std::min<int64_t>(16, room));
  }
  return std::nullopt;
}

void GenerationCall::Run() {
  Backend& b = *s_.backend;
  ModelInfo info = b.model_info();
  meta_.chat = req_.chat;
  meta_.id = s_.NewId(format_ ? format_->IdPrefix() : req_.chat ? "chatcmpl" : "cmpl");
  meta_.created = static_cast<int64_t>(std::time(nullptr));
  meta_.model = info.id;
  // The prepare queue is part of the wait: it is bounded like the
  // backend's queue, or clients could pile up seconds of tokenizing.
  if (QueueFull(s_.preparing.load())) return;
  ++s_.preparing;
  std::shared_ptr<GenerationCall> self = shared_from_this();
  s_.prepare.Post([self, info = std::move(info)] {
    std::optional<ApiError> e;
    // A client that left while queued costs nothing more.
    if (!self->ex_->client_gone()) {
      try {
        e = self->Prepare(info);
      } catch (const std::exception& ex) {  // e.g. bad_alloc on a huge prompt
        LOG(ERROR) << "preparing a request threw: " << ex.what();
        e = InternalServerError("internal error");
      }
    }
    --self->s_.preparing;
    self->s_.gate->RunIfOpen([&] {
      self->ex_->Post([self, e = std::move(e)] { self->Start(std::move(e)); });
    });
  });
}

bool GenerationCall::QueueFull(int64_t waiting) {
  if (s_.config.max_queue <= 0 || waiting < s_.config.max_queue) return false;
  s_.metrics.RecordRejected();
  SendError(s_, *ex_,
            TooManyRequests("the request queue is full; retry later"));
  return true;
}

void GenerationCall::Start(std::optional<ApiError> prepare_error) {
  if (ex_->client_gone()) return;  // left while the prompt was prepared
  if (prepare_error) return SendError(s_, *ex_, *prepare_error);
  Backend& b = *s_.backend;
  if (QueueFull(b.Stats().num_waiting)) return;
  const size_t n = static_cast<size_t>(req_.n);
  choices_.resize(prompts_.size() * n);
  last_token_.resize(choices_.size());
  if (plan_.enabled) outputs_.assign(choices_.size(), ChatOutput(plan_.parser));
  for (size_t i = 0; i < choices_.size(); ++i) {
    ChoiceResult& c = choices_[i];
    if (req_.echo && !req_.chat) c.text = prompts_[i / n].echo_text;
    c.logprob_text_start = c.logprob_text_next = Utf8Chars(c.text);
  }
  s_.Register(meta_.id, {shared_from_this(), {}});
  registered_ = true;
  std::weak_ptr<GenerationCall> weak = weak_from_this();
  ex_->SetOnClientGone([weak] {
    if (auto self = weak.lock()) self->AbortAll();
  });
  if (s_.config.max_request_seconds > 0) {
    ex_->SetTimeout(s_.config.max_request_seconds, [weak] {
      if (auto self = weak.lock()) self->OnTimeout();
    });
  }
  Submit();
}

void GenerationCall::Submit() {
  std::weak_ptr<GenerationCall> weak = weak_from_this();
  for (size_t k = 0; k < prompts_.size(); ++k) {
    GenerateRequest g;
    g.request_id = StrFormat("%s-%zu", meta_.id.c_str(), k);
    g.prompt_ids = prompts_[k].ids;
    g.sampling = req_.sampling;
    g.max_tokens = max_tokens_;
    g.stop = req_.stop;
    for (const std::string& s : chat_stop_) {
      if (std::find(g.stop.begin(), g.stop.end(), s) == g.stop.end()) {
        g.stop.push_back(s);
      }
    }
    g.stop_token_ids = req_.stop_token_ids;
    g.ignore_eos = req_.ignore_eos;
    g.render_special = plan_.render_special;
    g.n = req_.n;
    g.echo = req_.echo;
    // echo + logprobs: the prompt tokens' logprobs lead each choice's.
    if (req_.echo && !req_.chat && want_logprobs()) {
      g.prompt_logprobs = req_.sampling.logprobs;
    }
    g.priority = req_.priority;
    g.speculative = req_.speculative;
    std::string backend_id = g.request_id;
    std::shared_ptr<Gate> gate = s_.gate;
    Exchange* ex = ex_.get();  // alive while the call is (call owns ex_)
    EventCallback relay = [gate, weak, ex, k](GenerateEvent ev) {
      gate->RunIfOpen([&] {
        std::shared_ptr<GenerationCall> self = weak.lock();
        if (!self) return;
        ex->Post([self, k, ev = std::move(ev)]() mutable {
          self->OnEvent(k, std::move(ev));
        });
      });
    };
    Status st = s_.backend->Submit(std::move(g), std::move(relay));
    if (!st.ok()) {
      failed_ = true;
      if (st.code() == StatusCode::kResourceExhausted) {
        s_.metrics.RecordRejected();
      }
      SendError(s_, *ex_, FromStatus(st, req_.chat ? "messages" : "prompt"));
      AbortAll();
      if (remaining_ == 0) s_.Unregister(meta_.id);
      return;
    }
    backend_ids_.push_back(backend_id);
    s_.AddBackendId(meta_.id, backend_id);
    remaining_++;
  }
  if (req_.stream) {
    s_.metrics.RecordHttp(200);
    ex_->StartStream(200, "text/event-stream");
    if (format_) ex_->Write(format_->StreamStart(meta_, static_cast<int64_t>(prompts_[0].ids.size())));
    for (size_t i = 0; i < choices_.size() && !format_; ++i) {
      ChunkPiece p;
      p.index = static_cast<int32_t>(i);
      p.usage_null = req_.include_usage;
      if (req_.chat) {
        p.role = true;
        WriteChunk(p);
      } else if (!choices_[i].text.empty()) {  // echo
        p.text = choices_[i].text;
        WriteChunk(p);
      }
    }
  }
}

void GenerationCall::OnEvent(size_t prompt, GenerateEvent ev) {
  const size_t n = static_cast<size_t>(req_.n);
  const bool valid = ev.index >= 0 && static_cast<size_t>(ev.index) < n;
  const size_t idx = prompt * n + (valid ? ev.index : 0);
  Clock::time_point now = Clock::now();
  size_t ntok = ev.token_ids.size();
  if (ntok > 0) {
    if (!first_token_) {
      first_token_ = now;
      s_.metrics.RecordTtft(std::chrono::duration<double>(now - t0_).count());
    }
    std::optional<Clock::time_point>& last = last_token_[idx];
    if (last) {
      double gap = std::chrono::duration<double>(now - *last).count();
      for (size_t i = 0; i < ntok; ++i) s_.metrics.RecordItl(gap / ntok);
    }
    last = now;
  }
  ChoiceResult& c = choices_[idx];
  const bool streaming = req_.stream && !failed_ && !error_;
  if (!ev.prompt_logprobs.empty()) {
    std::vector<PositionLogprobs>& pl = prompt_logprobs_[prompt];
    pl.insert(pl.end(), std::make_move_iterator(ev.prompt_logprobs.begin()),
              std::make_move_iterator(ev.prompt_logprobs.end()));
  }
  if (valid && !c.finish && (!ev.text.empty() || !ev.logprobs.empty())) {
    ChunkPiece p;
    p.index = static_cast<int32_t>(idx);
    p.text = ev.text;
    // Offsets follow the tokens, not the text released so far (held back
    // while it may start a stop string): as in the whole response.
    p.text_offset = c.logprob_text_next;
    p.want_logprobs = want_logprobs();
    p.usage_null = req_.include_usage;
    c.text += ev.text;
    if (want_logprobs()) {
      for (const PositionLogprobs& lp : ev.logprobs) {
        c.logprob_text_next += Utf8Chars(lp.chosen.text);
      }
      c.logprobs.insert(c.logprobs.end(), ev.logprobs.begin(),
                        ev.logprobs.end());
      p.logprobs = std::move(ev.logprobs);
    }
    WriteText(idx, std::move(p), streaming);
  }
  if (valid && ev.finish && !c.finish) {
    WriteText(idx, {}, streaming, /*end=*/true);
    c.finish = *ev.finish;
    c.stop_string = ev.stop_string;
    s_.metrics.RecordFinish(*ev.finish);
    if (*ev.finish == FinishReason::kError) {
      if (!error_) {
        error_ = ev.error_message.empty() ? "generation failed"
                                          : ev.error_message;
        if (streaming) WriteStreamError(InternalServerError(*error_));
        AbortAll();
      }
    } else if (streaming) {
      ChunkPiece p;
      p.index = static_cast<int32_t>(idx);
      p.finish = *ev.finish;
      p.usage_null = req_.include_usage;
      p.tool_calls_finish = !outputs_.empty() && outputs_[idx].has_calls();
      p.stop_string = ev.stop_string;
      WriteChunk(p);
    }
  }
  if (ev.last) {
    if (ev.usage) {
      usage_.prompt_tokens += ev.usage->prompt_tokens;
      usage_.completion_tokens += ev.usage->completion_tokens;
      usage_.cached_prompt_tokens += ev.usage->cached_prompt_tokens;
      if (ev.usage->queue_seconds) {
        s_.metrics.RecordQueueTime(*ev.usage->queue_seconds);
      }
    }
    if (remaining_ > 0 && --remaining_ == 0) Complete();
  }
}

void GenerationCall::WriteText(size_t idx, ChunkPiece p, bool streaming, bool end) {
  if (outputs_.empty()) {
    if (streaming && !end) WriteChunk(p);
    return;
  }
  std::vector<ChunkPiece> pieces = end ? outputs_[idx].Finish() : outputs_[idx].Push(p.text);
  // Logprobs ride on the first piece, or alone when the text was held back.
  if (pieces.empty() && !p.logprobs.empty()) pieces.emplace_back();
  for (size_t i = 0; i < pieces.size() && streaming; ++i) {
    pieces[i].index = static_cast<int32_t>(idx);
    pieces[i].usage_null = req_.include_usage;
    pieces[i].want_logprobs = want_logprobs();
    if (i == 0) pieces[i].logprobs = std::move(p.logprobs);
    WriteChunk(pieces[i]);
  }
}

void GenerationCall::Complete() {
  double total = SecondsSince(t0_);
  Usage for_metrics = usage_;
  for_metrics.queue_seconds.reset();  // recorded per backend request
  s_.metrics.RecordRequest(for_metrics, total);
  if (s_.config.log_requests) {
    std::string reasons;
    for (const ChoiceResult& c : choices_) {
      if (!reasons.empty()) reasons += ",";
      reasons += c.finish ? FinishReasonString(*c.finish) : "none";
    }
    double ttft = first_token_
        ? std::chrono::duration<double>(*first_token_ - t0_).count() : -1;
    std::string line = StrFormat(
        "%s %s tokens_in=%d tokens_out=%d cached=%d ttft_ms=%.1f "
        "total_ms=%.1f finish=%s%s%s",
        meta_.id.c_str(), req_.chat ? "chat" : "completion",
        usage_.prompt_tokens, usage_.completion_tokens,
        usage_.cached_prompt_tokens, ttft * 1000, total * 1000,
        reasons.c_str(), ex_->client_gone() ? " client_gone" : "",
        timed_out_ ? " timed_out" : "");
    if (s_.config.log_prompts) {
      for (const Prepared& p : prompts_) line += " prompt=\"" + CEscape(p.log_text, 4096) + "\"";
    }
    LOG(INFO) << line;
  }
  if (!failed_) {
    if (req_.stream && format_) {
      if (!error_) ex_->Write(format_->StreamEnd(usage_));
      ex_->End();
    } else if (req_.stream) {
      if (!error_ && req_.include_usage) {
        ex_->Write(SseData(UsageChunkJson(meta_, usage_)));
      }
      ex_->Write(kSseDone);
      ex_->End();
    } else if (error_) {
      SendError(s_, *ex_, InternalServerError(*error_));
    } else if (format_) {
      for (size_t i = 0; i < outputs_.size(); ++i) outputs_[i].Fill(&choices_[i]);
      ApiResult<std::string> body = format_->Body(meta_, choices_[0], usage_);
      if (body.ok()) SendJson(s_, *ex_, 200, std::move(body.value()));
      else SendError(s_, *ex_, body.error());
    } else {
      if (!prompt_logprobs_.empty()) {
        // Each choice's logprobs start with its prompt's tokens, at text
        // offset 0 (the echoed prompt).
        for (size_t i = 0; i < choices_.size(); ++i) {
          const auto it = prompt_logprobs_.find(i / static_cast<size_t>(req_.n));
          if (it == prompt_logprobs_.end()) continue;
          ChoiceResult& c = choices_[i];
          c.logprobs.insert(c.logprobs.begin(), it->second.begin(),
                            it->second.end());
          c.logprob_text_start = 0;
        }
      }
      for (size_t i = 0; i < outputs_.size(); ++i) outputs_[i].Fill(&choices_[i]);
      std::string body =
          req_.chat ? ChatResponseJson(meta_, choices_, want_logprobs(), usage_)
                    : CompletionResponseJson(meta_, choices_, want_logprobs(),
                                             usage_);
      SendJson(s_, *ex_, 200, std::move(body));
    }
  }
  if (registered_) s_.Unregister(meta_.id);  // may destroy *this: last
}

void GenerationCall::AbortAll() {
  for (const std::string& id : backend_ids_) s_.backend->Abort(id);
}

}  // namespace

void HandleCompletions(ServerState& s, std::shared_ptr<Exchange> ex, bool chat) {
  const std::string& body = ex->request().body;  // ex keeps it alive
  RunGeneration(s, ex, chat, body, nullptr);
}

void RunGeneration(ServerState& s, std::shared_ptr<Exchange> ex, bool chat,
                   std::string_view body, std::unique_ptr<ApiFormat> format) {
  if (s.draining || s.backend->readiness() != Readiness::kReady) {
    return SendError(s, *ex, Unavailable(s.draining ? "the server is shutting down"
                                                    : "the model is not ready"));
  }
  ParseLimits limits;
  limits.max_n = s.config.max_n;
  limits.max_sequences = s.config.max_sequences;
  limits.vocab_size = s.backend->model_info().vocab_size;
  ApiResult<OpenAiRequest> req =
      chat ? ParseChatRequest(body, limits) : ParseCompletionRequest(body, limits);
  if (!req.ok()) return SendError(s, *ex, req.error());
  auto call = std::make_shared<GenerationCall>(s, ex, std::move(req.value()), std::move(format));
  call->Run();
}

}  // namespace weft::server
