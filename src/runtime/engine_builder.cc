#include "runtime/engine_builder.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/model_executor.h"
#include "kernels/isa.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_sizing.h"
#include "model/kv_storage.h"
#include "model/model.h"
#include "runtime/chat_template_choice.h"
#include "runtime/draft_proposer.h"
#include "runtime/model_facts.h"
#include "sampling/json_constraint.h"
#include "server/chat_render.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::runtime {
namespace {

std::string TokenText(const tokenizer::Vocab& v, tokenizer::TokenId id) {
  return v.Valid(id) ? v.tokens[static_cast<size_t>(id)] : std::string();
}

// The chat template a model is served with and its renderer; `origin` is
// the choice's origin plus " (unusable: ...)" when it does not parse.
struct ChatSetup {
  ChatTemplateChoice choice;
  server::ChatRenderer renderer;
  std::string origin;
};

// The override, the GGUF's template, or a built-in one the vocabulary
// supports; a template that does not parse is logged, not an error.
ChatSetup SetUpChat(const EngineConfig& config, const gguf::GgufFile& file,
                    const tokenizer::Vocab& vocab) {
  ChatTemplateChoice tmpl = ChooseChatTemplate(
      file, vocab, config.chat_template, config.chat_template_path);
  std::string origin = tmpl.origin;
  if (tmpl.origin.starts_with("builtin:")) {
    LOG(INFO) << config.model_path << " has no chat template; chat uses the "
              << tmpl.origin << " template its vocabulary supports";
  }
  server::ChatRenderer chat = server::ChatRenderer::Create(
      tmpl.source, TokenText(vocab, vocab.bos), TokenText(vocab, vocab.eos));
  if (!chat.parse_status().ok()) {
    LOG(ERROR) << "the " << origin << " chat template does not parse ("
               << chat.parse_status().message()
               << "); /v1/chat/completions will fail";
    origin += " (unusable: " + chat.parse_status().message() + ")";
  }
  return ChatSetup{std::move(tmpl), std::move(chat), std::move(origin)};
}

// The scheduler and KV cache the engine runs with.
struct KvSetup {
  engine::SchedulerConfig sched;
  kv::KvCacheConfig kv;
  model::KvType kv_type = model::KvType::kF16;
  uint64_t kv_bytes_used = 0;  // bytes of the KV blocks allocated
};

// Fills in the default context length, sizes the KV cache from the byte
// budget, and caps the context to what the cache holds for one sequence
// (an error when --ctx asked for more).
StatusOr<KvSetup> SizeKv(const EngineConfig& config,
                         const model::ModelConfig& mc) {
  KvSetup s;
  s.sched = config.scheduler;
  engine::SchedulerConfig& sched = s.sched;
  if (sched.max_model_len <= 0) {
    sched.max_model_len = static_cast<int>(
        mc.n_ctx_train > 0 ? std::min<int64_t>(mc.n_ctx_train, 4096) : 4096);
  }
  RETURN_IF_ERROR(sched.Validate());
  ASSIGN_OR_RETURN(s.kv_type, model::ParseKvType(config.kv_type));
  ASSIGN_OR_RETURN(const kv::KvLayout layout,
                   model::KvLayoutOf(mc, s.kv_type));
  ASSIGN_OR_RETURN(s.kv,
                   kv::KvConfigForBytes(layout, config.kv_block_size,
                                        config.kv_bytes,
                                        {sched.max_seqs, sched.MaxPassTokens()},
                                        config.kv_split_groups,
                                        &s.kv_bytes_used));
  // One sequence must fit in the cache alone, or a request the context
  // allows would fail after doing its work (vLLM refuses to start then).
  const int kv_tokens =
      kv::KvCacheManager::MaxSequenceTokens(s.kv, sched.ChunkCap());
  if (sched.max_model_len > kv_tokens) {
    if (config.scheduler.max_model_len > 0) {
      return InvalidArgumentError(StrFormat(
          "a context of %d tokens (--ctx) does not fit the KV cache, which "
          "holds %d tokens of one sequence: raise --kv-memory or lower --ctx",
          sched.max_model_len, kv_tokens));
    }
    LOG(WARNING) << "context length " << sched.max_model_len
                 << " capped to " << kv_tokens
                 << " tokens, what the KV cache holds for one sequence "
                    "(raise --kv-memory for more)";
    sched.max_model_len = kv_tokens;
  }
  return s;
}

// JSON mode's view of the tokens: what each one decodes to (control
// tokens and rows past the tokenizer's vocabulary: nothing). Sets
// `max_token_bytes` to the text bytes of the longest token, special
// tokens' text included (what a prompt's bytes divide by for a lower bound
// on its tokens). REQUIRES: the tokenizer has at most n_vocab tokens.
std::shared_ptr<const sampling::VocabBytes> VocabBytesOf(
    const tokenizer::Tokenizer& tokenizer, int64_t n_vocab,
    int64_t* max_token_bytes) {
  *max_token_bytes = 1;
  std::vector<std::string> pieces(static_cast<size_t>(n_vocab));
  for (int32_t id = 0; id < tokenizer.n_tokens(); ++id) {
    pieces[static_cast<size_t>(id)] = std::string(tokenizer.TokenToPiece(id));
    *max_token_bytes = std::max<int64_t>(
        *max_token_bytes, tokenizer.TokenToPiece(id, true).size());
  }
  return std::make_shared<const sampling::VocabBytes>(std::move(pieces));
}

// The model's facts as /v1/models and /v1/effective-config report them.
server::ModelInfo MakeModelInfo(const EngineConfig& config,
                                const model::Model& model,
                                const tokenizer::Tokenizer& tokenizer,
                                const ChatTemplateChoice& tmpl,
                                int max_model_len, int64_t max_token_bytes) {
  const gguf::GgufFile& file = model.gguf();
  server::ModelInfo mi;
  mi.id = config.model_id.empty()
              ? std::filesystem::path(config.model_path).stem().string()
              : config.model_id;
  mi.path = config.model_path;
  mi.size_bytes = file.file_size();
  mi.architecture = model.config().arch_name;
  mi.quantization = Quantization(file);
  mi.context_length = max_model_len;
  int64_t params = 0;
  for (const gguf::TensorInfo& t : file.tensors()) {
    params += static_cast<int64_t>(t.n_elements);
  }
  mi.parameter_count = params;
  mi.vocab_size = tokenizer.n_tokens();
  mi.max_token_bytes = max_token_bytes;
  mi.created = static_cast<int64_t>(std::time(nullptr));
  mi.chat_template = tmpl.origin;
  mi.chat_template_source = tmpl.source;
  mi.chat_stop = tmpl.stop;
  return mi;
}

// The engine's static settings for /v1/effective-config.
server::EngineInfo MakeEngineInfo(const EngineConfig& config,
                                  const KvSetup& s) {
  server::EngineInfo ei;
  ei.isa_path = std::string(kernels::IsaName(kernels::ActiveIsa()));
  ei.threads = config.threads > 0
                   ? config.threads
                   : static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  ei.scheduler_kind = "continuous";
  ei.max_in_flight = s.sched.max_seqs;
  ei.prefill_chunk_size = s.sched.prefill_chunk;
  ei.token_budget = s.sched.max_batched_tokens;
  // max_queue: the server's own limit is the one clients meet (429).
  ei.kv_block_size = s.kv.block_size;
  ei.kv_bytes = static_cast<int64_t>(s.kv_bytes_used);
  ei.kv_type = config.kv_type;
  ei.prefix_caching = s.sched.enable_prefix_caching;
  ei.scheduling_policy =
      s.sched.policy == engine::SchedulingPolicy::kPriority ? "priority" : "fcfs";
  if (s.sched.target_itl_ms > 0) ei.target_itl_ms = s.sched.target_itl_ms;
  if (s.sched.target_itl_ratio > 0) ei.target_itl_ratio = s.sched.target_itl_ratio;
  switch (s.sched.spec_method) {
    case engine::SpecMethod::kOff: ei.spec_method = "off"; break;
    case engine::SpecMethod::kNgram: ei.spec_method = "ngram"; break;
    case engine::SpecMethod::kDraft: ei.spec_method = "draft"; break;
  }
  ei.spec_k_max = s.sched.spec_k_max;
  ei.spec_adaptive = s.sched.spec_adaptive;
  if (s.sched.spec_method == engine::SpecMethod::kDraft) {
    ei.draft_model = config.draft_model_path;
  }
  return ei;
}

void FillSummary(const model::Model& model, const KvSetup& s,
                 const std::string& chat_origin, EngineSummary* summary) {
  summary->model = model.config().Summary();
  summary->kv_blocks = s.kv.num_blocks;
  summary->kv_local_blocks = s.kv.local_num_blocks;
  summary->kv_bytes = s.kv_bytes_used;
  for (const gguf::TensorInfo& t : model.gguf().tensors()) {
    summary->weight_bytes += t.nbytes;
  }
  summary->kv_type = model::KvTypeName(s.kv_type);
  summary->max_model_len = s.sched.max_model_len;
  summary->chat_template = chat_origin;
}

}  // namespace

