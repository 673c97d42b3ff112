//===- rn_compiler.cpp - The compiler as the Python module rn._compiler ---===//
//
// rn.compile's engine (python-frontend/rn/compiler.py): compiler/Compiler.h
// bound with nanobind. The compiler runs in the calling process, on a
// thread that has released the GIL; its diagnostics come back as text,
// which the Python half raises as rn.CompileError.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

namespace nb = nanobind;

namespace {

rn::compiler::CompileOptions optionsFrom(const std::string &pipeline, uint64_t seed,
                                         bool weights, const std::string &stepOutput) {
  rn::compiler::CompileOptions options;
  options.pipeline = pipeline;
  options.seed = seed;
  options.weights = weights;
  options.stepOutput = stepOutput;
  return options;
}

} // namespace

NB_MODULE(_compiler, m) {
  m.doc() = "RN's compiler in-process (librn_compiler.so: LLVM/MLIR linked in)";
  m.def("version", &rn::compiler::version, "RN's version, as the compiler library has it.");
  m.def(
      "compile_file",
      [](const std::string &input, const std::string &output, const std::string &pipeline,
         uint64_t seed, bool weights, const std::string &stepOutput) {
        rn::compiler::CompileResult result;
        {
          nb::gil_scoped_release released;
          result = rn::compiler::compileFile(input, output,
                                             optionsFrom(pipeline, seed, weights, stepOutput));
        }
        return std::make_tuple(result.ok, result.diagnostics, result.error);
      },
      nb::arg("input"), nb::arg("output"), nb::arg("pipeline") = "", nb::arg("seed") = 0,
      nb::arg("weights") = true, nb::arg("step_output") = "",
      "Compiles the MLIR file `input` into the artifact `output`: (ok, diagnostics, error).");
  m.def(
      "compile_source",
      [](const std::string &source, const std::string &name, const std::string &output,
         const std::string &pipeline, uint64_t seed, bool weights,
         const std::string &stepOutput) {
        rn::compiler::CompileResult result;
        {
          nb::gil_scoped_release released;
          result = rn::compiler::compileSource(source, name, output,
                                               optionsFrom(pipeline, seed, weights, stepOutput));
        }
        return std::make_tuple(result.ok, result.diagnostics, result.error);
      },
      nb::arg("source"), nb::arg("name"), nb::arg("output"), nb::arg("pipeline") = "",
      nb::arg("seed") = 0, nb::arg("weights") = true, nb::arg("step_output") = "",
      "Compiles MLIR text (named `name` in diagnostics): (ok, diagnostics, error).");
  m.def("pipeline_options_json", &rn::compiler::pipelineOptionsJson,
        "Every rn-training-pipeline option as JSON (rn-compile --list-pipeline-options).");
}
