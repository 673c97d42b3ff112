//===- executor_test_util.h - Artifacts and executors for tests -*- C++ -*-===//
//
// The checked-in artifacts Inputs/*.rnx (Inputs/README.md says how they are
// made), found through RN_TEST_INPUTS_DIR, which test/runtime/CMakeLists.txt
// defines (the environment variable of that name overrides it: the test
// binaries run from another checkout on the GPU machine), and initialized CPU
// executors for them.
//
//===----------------------------------------------------------------------===//

#ifndef RN_TEST_RUNTIME_EXECUTOR_TEST_UTIL_H
#define RN_TEST_RUNTIME_EXECUTOR_TEST_UTIL_H

#include "runtime/core/artifact.h"
#include "runtime/cpu/cpu_executor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

namespace rn::test_inputs {

/// The path of Inputs/`name`.
inline std::string inputPath(const char *name) {
  const char *dir = std::getenv("RN_TEST_INPUTS_DIR");
  return std::string(dir && *dir ? dir : RN_TEST_INPUTS_DIR) + "/" + name;
}

/// Loads Inputs/`name`; a failure is a test failure (and an empty artifact).
inline Artifact load(const char *name) {
  Result<Artifact> a = loadArtifact(inputPath(name));
  if (!a.ok())
    ADD_FAILURE() << a.error().message();
  return a.ok() ? std::move(a).value() : Artifact{};
}

/// An executor for `artifact` with its state initialized; null (and a test
/// failure) when either fails.
inline std::unique_ptr<CpuExecutor> makeExecutor(const Artifact &artifact,
                                                 CpuExecutor::Options options = {}) {
  auto ex = CpuExecutor::create(artifact, options);
  if (!ex.ok()) {
    ADD_FAILURE() << ex.error().message();
    return nullptr;
  }
  Status s = (*ex)->initialize();
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
  return std::move(ex).value();
}

} // namespace rn::test_inputs

#endif // RN_TEST_RUNTIME_EXECUTOR_TEST_UTIL_H