namespace {

// The model's load options: LongRoPE models pick their factors by the
// context a sequence may reach (the --max-model-len flag, when given).
model::LoadOptions LoadOptionsOf(const EngineConfig& config) {
  model::LoadOptions o;
  o.n_ctx_seq = config.scheduler.max_model_len;
  return o;
}

// The draft model's proposer for SpecMethod::kDraft: loads the model,
// checks that its vocabulary is the target's and gives it its own KV.
StatusOr<std::shared_ptr<DraftProposer>> BuildDraft(
    const EngineConfig& config, const KvSetup& s, const model::Model& target,
    const tokenizer::Tokenizer& target_tok, EngineSummary* summary) {
  const std::string& path = config.draft_model_path;
  if (path.empty()) {
    return InvalidArgumentError("speculation with a draft model needs one "
                                "(--draft-model FILE)");
  }
  auto fail = [&](const Status& st) {
    return Status(st.code(), "draft model " + path + ": " + st.message());
  };
  StatusOr<std::unique_ptr<model::Model>> loaded =
      model::Model::Load(path, LoadOptionsOf(config));
  if (!loaded.ok()) return fail(loaded.status());
  std::shared_ptr<const model::Model> draft = std::move(*loaded);
  StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok =
      tokenizer::Tokenizer::FromGguf(draft->gguf());
  if (!tok.ok()) return fail(tok.status());
  if (Status st = CheckSameVocabulary(target_tok.vocab(), (*tok)->vocab());
      !st.ok()) {
    return fail(st);
  }
  DraftProposerConfig dc;
  dc.num_blocks = config.draft_kv_blocks > 0 ? config.draft_kv_blocks
                                             : s.kv.num_blocks;
  dc.block_size = s.kv.block_size;
  dc.kv_type = s.kv_type;
  dc.num_threads = config.threads;
  dc.max_token_id = static_cast<int>(target.config().n_vocab);
  StatusOr<std::unique_ptr<DraftProposer>> p = DraftProposer::Create(draft, dc);
  if (!p.ok()) return fail(p.status());
  if (summary != nullptr) {
    summary->draft_model = draft->config().Summary();
    summary->draft_kv_blocks = dc.num_blocks;
    summary->draft_kv_bytes = (*p)->kv_bytes();
  }
  return std::shared_ptr<DraftProposer>(std::move(*p));
}

}  // namespace

