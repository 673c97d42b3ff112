//===- artifact_fuzzer.cpp - libFuzzer target for the artifact loader -----===//
//
// Input starting with '{' is a program JSON (parseProgram), which lets the
// fuzzer mutate the program directly instead of through the safetensors
// length and the string escaping of "rn.program"; anything else is a whole
// artifact (parseArtifact). Both must return an Error, never crash, hang or
// read out of bounds. Build and run: docs/artifact.md, "Fuzzing".
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  if (!input.empty() && input.front() == '{') {
    rn::Result<rn::Program> program = rn::parseProgram(input);
    (void)program.ok();
  } else {
    rn::Result<rn::Artifact> artifact = rn::parseArtifact(input);
    // A loaded artifact must be internally consistent: touch what an
    // executor would trust without checking.
    if (artifact.ok())
      for (const rn::Function &function : artifact->program.functions)
        for (const rn::Subgraph &subgraph : function.subgraphs)
          for (const rn::Node &node : subgraph.nodes)
            for (uint32_t id : node.operands)
              (void)function.tensors.at(id);
  }
  return 0;
}
