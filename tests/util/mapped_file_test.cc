#include "util/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>

namespace weft {
namespace {

std::string TempPath(const char* name) {
  return ::testing::TempDir() + "/" + name + std::to_string(::getpid());
}

TEST(MappedFileTest, MapsARegularFile) {
  const std::string path = TempPath("mapped_file_test_regular");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("GGUF", f);
  std::fclose(f);
  StatusOr<std::unique_ptr<MappedFile>> m = MappedFile::Open(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(
      std::string(reinterpret_cast<const char*>((*m)->data()), (*m)->size()),
      "GGUF");
  std::remove(path.c_str());
}

TEST(MappedFileTest, RefusesAFifoWithoutWaitingForAWriter) {
  const std::string path = TempPath("mapped_file_test_fifo");
  std::remove(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  // A blocking open() would wait for a writer forever: run it aside and
  // give it seconds (the thread is left behind if it hangs).
  auto result = std::make_shared<std::promise<StatusCode>>();
  std::future<StatusCode> done = result->get_future();
  std::thread([path, result] {
    result->set_value(MappedFile::Open(path).status().code());
  }).detach();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "open() of a FIFO blocked";
  EXPECT_EQ(done.get(), StatusCode::kInvalidArgument);
  std::remove(path.c_str());
}

TEST(MappedFileTest, RefusesADirectory) {
  EXPECT_EQ(MappedFile::Open(::testing::TempDir()).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft
