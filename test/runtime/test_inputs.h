//===- test_inputs.h - The checked-in artifacts of the runtime tests -*- C++ -*-===//
//
// Inputs/*.rnx (Inputs/README.md says how they are made), found through
// RN_TEST_INPUTS_DIR, which test/runtime/CMakeLists.txt defines.
//
//===----------------------------------------------------------------------===//

#ifndef RN_TEST_RUNTIME_TEST_INPUTS_H
#define RN_TEST_RUNTIME_TEST_INPUTS_H

#include "runtime/artifact.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace rn::test_inputs {

/// The path of Inputs/`name`.
inline std::string inputPath(const char *name) {
  return std::string(RN_TEST_INPUTS_DIR) + "/" + name;
}

/// Loads Inputs/`name`; a failure is a test failure (and an empty artifact).
inline Artifact load(const char *name) {
  Result<Artifact> a = loadArtifact(inputPath(name));
  if (!a.ok())
    ADD_FAILURE() << a.error().message();
  return a.ok() ? std::move(a).value() : Artifact{};
}

} // namespace rn::test_inputs

#endif // RN_TEST_RUNTIME_TEST_INPUTS_H
