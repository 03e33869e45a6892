#include "server/model_backend.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chat/template.h"
#include "engine/model_executor.h"
#include "kernels/isa.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "sampling/json_constraint.h"
#include "tensor/types.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::server {
namespace {

// The quantization of a model: general.file_type's name, else the type
// holding most bytes of 2-D weights.
std::string Quantization(const gguf::GgufFile& f) {
  if (f.Has("general.file_type")) {
    StatusOr<uint32_t> ft = f.GetUint32("general.file_type");
    if (ft.ok()) {
      std::string name = FileTypeName(*ft);
      if (!name.empty()) return name;
    }
  }
  std::map<std::string, uint64_t> bytes;
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.dims.size() >= 2) bytes[std::string(TypeName(t.type))] += t.nbytes;
  }
  std::string best;
  uint64_t most = 0;
  for (const auto& [name, b] : bytes) {
    if (b > most) {
      most = b;
      best = name;
    }
  }
  return best;
}

std::string TokenText(const tokenizer::Vocab& v, tokenizer::TokenId id) {
  return v.Valid(id) ? v.tokens[static_cast<size_t>(id)] : std::string();
}

}  // namespace

std::string FileTypeName(uint32_t file_type) {
  switch (file_type) {
    case 0: return "F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K";
    case 11: return "Q3_K_S";
    case 12: return "Q3_K_M";
    case 13: return "Q3_K_L";
    case 14: return "Q4_K_S";
    case 15: return "Q4_K_M";
    case 16: return "Q5_K_S";
    case 17: return "Q5_K_M";
    case 18: return "Q6_K";
    case 25: return "IQ4_NL";
    case 30: return "IQ4_XS";
    case 32: return "BF16";
    default: return "";
  }
}

