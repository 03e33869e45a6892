// The non-generating routes: models, health, tokenize/detokenize, metrics
// and effective-config.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "server/openai_constraints.h"
#include "server/openai_request.h"
#include "server/server_state.h"
#include "server/tool_request.h"
#include "util/enum_name.h"
#include "util/strings.h"

namespace weft::server {

namespace {

using json = nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

template <typename T>
json OrNull(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

const char* ReadinessName(Readiness r) {
  static constexpr const char* kNames[] = {"loading", "ready", "draining"};
  return EnumName<Readiness::kDraining>(r, kNames, "unknown");
}

}  // namespace

json ModelJson(const ModelInfo& m) {
  return {{"id", m.id},
          {"object", "model"},
          {"created", m.created},
          {"owned_by", "weft"},
          {"root", m.path ? json(*m.path) : json(m.id)},
          {"max_model_len", OrNull(m.context_length)}};
}

void HandleModels(ServerState& s, Exchange& ex) {
  json model = ModelJson(s.backend->model_info());
  SendJson(s, ex, 200,
           Dump({{"object", "list"}, {"data", json::array({model})}}));
}

void HandleModel(ServerState& s, Exchange& ex) {
  static constexpr std::string_view kPrefix = "/v1/models/";
  std::string id = ex.request().path.substr(kPrefix.size());
  if (!id.empty() && id.back() == '/') id.pop_back();
  ModelInfo m = s.backend->model_info();
  if (id != m.id) {
    ApiError e = NotFound("The model '" + CEscape(id, 200) +
                          "' does not exist");
    e.code = "model_not_found";
    e.param = "model";
    return SendError(s, ex, e);
  }
  SendJson(s, ex, 200, Dump(ModelJson(m)));
}

void HandleHealth(ServerState& s, Exchange& ex, bool readiness) {
  Readiness r = s.draining ? Readiness::kDraining : s.backend->readiness();
  int status = r == Readiness::kReady ? 200 : 503;
  json body = {{"status", r == Readiness::kReady ? "ok" : ReadinessName(r)}};
  if (status == 503) {
    s.metrics.RecordHttp(503);
    ex.Respond(503, "application/json", Dump(body),
               {{"Retry-After", std::to_string(s.config.retry_after_s)}});
    return;
  }
  SendJson(s, ex, 200, Dump(body));
}

void HandleLive(ServerState& s, Exchange& ex) {
  SendJson(s, ex, 200, Dump({{"status", "alive"}}));
}

void HandleTokenize(ServerState& s, Exchange& ex) {
  ApiResult<TokenizeRequest> req = ParseTokenizeRequest(ex.request().body);
  if (!req.ok()) return SendError(s, ex, req.error());
  Backend& b = *s.backend;
  StatusOr<std::vector<int32_t>> ids = [&]() -> StatusOr<std::vector<int32_t>> {
    if (req.value().text) {
      return b.Tokenize(*req.value().text, req.value().add_special, true);
    }
    StatusOr<std::string> text = b.ApplyChatTemplate(*req.value().chat);
    if (!text.ok()) return text.status();
    return b.Tokenize(*text, false, true);
  }();
  if (!ids.ok()) {
    return SendError(s, ex,
                     FromStatus(ids.status(),
                                req.value().text ? "prompt" : "messages"));
  }
  json body = {{"tokens", *ids},
               {"count", ids->size()},
               {"max_model_len", OrNull(b.model_info().context_length)}};
  SendJson(s, ex, 200, Dump(body));
}

void HandleDetokenize(ServerState& s, Exchange& ex) {
  ParseLimits limits;
  limits.vocab_size = s.backend->model_info().vocab_size;
  ApiResult<std::vector<int32_t>> ids =
      ParseDetokenizeRequest(ex.request().body, limits);
  if (!ids.ok()) return SendError(s, ex, ids.error());
  // Special tokens as text, as vLLM and llama-server show them.
  StatusOr<std::string> text = s.backend->Detokenize(ids.value(), true);
  if (!text.ok()) return SendError(s, ex, FromStatus(text.status(), "tokens"));
  SendJson(s, ex, 200, Dump({{"prompt", *text}}));
}

void HandleMetrics(ServerState& s, Exchange& ex) {
  BackendStats st = s.backend->Stats();
  std::string text = s.metrics.Render(st, s.backend->engine_info(),
                                      s.http ? s.http->open_connections() : 0);
  s.metrics.RecordHttp(200);
  ex.Respond(200, "text/plain; version=0.0.4; charset=utf-8", std::move(text));
}

json PassCostJson(const std::optional<engine::PassCostSnapshot>& p) {
  if (!p) return nullptr;
  const engine::PassCostCoefficients& c = p->coefficients;
  return {{"ready", p->ready},
          {"samples", p->samples},
          {"fixed_ms", c.fixed_ms},
          {"per_token_ms", c.per_token_ms},
          {"per_logit_row_ms", c.per_logit_row_ms},
          {"per_1k_context_ms", c.per_1k_context_ms},
          {"rms_ms", p->rms_ms}};
}

// Always the same keys; a value is null when nobody measured it.
// What tool calling and reasoning this server's template gets (below).
json ToolCallingJson(const ModelInfo& m);

void HandleEffectiveConfig(ServerState& s, Exchange& ex) {
  ModelInfo m = s.backend->model_info();
  EngineInfo e = s.backend->engine_info();
  BackendStats st = s.backend->Stats();
  const ServerConfig& c = s.config;
  json server = {
      {"version", c.version},
      {"build_commit", c.build_commit},
      {"pid", static_cast<int64_t>(getpid())},
      {"start_time", s.start_unix},
      {"uptime_s", SecondsSince(s.start)},
      {"host", c.host},
      {"port", s.http ? s.http->port() : c.port},
      {"io_threads", c.io_threads},
      {"max_body_bytes", c.max_body_bytes},
      {"max_connections", c.max_connections},
      {"max_sequences", c.max_sequences},
      {"max_request_seconds", c.max_request_seconds},
      {"api_key_required", !c.api_key.empty()},
      {"readiness", ReadinessName(s.draining ? Readiness::kDraining
                                             : s.backend->readiness())}};
  json compute = {{"isa_path", OrNull(e.isa_path)},
                  {"threads", OrNull(e.threads)}};
  json model = {{"id", m.id},
                {"path", OrNull(m.path)},
                {"size_bytes", OrNull(m.size_bytes)},
                {"sha256", OrNull(m.sha256)},
                {"architecture", OrNull(m.architecture)},
                {"quantization", OrNull(m.quantization)},
                {"context_length", OrNull(m.context_length)},
                {"parameter_count", OrNull(m.parameter_count)},
                {"vocab_size", OrNull(m.vocab_size)},
                {"chat_template", OrNull(m.chat_template)}};
  std::optional<int64_t> max_queue = e.max_queue;
  if (!max_queue && c.max_queue > 0) max_queue = c.max_queue;
  json scheduler = {
      {"kind", OrNull(e.scheduler_kind)},
      {"max_in_flight", OrNull(e.max_in_flight)},
      {"prefill_chunk_size", OrNull(e.prefill_chunk_size)},
      {"token_budget", OrNull(e.token_budget)},
      {"max_queue", OrNull(max_queue)},
      {"in_flight_now", st.num_running},
      {"waiting_now", st.num_waiting},
      {"peak_in_flight", st.peak_in_flight},
      {"admission_ceiling_reason", OrNull(st.admission_ceiling_reason)},
      {"scheduling_policy", OrNull(e.scheduling_policy)},
      {"target_itl_ms", OrNull(e.target_itl_ms)},
      {"target_itl_ratio", OrNull(e.target_itl_ratio)},
      {"spec_method", OrNull(e.spec_method)},
      {"spec_k_max", OrNull(e.spec_k_max)},
      {"spec_adaptive", OrNull(e.spec_adaptive)},
      {"draft_model", OrNull(e.draft_model)},
      {"draft_kv_blocks", OrNull(e.draft_kv_blocks)},
      {"pass_cost_model", PassCostJson(st.pass_cost)}};
  json kv = {{"block_size", OrNull(e.kv_block_size)},
             {"blocks_total", OrNull(st.kv_blocks_total)},
             {"blocks_used", OrNull(st.kv_blocks_used)},
             {"blocks_cached", OrNull(st.kv_blocks_cached)},
             {"bytes", OrNull(e.kv_bytes)}};
  json counters = {{"admission_rejections", st.admission_rejections},
                   {"preemptions", st.preemptions},
                   {"aborts", st.aborts}};
  json body = {{"server", server},       {"compute", compute},
               {"model", model},         {"scheduler", scheduler},
               {"kv", kv},               {"counters", counters},
               {"structured_outputs", StructuredOutputForms()},
               {"tool_calling", ToolCallingJson(m)}};
  SendJson(s, ex, 200, Dump(body));
}

// tool_calls.h's format and reasoning markers for the template.
json ToolCallingJson(const ModelInfo& m) {
  const ChatFormat f = DetectChatFormat(m.chat_template_source);
  json formats = json::array();
  for (ToolCallFormat t : AllToolCallFormats()) formats.push_back(ToolCallFormatName(t));
  return {{"tool_choice", ToolChoiceForms()},
          {"parallel_tool_calls", true},
          {"format", ToolCallFormatName(f.tools)},
          {"formats", formats},
          {"reasoning", f.think_open.empty() ? json(nullptr) : json(f.think_open)}};
}

}  // namespace weft::server
