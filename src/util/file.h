// Small whole-file reads (templates, JSON results, workload files); model
// weights are mapped instead (util/mapped_file.h).
#pragma once

#include <cstdint>
#include <string>

#include "util/status.h"

namespace weft {

// The file's bytes; NotFound ("cannot open PATH") when it cannot be opened.
StatusOr<std::string> ReadFileToString(const std::string& path);

// The bytes of a "KEY: N kB" line of a /proc file (MemAvailable in
// /proc/meminfo, VmRSS in /proc/self/status); 0 when absent.
uint64_t ReadProcKb(const std::string& path, const std::string& key);

}  // namespace weft