StatusOr<std::unique_ptr<EngineBackend>> LoadEngineBackend(
    const ModelBackendConfig& config, ModelBackendSummary* summary) {
  ASSIGN_OR_RETURN(std::unique_ptr<model::Model> loaded,
                   model::Model::Load(config.model_path));
  std::shared_ptr<const model::Model> model = std::move(loaded);
  const model::ModelConfig& mc = model->config();
  const gguf::GgufFile& file = model->gguf();
  ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> tok,
                   tokenizer::Tokenizer::FromGguf(file));
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer = std::move(tok);
  if (Status st = tokenizer->CheckFitsModel(mc.n_vocab); !st.ok()) {
    return InvalidArgumentError(config.model_path + ": " + st.message());
  }

  // Chat template: the override, the GGUF's, or a built-in one the
  // vocabulary supports.
  const tokenizer::Vocab& vocab = tokenizer->vocab();
  ChatTemplateChoice tmpl = ChooseChatTemplate(
      file, vocab, config.chat_template, config.chat_template_path);
  std::string origin = tmpl.origin;
  if (tmpl.origin.starts_with("builtin:")) {
    LOG(INFO) << config.model_path << " has no chat template; chat uses the "
              << tmpl.origin << " template its vocabulary supports";
  }
  ChatRenderer chat = ChatRenderer::Create(
      tmpl.source, TokenText(vocab, vocab.bos), TokenText(vocab, vocab.eos));
  if (!chat.parse_status().ok()) {
    LOG(ERROR) << "the " << origin << " chat template does not parse ("
               << chat.parse_status().message()
               << "); /v1/chat/completions will fail";
    origin += " (unusable: " + chat.parse_status().message() + ")";
  }

  engine::SchedulerConfig sched = config.scheduler;
  if (sched.max_model_len <= 0) {
    sched.max_model_len = static_cast<int>(
        mc.n_ctx_train > 0 ? std::min<int64_t>(mc.n_ctx_train, 4096) : 4096);
  }
  RETURN_IF_ERROR(sched.Validate());
  ASSIGN_OR_RETURN(model::KvType kv_type, model::ParseKvType(config.kv_type));
  uint64_t kv_bytes_used = 0;
  ASSIGN_OR_RETURN(kv::KvCacheConfig kv,
                   engine::KvConfigForBytes(mc, config.kv_block_size, kv_type,
                                            config.kv_bytes, sched,
                                            config.kv_split_groups,
                                            &kv_bytes_used));
  const int64_t blocks = kv.num_blocks;
  // One sequence must fit in the cache alone, or a request the context
  // allows would fail after doing its work (vLLM refuses to start then).
  const int kv_tokens =
      kv::KvCacheManager::MaxSequenceTokens(kv, sched.ChunkCap());
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

  engine::ModelExecutorConfig ec;
  ec.num_threads = config.threads;
  ec.kv_type = kv_type;
  // The text bytes of the longest token, special tokens' text included
  // (what a prompt's bytes divide by for a lower bound on its tokens).
  int64_t max_token_bytes = 1;
  {
    // JSON mode's view of the tokens: what each one decodes to (control
    // tokens and rows past the tokenizer's vocabulary: nothing). The
    // tokenizer has at most n_vocab tokens (checked above).
    std::vector<std::string> pieces(static_cast<size_t>(mc.n_vocab));
    for (int32_t id = 0; id < tokenizer->n_tokens(); ++id) {
      pieces[static_cast<size_t>(id)] =
          std::string(tokenizer->TokenToPiece(id));
      max_token_bytes = std::max<int64_t>(
          max_token_bytes, tokenizer->TokenToPiece(id, true).size());
    }
    ec.vocab_bytes =
        std::make_shared<const sampling::VocabBytes>(std::move(pieces));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<engine::Executor> exec,
                   engine::CreateModelExecutor(model.get(), kv, ec));
  engine::EngineOptions eo;
  eo.trace_path = config.trace_path;
  ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> eng,
                   engine::Engine::Create(sched, kv, std::move(exec), eo));

  EngineBackendOptions opt;
  ModelInfo& mi = opt.model_info;
  mi.id = config.model_id.empty()
              ? std::filesystem::path(config.model_path).stem().string()
              : config.model_id;
  mi.path = config.model_path;
  mi.size_bytes = file.file_size();
  mi.architecture = mc.arch_name;
  mi.quantization = Quantization(file);
  mi.context_length = sched.max_model_len;
  int64_t params = 0;
  for (const gguf::TensorInfo& t : file.tensors()) {
    params += static_cast<int64_t>(t.n_elements);
  }
  mi.parameter_count = params;
  mi.vocab_size = tokenizer->n_tokens();
  mi.max_token_bytes = max_token_bytes;
  mi.created = static_cast<int64_t>(std::time(nullptr));
  mi.chat_template = tmpl.origin;
  mi.chat_stop = tmpl.stop;
  EngineInfo& ei = opt.engine_info;
  ei.isa_path = std::string(kernels::IsaName(kernels::ActiveIsa()));
  ei.threads = config.threads > 0
                   ? config.threads
                   : static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  ei.scheduler_kind = "continuous";
  ei.max_in_flight = sched.max_seqs;
  ei.prefill_chunk_size = sched.prefill_chunk;
  ei.token_budget = sched.max_batched_tokens;
  // max_queue: the server's own limit is the one clients meet (429).
  ei.kv_block_size = kv.block_size;
  ei.kv_bytes = static_cast<int64_t>(kv_bytes_used);
  opt.hash_model_file = true;

  if (summary != nullptr) {
    summary->model = mc.Summary();
    summary->kv_blocks = blocks;
    summary->kv_local_blocks = kv.local_num_blocks;
    summary->kv_bytes = kv_bytes_used;
    for (const gguf::TensorInfo& t : file.tensors()) {
      summary->weight_bytes += t.nbytes;
    }
    summary->kv_type = model::KvTypeName(kv_type);
    summary->max_model_len = sched.max_model_len;
    summary->chat_template = origin;
  }
  return EngineBackend::Create(std::move(tokenizer), std::move(eng),
                               std::move(chat), std::move(opt),
                               std::move(model));
}

}  // namespace weft::server
