//===- ArtifactWriter.h - A scheduled module as a training artifact -*- C++ -*-===//
//
// The compiler's backend: turns a module that rn-training-pipeline has
// scheduled into the artifact described in docs/artifact.md (a safetensors
// file with the initial parameters whose metadata holds the program: memory
// plan, tensors, subgraphs with their nodes and events, step schedules, as
// JSON). The parameters come from the runtime's sampler
// (runtime/core/init_sampler.h), so that a weight-free artifact gets the same
// values from the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef RN_COMPILER_ARTIFACTWRITER_H
#define RN_COMPILER_ARTIFACTWRITER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace mlir::rn {

struct ArtifactOptions {
  /// Seed of the parameter initialization.
  uint64_t seed = 0;
  /// false: the program alone, with an "init" entry from which the runtime
  /// samples the parameters.
  bool weights = true;
};

struct ArtifactSummary {
  uint64_t parameterBytes = 0;
  uint64_t programBytes = 0;
};

/// Writes `scheduled` to `path` (atomically: a temporary file renamed over
/// it). Errors are emitted on the module's ops (diagnostics) or, for the
/// file itself, returned in `error`.
FailureOr<ArtifactSummary> writeArtifact(ModuleOp scheduled, StringRef path,
                                         const ArtifactOptions &options,
                                         std::string &error);

} // namespace mlir::rn

#endif // RN_COMPILER_ARTIFACTWRITER_H
