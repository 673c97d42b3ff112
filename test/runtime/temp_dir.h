//===- temp_dir.h - A fresh folder per test -----------------------*- C++ -*-===//

#ifndef RN_TEST_RUNTIME_TEMP_DIR_H
#define RN_TEST_RUNTIME_TEMP_DIR_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace rn::test {

/// A test fixture with a new folder under the system's temporary one,
/// removed with everything in it after the test.
class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rn-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  /// Writes `bytes` to `name` in the folder (making its parent folders)
  /// and returns the path.
  std::string write(const std::string &name, const std::string &bytes) {
    std::filesystem::path path = std::filesystem::path(dir) / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }

  std::string dir;
};

} // namespace rn::test

#endif // RN_TEST_RUNTIME_TEMP_DIR_H
