#include "util/status.h"

#include <gtest/gtest.h>

#include "util/strings.h"

namespace weft {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError(StrFormat("%d is odd", x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(*out, Half(h));
  return OkStatus();
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(OkStatus().ok());
  Status s = NotFoundError("no such key");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: no such key");
}

TEST(StatusTest, StatusOrPropagates) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "3 is odd");
}

TEST(StatusTest, ValueOnErrorDies) {
  StatusOr<int> r = Half(3);
  EXPECT_DEATH((void)r.value(), "3 is odd");
}

TEST(StringsTest, Helpers) {
  EXPECT_EQ(StrFormat("%s-%d", "a", 7), "a-7");
  auto parts = StrSplit("a,,b", ',');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(CEscape("a\x01"), "a\\x01");
  EXPECT_EQ(Utf8Chars("Caf\xc3\xa9 "), 5u);
  EXPECT_EQ(Utf8Chars("\xe6"), 1u);      // a character's first byte
  EXPECT_EQ(Utf8Chars("\x97\xa5"), 0u);  // and the rest of it
}

}  // namespace
}  // namespace weft
