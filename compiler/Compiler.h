//===- Compiler.h - RN's compiler as a library ------------------*- C++ -*-===//
//
// The one interface of librn_compiler.so, which holds the rn dialect, its
// passes, rn-training-pipeline and the artifact writer with LLVM and MLIR
// linked in statically (cmake/RnStaticLLVM.cmake). Its users are the thin
// tools (tools/rn-compile, tools/rn-opt: a main over compileToolMain and
// optToolMain) and the Python extension rn._compiler, which rn.compile
// calls in-process. No MLIR type appears here: the library's users need
// neither MLIR's headers nor its build flags (MLIR is built without RTTI
// and exceptions; the Python binding has both).
//
//===----------------------------------------------------------------------===//

#ifndef RN_COMPILER_COMPILER_H
#define RN_COMPILER_COMPILER_H

#include <cstdint>
#include <functional>
#include <string>

#define RN_COMPILER_API __attribute__((visibility("default")))

namespace rn::compiler {

struct CompileOptions {
  /// Options of rn-training-pipeline, e.g. "precision=f16 optimizer=adamw".
  std::string pipeline;
  /// Seed of the parameter initialization.
  uint64_t seed = 0;
  /// false: the program alone; the runtime samples the parameters.
  bool weights = true;
  /// Where to also write the scheduled module (MLIR text); empty: nowhere.
  std::string stepOutput;
  /// Receives progress lines ("parsing ...", "wrote ..."); null: quiet.
  std::function<void(const std::string &)> progress;
};

struct CompileResult {
  bool ok = false;
  /// The compiler's diagnostics, each "file:line:col: error: ..." with its
  /// source line, as rn-compile prints them.
  std::string diagnostics;
  /// The driver's own error, one line without a prefix (the input is
  /// missing or not a model, the pipeline options are wrong, the artifact
  /// cannot be written); empty when the diagnostics say it all.
  std::string error;
};

/// Compiles the model in the MLIR file `inputPath` into the artifact
/// `outputPath`. Diagnostics name `inputPath`.
RN_COMPILER_API CompileResult compileFile(const std::string &inputPath,
                                          const std::string &outputPath,
                                          const CompileOptions &options);

/// Compiles MLIR text; diagnostics name the buffer `sourceName`.
RN_COMPILER_API CompileResult compileSource(const std::string &source,
                                            const std::string &sourceName,
                                            const std::string &outputPath,
                                            const CompileOptions &options);

/// rn-compile --pipeline-help's text: every pipeline option with its default.
RN_COMPILER_API std::string pipelineHelp();
/// rn-compile --list-pipeline-options's JSON.
RN_COMPILER_API std::string pipelineOptionsJson();

/// RN's version (python-frontend/rn/_version.py, the one place it is set).
RN_COMPILER_API const char *version();

/// The rn-compile and rn-opt command lines (their whole main).
RN_COMPILER_API int compileToolMain(int argc, char **argv);
RN_COMPILER_API int optToolMain(int argc, char **argv);

} // namespace rn::compiler

#endif // RN_COMPILER_COMPILER_H
