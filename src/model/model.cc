#include "model/model.h"

#include "util/strings.h"

namespace weft::model {

StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path) {
  ASSIGN_OR_RETURN(auto file, gguf::GgufFile::Open(path));
  return FromGguf(std::move(file));
}

StatusOr<std::unique_ptr<Model>> Model::FromGguf(
    std::unique_ptr<gguf::GgufFile> file) {
  CHECK(file != nullptr);
  std::unique_ptr<Model> m(new Model());
  ASSIGN_OR_RETURN(m->config_, ModelConfigFromGguf(*file));
  ASSIGN_OR_RETURN(m->weights_, LoadWeights(*file, m->config_));
  m->file_ = std::move(file);
  return m;
}

Status Model::Validate(const Batch& b, const KvCache& cache) const {
  const size_t n = b.tokens.size();
  if (n == 0) return InvalidArgumentError("empty batch");
  if (b.positions.size() != n || b.seq_ids.size() != n || b.logits.size() != n) {
    return InvalidArgumentError("batch vectors have different lengths");
  }
  const int32_t seq = b.seq_ids[0];
  if (seq < 0 || seq >= cache.MaxSequences()) {
    return InvalidArgumentError(StrFormat("sequence id %d out of range [0, %d)",
                                          seq, cache.MaxSequences()));
  }
  const int32_t start = b.positions[0];
  if (start < 0 || start > cache.Length(seq)) {
    return InvalidArgumentError(StrFormat(
        "batch starts at position %d but sequence %d has %d cached positions",
        start, seq, cache.Length(seq)));
  }
  for (size_t i = 0; i < n; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= config_.n_vocab) {
      return InvalidArgumentError(StrFormat("token id %d out of range [0, %lld)",
                                            b.tokens[i],
                                            static_cast<long long>(config_.n_vocab)));
    }
    if (b.seq_ids[i] != seq) {
      return UnimplementedError("a batch with several sequences is not supported yet");
    }
    if (b.positions[i] != start + static_cast<int64_t>(i)) {
      return InvalidArgumentError(StrFormat(
          "batch positions must be consecutive: token %zu has position %d, want %lld",
          i, b.positions[i], static_cast<long long>(start + static_cast<int64_t>(i))));
    }
  }
  if (static_cast<int64_t>(start) + static_cast<int64_t>(n) > cache.Capacity()) {
    return ResourceExhaustedError(StrFormat(
        "positions up to %lld do not fit the KV cache of %d positions",
        static_cast<long long>(start + static_cast<int64_t>(n)), cache.Capacity()));
  }
  return OkStatus();
}

}  // namespace weft::model
