//===- artifact_test_util.h - The loader tests' valid artifact --*- C++ -*-===//
//
// A tiny valid artifact (an MLP-like train_step: host transfer, zero-grad,
// linear forward and backward, SGD with momentum) built as JSON plus raw
// safetensors bytes, and the helpers that load a broken copy and return
// the loader's message. The loader tests (artifact_test.cpp,
// artifact_program_test.cpp) each break one thing and check that the
// message names it and its place.
//
//===----------------------------------------------------------------------===//

#ifndef RN_TEST_RUNTIME_CORE_ARTIFACT_TEST_UTIL_H
#define RN_TEST_RUNTIME_CORE_ARTIFACT_TEST_UTIL_H

#include "runtime/core/artifact.h"
#include "runtime/core/op_table.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

namespace rn::test {

using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// The valid artifact
//===----------------------------------------------------------------------===//

inline json slot(const char *region, uint64_t offset, uint64_t bytes) {
  return {{"region", region}, {"offset", offset}, {"bytes", bytes}};
}

inline json deviceTensor(int id, const char *dtype, json shape, json where) {
  return {{"id", id}, {"dtype", dtype}, {"shape", std::move(shape)},
          {"slot", std::move(where)}};
}

inline json hostTensor(int id, const char *dtype, json shape, const char *input) {
  return {{"id", id}, {"dtype", dtype}, {"shape", std::move(shape)},
          {"host_input", input}};
}

/// An op node; `operands` and `results` name their tensors by the op's ODS
/// names ({{"input", 3}, {"weight", 6}}, a list's ids an array).
inline json op(const char *name, const char *stream, json operands, json results,
        json attributes = json::object()) {
  return {{"kind", "op"},         {"op", name},
          {"stream", stream},     {"operands", std::move(operands)},
          {"results", std::move(results)}, {"attributes", std::move(attributes)}};
}

inline json record(int event, const char *stream) {
  return {{"kind", "event_record"}, {"event", event},
          {"event_kind", "external"}, {"stream", stream}};
}

inline json wait(int event, const char *stream) {
  return {{"kind", "event_wait"}, {"event", event}, {"event_kind", "external"},
          {"stream", stream}, {"distance", 0}};
}

inline json stateEntry(const char *name, const char *role, json shape, json where,
                const char *init, const char *of = nullptr) {
  json entry = {{"name", name},   {"role", role},
                {"dtype", "f32"}, {"shape", std::move(shape)},
                {"slot", std::move(where)}, {"init", {{"kind", init}, {"scale", 0.5}}}};
  if (of)
    entry["of"] = of;
  return entry;
}

/// fc: [2, 8] -> [2, 4] with bias, softmax cross-entropy, SGD momentum 0.9.
inline json validProgram() {
  json tensors = json::array({
      hostTensor(0, "f32", {2, 8}, "images"),
      hostTensor(1, "i32", {2}, "labels"),
      hostTensor(2, "f32", json::array(), "lr"),
      deviceTensor(3, "f32", {2, 8}, slot("inputs_a", 0, 64)),
      deviceTensor(4, "i32", {2}, slot("inputs_a", 256, 8)),
      deviceTensor(5, "f32", json::array(), slot("inputs_a", 512, 4)),
      deviceTensor(6, "f32", {4, 8}, slot("weights", 0, 128)),
      deviceTensor(7, "f32", {4}, slot("weights", 256, 16)),
      deviceTensor(8, "f32", {4, 8}, slot("gradients", 0, 128)),
      deviceTensor(9, "f32", {4}, slot("gradients", 256, 16)),
      deviceTensor(10, "f32", {4, 8}, slot("optimizer_state", 0, 128)),
      deviceTensor(11, "f32", {4}, slot("optimizer_state", 256, 16)),
      deviceTensor(12, "f32", {4, 8}, slot("gradients", 0, 128)),
      deviceTensor(13, "f32", {4}, slot("gradients", 256, 16)),
      deviceTensor(14, "f32", {2, 4}, slot("activations", 0, 32)),
      deviceTensor(15, "f32", json::array(), slot("scalars", 0, 4)),
      deviceTensor(16, "f32", {2, 4}, slot("activations", 256, 32)),
      deviceTensor(17, "f32", {4, 8}, slot("gradients", 0, 128)),
      deviceTensor(18, "f32", {4}, slot("gradients", 256, 16)),
      deviceTensor(19, "f32", {4, 8}, slot("weights", 0, 128)),
      deviceTensor(20, "f32", {4, 8}, slot("optimizer_state", 0, 128)),
      deviceTensor(21, "f32", {4}, slot("weights", 256, 16)),
      deviceTensor(22, "f32", {4}, slot("optimizer_state", 256, 16)),
  });
  json sgd = {{"momentum", 0.9}, {"weight_decay", 5e-4}, {"nesterov", false}};
  json linearBackward = op("linear_backward", "comp1",
                           {{"output_grad", 16},
                            {"input", 3},
                            {"weight", 6},
                            {"weight_grad_acc", 12},
                            {"bias_grad_acc", 13}},
                           {{"weight_grad", 17}, {"bias_grad", 18}});
  linearBackward["parts"] = {{{"role", "weight_grad"}, {"stream", "comp1"}},
                             {{"role", "bias_grad"}, {"stream", "comp2"}}};
  linearBackward["part_waits"] = json::array();
  json subgraphs = json::array({
      {{"name", "TRANSFER"}, {"primary", "trans"}, {"double_buffered", true},
       {"nodes", {op("host_to_device", "trans", {{"input", 0}}, {{"result", 3}}),
                  op("host_to_device", "trans", {{"input", 1}}, {{"result", 4}}),
                  op("host_to_device", "trans", {{"input", 2}}, {{"result", 5}}),
                  record(0, "trans")}}},
      {{"name", "ZERO_GRAD"}, {"primary", "update"}, {"double_buffered", false},
       {"nodes", {op("zero", "update", {{"input", 8}}, {{"result", 12}}),
                  op("zero", "update", {{"input", 9}}, {{"result", 13}}), record(1, "update")}}},
      {{"name", "FWD_BWD"}, {"primary", "comp1"}, {"double_buffered", true},
       {"nodes",
        {wait(0, "comp1"), wait(1, "comp1"),
         op("linear", "comp1", {{"input", 3}, {"weight", 6}, {"bias", 7}}, {{"result", 14}}),
         op("softmax_cross_entropy", "comp1", {{"logits", 14}, {"labels", 4}}, {{"loss", 15}},
            {{"label_smoothing", 0.0}}),
         op("softmax_cross_entropy_backward", "comp1", {{"logits", 14}, {"labels", 4}},
            {{"logits_grad", 16}}, {{"label_smoothing", 0.0}}),
         linearBackward, record(2, "comp1")}}},
      {{"name", "OPTIMIZER"}, {"primary", "update"}, {"double_buffered", true},
       {"nodes", {wait(2, "update"),
                  op("sgd_update", "update",
                     {{"param", 6}, {"grad", 17}, {"momentum_buffer", 10}, {"lr", 5}},
                     {{"new_param", 19}, {"new_momentum_buffer", 20}}, sgd),
                  op("sgd_update", "update",
                     {{"param", 7}, {"grad", 18}, {"momentum_buffer", 11}, {"lr", 5}},
                     {{"new_param", 21}, {"new_momentum_buffer", 22}}, sgd)}}},
  });
  auto bind = [](const char *name, int tensor) {
    return json{{"name", name}, {"tensor", tensor}};
  };
  json function = {
      {"name", "train_step"},
      {"tensors", tensors},
      {"inputs", {bind("images", 0), bind("labels", 1), bind("lr", 2)}},
      {"state", {bind("fc.weight", 6), bind("fc.bias", 7), bind("grad.fc.weight", 8),
                 bind("grad.fc.bias", 9), bind("momentum.fc.weight", 10),
                 bind("momentum.fc.bias", 11)}},
      {"outputs", {bind("loss", 15)}},
      {"state_results", {bind("fc.weight", 19), bind("fc.bias", 21),
                         bind("grad.fc.weight", 17), bind("grad.fc.bias", 18),
                         bind("momentum.fc.weight", 20), bind("momentum.fc.bias", 22)}},
      {"subgraphs", subgraphs},
  };
  auto region = [](const char *kind, uint64_t offset, uint64_t bytes) {
    return json{{"kind", kind}, {"offset", offset}, {"bytes", bytes}};
  };
  auto step = [](const char *verb, const char *subgraph, const char *variant) {
    json step = {{verb, subgraph}};
    if (variant)
      step["variant"] = variant;
    return step;
  };
  return {
      {"format", "rn-program"},
      {"version", kArtifactVersion},
      {"model", "mlp"},
      {"training", {{"optimizer", "sgd"}, {"precision", "f32"}}},
      {"arena",
       {{"bytes", 4096},
        {"alignment", 256},
        {"regions", {region("weights", 0, 512), region("gradients", 512, 512),
                     region("optimizer_state", 1024, 512), region("inputs_a", 1536, 768),
                     region("inputs_b", 2304, 768), region("scalars", 3072, 256),
                     region("activations", 3328, 512)}}}},
      {"state",
       {stateEntry("fc.weight", "parameter", {4, 8}, slot("weights", 0, 128), "uniform"),
        stateEntry("fc.bias", "parameter", {4}, slot("weights", 256, 16), "uniform"),
        stateEntry("grad.fc.weight", "gradient", {4, 8}, slot("gradients", 0, 128),
                   "zeros", "fc.weight"),
        stateEntry("grad.fc.bias", "gradient", {4}, slot("gradients", 256, 16), "zeros",
                   "fc.bias"),
        stateEntry("momentum.fc.weight", "momentum", {4, 8},
                   slot("optimizer_state", 0, 128), "zeros", "fc.weight"),
        stateEntry("momentum.fc.bias", "momentum", {4}, slot("optimizer_state", 256, 16),
                   "zeros", "fc.bias")}},
      {"functions", {function}},
      {"schedules",
       {{{"name", "train_even"},
         {"function", "train_step"},
         {"steps", {step("launch", "TRANSFER", "a"), step("launch", "ZERO_GRAD", nullptr),
                    step("launch", "FWD_BWD", "a"), step("launch", "OPTIMIZER", "a"),
                    step("host_wait", "OPTIMIZER", "a")}}}}},
      {"num_events", 3},
  };
}

/// A tensor for the raw writer below.
struct RawTensor {
  std::string name;
  std::string dtype;
  json shape;
  std::string data;
};

inline std::string floats(std::initializer_list<float> values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), values.begin(), bytes.size());
  return bytes;
}