StatusOr<std::unique_ptr<server::EngineBackend>> BuildBackend(
    const EngineConfig& config, EngineSummary* summary) {
  ASSIGN_OR_RETURN(std::unique_ptr<model::Model> loaded,
                   model::Model::Load(config.model_path, LoadOptionsOf(config)));
  std::shared_ptr<const model::Model> model = std::move(loaded);
  const model::ModelConfig& mc = model->config();
  ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> tok,
                   tokenizer::Tokenizer::FromGguf(model->gguf()));
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer = std::move(tok);
  if (Status st = tokenizer->CheckFitsModel(mc.n_vocab); !st.ok()) {
    return InvalidArgumentError(config.model_path + ": " + st.message());
  }
  ChatSetup chat = SetUpChat(config, model->gguf(), tokenizer->vocab());
  ASSIGN_OR_RETURN(KvSetup s, SizeKv(config, mc));

  engine::ModelExecutorConfig ec;
  ec.num_threads = config.threads;
  ec.kv_type = s.kv_type;
  int64_t max_token_bytes = 1;
  ec.vocab_bytes = VocabBytesOf(*tokenizer, mc.n_vocab, &max_token_bytes);
  ASSIGN_OR_RETURN(std::unique_ptr<engine::Executor> exec,
                   engine::CreateModelExecutor(model.get(), s.kv, ec));
  engine::EngineOptions eo;
  eo.trace_path = config.trace_path;
  int64_t draft_kv_blocks = 0;
  if (s.sched.spec_method == engine::SpecMethod::kDraft) {
    ASSIGN_OR_RETURN(std::shared_ptr<DraftProposer> draft,
                     BuildDraft(config, s, *model, *tokenizer, summary));
    draft_kv_blocks = draft->kv().pool().num_blocks();
    eo.proposer = std::move(draft);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> eng,
                   engine::Engine::Create(s.sched, s.kv, std::move(exec), eo));

  server::EngineBackendOptions opt;
  opt.model_info = MakeModelInfo(config, *model, *tokenizer, chat.choice,
                                 s.sched.max_model_len, max_token_bytes);
  opt.engine_info = MakeEngineInfo(config, s);
  if (draft_kv_blocks > 0) opt.engine_info.draft_kv_blocks = draft_kv_blocks;
  opt.hash_model_file = true;
  if (summary != nullptr) FillSummary(*model, s, chat.origin, summary);
  return server::EngineBackend::Create(std::move(tokenizer), std::move(eng),
                                       std::move(chat.renderer), std::move(opt),
                                       std::move(model));
}

}  // namespace weft::runtime
