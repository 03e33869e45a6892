#include "model/model.h"

#include <limits>
#include <unordered_map>

#include "util/strings.h"

namespace weft::model {

StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path,
                                             const LoadOptions& options) {
  ASSIGN_OR_RETURN(auto file, gguf::GgufFile::Open(path));
  return FromGguf(std::move(file), options);
}

StatusOr<std::unique_ptr<Model>> Model::FromGguf(
    std::unique_ptr<gguf::GgufFile> file, const LoadOptions& options) {
  CHECK(file != nullptr);
  std::unique_ptr<Model> m(new Model());
  ASSIGN_OR_RETURN(m->config_, ModelConfigFromGguf(*file));
  const bool long_rope = options.n_ctx_seq > m->config_.rope_orig_ctx;
  ASSIGN_OR_RETURN(m->weights_, LoadWeights(*file, m->config_, long_rope));
  if (options.repack_x8) RepackWeightsX8(*file, &m->weights_);
  m->file_ = std::move(file);
  return m;
}

Status Model::Validate(const Batch& b, const KvStorage& cache,
                       std::vector<SeqSpan>* spans) const {
  spans->clear();
  const size_t n = b.tokens.size();
  if (n == 0) return InvalidArgumentError("empty batch");
  if (b.positions.size() != n || b.seq_ids.size() != n || b.logits.size() != n) {
    return InvalidArgumentError("batch vectors have different lengths");
  }
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgumentError("batch too large");
  }
  // Index into *spans of each sequence id seen so far.
  std::unordered_map<int32_t, size_t> index;
  for (size_t i = 0; i < n; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= config_.n_vocab) {
      return InvalidArgumentError(StrFormat("token id %d out of range [0, %lld)",
                                            b.tokens[i],
                                            static_cast<long long>(config_.n_vocab)));
    }
    const int32_t seq = b.seq_ids[i];
    if (seq < 0 || seq >= cache.MaxSequences()) {
      return InvalidArgumentError(StrFormat("sequence id %d out of range [0, %d)",
                                            seq, cache.MaxSequences()));
    }
    auto [it, inserted] = index.try_emplace(seq, spans->size());
    if (inserted) {
      const int32_t start = b.positions[i];
      if (start < 0 || start > cache.Length(seq)) {
        return InvalidArgumentError(StrFormat(
            "batch starts sequence %d at position %d but it has %d cached positions",
            seq, start, cache.Length(seq)));
      }
      spans->push_back({seq, start, 1});
      continue;
    }
    SeqSpan& span = (*spans)[it->second];
    const int64_t want = static_cast<int64_t>(span.start) + span.count;
    if (b.positions[i] != want) {
      return InvalidArgumentError(StrFormat(
          "batch positions of sequence %d must be consecutive: token %zu has "
          "position %d, want %lld", seq, i, b.positions[i],
          static_cast<long long>(want)));
    }
    ++span.count;
  }
  for (const SeqSpan& span : *spans) {
    const int64_t end = static_cast<int64_t>(span.start) + span.count;
    if (end > cache.Capacity()) {
      return ResourceExhaustedError(StrFormat(
          "positions up to %lld of sequence %d do not fit the KV cache of %d "
          "positions", static_cast<long long>(end), span.seq, cache.Capacity()));
    }
  }
  return OkStatus();
}

}  // namespace weft::model
