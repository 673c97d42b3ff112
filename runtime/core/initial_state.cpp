//===- initial_state.cpp - Initial values of the training state -----------===//
//
// initialStateValues and forEachInitialState (declared in artifact.h): what
// every executor writes into the state at initialize, computed once here.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"

#include "runtime/core/init_sampler.h"

#include <cstring>
#include <unordered_map>

namespace rn {

namespace {

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  return n;
}

Result<std::vector<float>> ownValues(const Artifact &artifact, const StateEntry &entry) {
  const Program &program = artifact.program;
  int64_t n = elementCount(entry.shape);
  if (const SafetensorsEntry *tensor = artifact.tensors.find(entry.name)) {
    std::string_view bytes = artifact.tensors.bytesOf(*tensor);
    if (elementCount(tensor->shape) != n ||
        bytes.size() < size_t(n) * elementSize(tensor->dtype))
      return Error("the artifact's tensor has the wrong size");
    std::vector<float> values(static_cast<size_t>(n));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = loadElement(tensor->dtype, bytes.data(), i);
    return values;
  }
  bool random = entry.init.kind == "uniform" || entry.init.kind == "normal";
  if (program.sampling || (!random && isSampledInit(entry.init.kind)))
    return sampleInitialValues(entry.name, entry.init, entry.dtype, n,
                               program.sampling ? program.sampling->seed : 0);
  return Error("init '" + entry.init.kind +
               "' needs a tensor in the artifact, which has none");
}

Result<std::vector<float>> derivedValues(const StateEntry &entry,
                                         const std::vector<float> &source) {
  if (source.size() != size_t(elementCount(entry.shape)))
    return Error("derived from mismatched state '" + entry.of + "'");
  std::vector<float> values(source.size());
  for (size_t i = 0; i < source.size(); ++i)
    values[i] = roundTo(entry.dtype, source[i]);
  return values;
}

} // namespace

Result<std::vector<float>> initialStateValues(const Artifact &artifact,
                                              const StateEntry &entry) {
  std::string where = "state " + entry.name;
  if (entry.init.kind != "derived") {
    Result<std::vector<float>> values = ownValues(artifact, entry);
    if (!values)
      return values.error().withContext(where);
    return values;
  }
  const StateEntry *of = artifact.program.findState(entry.of);
  if (!of || of->init.kind == "derived")
    return Error(where + ": derived from missing state '" + entry.of + "'");
  Result<std::vector<float>> source = ownValues(artifact, *of);
  if (!source)
    return source.error().withContext("state " + of->name);
  Result<std::vector<float>> values = derivedValues(entry, *source);
  if (!values)
    return values.error().withContext(where);
  return values;
}

Status forEachInitialState(
    const Artifact &artifact,
    const std::function<Status(const StateEntry &, const std::vector<float> &)> &visit) {
  const Program &program = artifact.program;
  // How many derived entries still need each source's values.
  std::unordered_map<std::string, int> users;
  for (const StateEntry &entry : program.state)
    if (entry.slot && entry.init.kind == "derived")
      ++users[entry.of];
  std::unordered_map<std::string, std::vector<float>> kept;
  for (const StateEntry &entry : program.state) {
    if (!entry.slot || entry.init.kind == "derived")
      continue;
    Result<std::vector<float>> values = initialStateValues(artifact, entry);
    if (!values)
      return values.error();
    if (Status st = visit(entry, *values); !st.ok())
      return st;
    if (users.count(entry.name))
      kept.emplace(entry.name, std::move(*values));
  }
  for (const StateEntry &entry : program.state) {
    if (!entry.slot || entry.init.kind != "derived")
      continue;
    auto found = kept.find(entry.of);
    Result<std::vector<float>> values =
        found == kept.end() ? initialStateValues(artifact, entry)
                            : derivedValues(entry, found->second);
    if (!values)
      return found == kept.end() ? values.error()
                                 : values.error().withContext("state " + entry.name);
    if (Status st = visit(entry, *values); !st.ok())
      return st;
    if (found != kept.end() && --users[entry.of] == 0)
      kept.erase(found);
  }
  return Status::success();
}

} // namespace rn
