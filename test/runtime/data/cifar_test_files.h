//===- cifar_test_files.h - CIFAR binary files written by tests -*- C++ -*-===//

#ifndef RN_TEST_RUNTIME_DATA_CIFAR_TEST_FILES_H
#define RN_TEST_RUNTIME_DATA_CIFAR_TEST_FILES_H

#include <string>
#include <vector>

namespace rn::test {

/// `count` records of the CIFAR layout, numbered from `firstRecord`: record
/// r has label bytes (l + r) % 256 for each l of `labelBytes` (one for
/// CIFAR-10, coarse and fine for CIFAR-100), and pixel i of plane c equal to
/// (r + c * 7 + i) % 256.
inline std::string cifarRecords(int count, const std::vector<int> &labelBytes,
                                int firstRecord = 0) {
  std::string s;
  for (int r = firstRecord; r < firstRecord + count; ++r) {
    for (int l : labelBytes)
      s.push_back(char((l + r) % 256));
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 1024; ++i)
        s.push_back(char((r + c * 7 + i) % 256));
  }
  return s;
}

} // namespace rn::test

#endif // RN_TEST_RUNTIME_DATA_CIFAR_TEST_FILES_H
