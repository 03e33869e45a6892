// SHA-256 of a file's bytes, for reporting which model file a server runs
// (the benchmark guide's report headers, /v1/effective-config).
//
// Thread-safe: no shared state.
#pragma once

#include <atomic>
#include <string>

#include "util/status.h"

namespace weft {

// The lowercase hex SHA-256 of the file at `path`, read in 1 MiB chunks.
// NotFound if it cannot be opened, DataLoss if a read fails, Aborted when
// `cancel` (optional, polled between chunks) becomes true.
StatusOr<std::string> Sha256File(const std::string& path,
                                 const std::atomic<bool>* cancel = nullptr);

}  // namespace weft
