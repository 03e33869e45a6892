// CHECK(cond) << "context": aborts with file:line when an invariant is broken.
// For expected failures (bad input, missing files) return a Status instead.
#pragma once

#include <sstream>
#include <string>

namespace weft::internal {

// Collects the message of a failed CHECK and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return os_; }

 private:
  std::ostringstream os_;
};

// Lets `CHECK(x) << ...` compile to nothing when x holds.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace weft::internal

#define CHECK(cond)                                        \
  (cond) ? (void)0                                         \
         : ::weft::internal::Voidify() &                   \
               ::weft::internal::CheckFailure(__FILE__, __LINE__, #cond) \
                   .stream()

#define CHECK_OP_(a, op, b) CHECK((a)op(b)) << (a) << " vs " << (b) << " "
#define CHECK_EQ(a, b) CHECK_OP_(a, ==, b)
#define CHECK_NE(a, b) CHECK_OP_(a, !=, b)
#define CHECK_LT(a, b) CHECK_OP_(a, <, b)
#define CHECK_LE(a, b) CHECK_OP_(a, <=, b)
#define CHECK_GT(a, b) CHECK_OP_(a, >, b)
#define CHECK_GE(a, b) CHECK_OP_(a, >=, b)

#ifdef NDEBUG
#define DCHECK(cond) \
  while (false) CHECK(cond)
#else
#define DCHECK(cond) CHECK(cond)
#endif