inline std::vector<RawTensor> validTensors() {
  std::string weight;
  for (int i = 0; i < 32; ++i)
    weight += floats({0.25f * i});
  return {{"fc.weight", "F32", {4, 8}, weight},
          {"fc.bias", "F32", {4}, floats({1, 2, 3, 4})}};
}

/// Safetensors bytes written by hand (independent of the library's writer):
/// the length, `header` verbatim, then the data.
inline std::string rawFile(const std::string &header, const std::string &data) {
  std::string file(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    file[i] = static_cast<char>(length >> (8 * i));
  return file + header + data;
}

inline std::string artifactBytes(const json &program,
                          const std::vector<RawTensor> &tensors = validTensors(),
                          json metadata = nullptr) {
  if (metadata.is_null())
    metadata = {{"rn.format", "rn-program"},
                {"rn.version", std::to_string(kArtifactVersion)},
                {"rn.program", program.dump()}};
  json header = {{"__metadata__", metadata}};
  std::string data;
  for (const RawTensor &tensor : tensors) {
    header[tensor.name] = {{"dtype", tensor.dtype},
                           {"shape", tensor.shape},
                           {"data_offsets", {data.size(), data.size() + tensor.data.size()}}};
    data += tensor.data;
  }
  return rawFile(header.dump(), data);
}

/// The error of loading `program` (with the valid tensors); "" if it loads.
inline std::string programError(const json &program) {
  Result<Artifact> artifact = parseArtifact(artifactBytes(program));
  return artifact.ok() ? "" : artifact.error().message();
}

inline std::string fileError(const std::string &file) {
  Result<Artifact> artifact = parseArtifact(file);
  return artifact.ok() ? "" : artifact.error().message();
}

inline json &node(json &program, size_t subgraph, size_t index) {
  return program["functions"][0]["subgraphs"][subgraph]["nodes"][index];
}

class TempDir {
public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "rn-artifact-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string &name) const { return (path_ / name).string(); }
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace rn::test

#endif // RN_TEST_RUNTIME_CORE_ARTIFACT_TEST_UTIL_H
