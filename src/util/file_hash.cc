#include "util/file_hash.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "util/strings.h"

namespace weft {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
struct DigestFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

StatusOr<std::string> Sha256File(const std::string& path,
                                 const std::atomic<bool>* cancel) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) {
    return NotFoundError(
        StrFormat("cannot open %s: %s", path.c_str(), std::strerror(errno)));
  }
  std::unique_ptr<EVP_MD_CTX, DigestFree> ctx(EVP_MD_CTX_new());
  if (ctx == nullptr ||
      EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return InternalError("sha256: cannot start a digest");
  }
  std::vector<unsigned char> buf(size_t{1} << 20);
  for (;;) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      return AbortedError(StrFormat("sha256 of %s: cancelled", path.c_str()));
    }
    const size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n > 0 && EVP_DigestUpdate(ctx.get(), buf.data(), n) != 1) {
      return InternalError("sha256: digest update failed");
    }
    if (n < buf.size()) {
      if (std::ferror(f.get())) {
        return DataLossError(StrFormat("read error in %s", path.c_str()));
      }
      break;  // end of file
    }
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) {
    return InternalError("sha256: digest final failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[md[i] >> 4]);
    hex.push_back(kHex[md[i] & 15]);
  }
  return hex;
}

}  // namespace weft
