//===- artifact_test.cpp - Artifact loader, validator and safetensors -----===//
//
// A tiny valid artifact (an MLP-like train_step: host transfer, zero-grad,
// linear forward and backward, SGD with momentum) is built here as JSON plus
// raw safetensors bytes; each rejection test breaks one thing and checks
// that the message names it and its place.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/core/op_registry.h"
#include "runtime/core/op_table.h"
#include "runtime/core/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace rn {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

//===----------------------------------------------------------------------===//
// The valid artifact
//===----------------------------------------------------------------------===//

json slot(const char *region, uint64_t offset, uint64_t bytes) {
  return {{"region", region}, {"offset", offset}, {"bytes", bytes}};
}

json deviceTensor(int id, const char *dtype, json shape, json where) {
  return {{"id", id}, {"dtype", dtype}, {"shape", std::move(shape)},
          {"slot", std::move(where)}};
}

json hostTensor(int id, const char *dtype, json shape, const char *input) {
  return {{"id", id}, {"dtype", dtype}, {"shape", std::move(shape)},
          {"host_input", input}};
}

/// An op node; `operands` and `results` name their tensors by the op's ODS
/// names ({{"input", 3}, {"weight", 6}}, a list's ids an array).
json op(const char *name, const char *stream, json operands, json results,
        json attributes = json::object()) {
  return {{"kind", "op"},         {"op", name},
          {"stream", stream},     {"operands", std::move(operands)},
          {"results", std::move(results)}, {"attributes", std::move(attributes)}};
}

json record(int event, const char *stream) {
  return {{"kind", "event_record"}, {"event", event},
          {"event_kind", "external"}, {"stream", stream}};
}

json wait(int event, const char *stream) {
  return {{"kind", "event_wait"}, {"event", event}, {"event_kind", "external"},
          {"stream", stream}, {"distance", 0}};
}

json stateEntry(const char *name, const char *role, json shape, json where,
                const char *init, const char *of = nullptr) {
  json entry = {{"name", name},   {"role", role},
                {"dtype", "f32"}, {"shape", std::move(shape)},
                {"slot", std::move(where)}, {"init", {{"kind", init}, {"scale", 0.5}}}};
  if (of)
    entry["of"] = of;
  return entry;
}

/// fc: [2, 8] -> [2, 4] with bias, softmax cross-entropy, SGD momentum 0.9.
json validProgram() {
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

std::string floats(std::initializer_list<float> values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), values.begin(), bytes.size());
  return bytes;
}

std::vector<RawTensor> validTensors() {
  std::string weight;
  for (int i = 0; i < 32; ++i)
    weight += floats({0.25f * i});
  return {{"fc.weight", "F32", {4, 8}, weight},
          {"fc.bias", "F32", {4}, floats({1, 2, 3, 4})}};
}

/// Safetensors bytes written by hand (independent of the library's writer):
/// the length, `header` verbatim, then the data.
std::string rawFile(const std::string &header, const std::string &data) {
  std::string file(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    file[i] = static_cast<char>(length >> (8 * i));
  return file + header + data;
}

std::string artifactBytes(const json &program,
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
std::string programError(const json &program) {
  Result<Artifact> artifact = parseArtifact(artifactBytes(program));
  return artifact.ok() ? "" : artifact.error().message();
}

std::string fileError(const std::string &file) {
  Result<Artifact> artifact = parseArtifact(file);
  return artifact.ok() ? "" : artifact.error().message();
}

json &node(json &program, size_t subgraph, size_t index) {
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

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

TEST(Artifact, LoadsValidArtifact) {
  TempDir dir;
  std::string path = dir.file("mlp.rnx");
  std::ofstream(path, std::ios::binary) << artifactBytes(validProgram());
  Result<Artifact> loaded = loadArtifact(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  const Program &program = loaded->program;

  EXPECT_EQ(program.version, kArtifactVersion);
  EXPECT_EQ(program.model, "mlp");
  EXPECT_EQ(program.training["optimizer"], "sgd");
  EXPECT_EQ(program.arena.bytes, 4096u);
  EXPECT_EQ(program.arena.alignment, 256u);
  ASSERT_EQ(program.arena.regions.size(), 7u);
  ASSERT_NE(program.arena.find("inputs_b"), nullptr);
  EXPECT_EQ(program.arena.find("inputs_b")->offset, 2304u);
  EXPECT_EQ(program.numEvents, 3u);

  ASSERT_EQ(program.state.size(), 6u);
  const StateEntry *grad = program.findState("grad.fc.weight");
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(grad->role, "gradient");
  EXPECT_EQ(grad->of, "fc.weight");
  EXPECT_EQ(grad->shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(grad->init.kind, "zeros");
  ASSERT_TRUE(grad->slot.has_value());
  EXPECT_EQ(grad->slot->region, "gradients");

  ASSERT_EQ(program.functions.size(), 1u);
  const Function &step = program.functions[0];
  EXPECT_EQ(step.name, "train_step");
  ASSERT_EQ(step.tensors.size(), 23u);
  EXPECT_TRUE(step.tensors[0].isHost());
  EXPECT_EQ(step.tensors[0].hostInput, "images");
  EXPECT_EQ(step.tensors[4].dtype, DType::i32);
  EXPECT_EQ(step.tensors[14].bytes, 32u);
  EXPECT_EQ(step.tensors[15].shape, std::vector<int64_t>{});
  EXPECT_EQ(step.inputs.size(), 3u);
  EXPECT_EQ(step.state.size(), 6u);
  EXPECT_EQ(step.outputs[0].name, "loss");
  EXPECT_EQ(step.outputs[0].tensor, 15u);
  EXPECT_EQ(step.stateResults.size(), 6u);

  ASSERT_EQ(step.subgraphs.size(), 4u);
  const Subgraph *fwd = step.findSubgraph("FWD_BWD");
  ASSERT_NE(fwd, nullptr);
  EXPECT_TRUE(fwd->doubleBuffered);
  EXPECT_EQ(fwd->primary, Stream::comp1);
  ASSERT_EQ(fwd->nodes.size(), 7u);
  EXPECT_EQ(fwd->nodes[0].kind, Node::Kind::event_wait);
  EXPECT_EQ(fwd->nodes[0].event, 0u);
  EXPECT_EQ(fwd->nodes[0].eventKind, EventKind::external);
  const Node &backward = fwd->nodes[5];
  EXPECT_EQ(backward.kind, Node::Kind::op);
  EXPECT_EQ(backward.op, "linear_backward");
  ASSERT_NE(backward.info, nullptr);
  EXPECT_EQ(backward.info->name, "linear_backward");
  // The flat lists in op-table order, and by ODS name through the layout.
  EXPECT_EQ(backward.operands, (std::vector<uint32_t>{16, 3, 6, 12, 13}));
  EXPECT_EQ(backward.results, (std::vector<uint32_t>{17, 18}));
  namespace linear_backward = op_table::linear_backward;
  EXPECT_EQ(backward.operand(linear_backward::operand::weight), 6u);
  EXPECT_EQ(backward.operand(linear_backward::operand::bias_grad_acc), 13u);
  EXPECT_EQ(backward.result(linear_backward::result::weight_grad), 17u);
  EXPECT_EQ(backward.result(linear_backward::result::bias_grad), 18u);
  EXPECT_FALSE(backward.layout.results.has(linear_backward::result::input_grad));
  EXPECT_EQ(backward.layout.operands.total(), 5u);
  EXPECT_EQ(backward.layout.results.total(), 2u);
  ASSERT_EQ(backward.parts.size(), 2u);
  EXPECT_EQ(backward.parts[1].role, "bias_grad");
  EXPECT_EQ(backward.parts[1].stream, Stream::comp2);
  const Node &sgd = step.findSubgraph("OPTIMIZER")->nodes[1];
  EXPECT_DOUBLE_EQ(sgd.attributes["momentum"].get<double>(), 0.9);
  EXPECT_EQ(sgd.operand(op_table::sgd_update::operand::lr), 5u);
  EXPECT_EQ(sgd.result(op_table::sgd_update::result::new_momentum_buffer), 20u);
  EXPECT_FALSE(sgd.layout.operands.has(op_table::sgd_update::operand::skip_if));

  ASSERT_EQ(program.schedules.size(), 1u);
  const Schedule &schedule = program.schedules[0];
  EXPECT_EQ(schedule.function, "train_step");
  ASSERT_EQ(schedule.steps.size(), 5u);
  EXPECT_EQ(schedule.steps[1].subgraph, "ZERO_GRAD");
  EXPECT_FALSE(schedule.steps[1].variant.has_value());
  EXPECT_EQ(schedule.steps[4].kind, Step::Kind::host_wait);
  EXPECT_EQ(schedule.steps[4].variant, Variant::a);

  const SafetensorsEntry *bias = loaded->tensors.find("fc.bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->dtype, DType::f32);
  EXPECT_EQ(loaded->tensors.bytesOf(*bias), floats({1, 2, 3, 4}));
  EXPECT_EQ(loaded->tensors.bytesOf(*loaded->tensors.find("fc.weight")).size(), 128u);
}

TEST(Artifact, MissingFileNamesPath) {
  Result<Artifact> loaded = loadArtifact("/nonexistent/model.rnx");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.error().message(), HasSubstr("/nonexistent/model.rnx"));
}

TEST(Artifact, ParseProgramWithoutTensors) {
  Result<Program> program = parseProgram(validProgram().dump());
  ASSERT_TRUE(program.ok()) << program.error().message();
  EXPECT_EQ(program->functions[0].subgraphs.size(), 4u);
}

//===----------------------------------------------------------------------===//
// The safetensors container
//===----------------------------------------------------------------------===//

TEST(Artifact, RejectsEveryTruncation) {
  std::string file = artifactBytes(validProgram());
  ASSERT_TRUE(parseArtifact(file).ok());
  for (size_t length = 0; length < file.size(); ++length) {
    // A fresh copy so that AddressSanitizer sees any read past the prefix.
    std::string prefix = file.substr(0, length);
    Result<Artifact> loaded = parseArtifact(prefix);
    ASSERT_FALSE(loaded.ok()) << "a prefix of " << length << " bytes loaded";
    EXPECT_FALSE(loaded.error().message().empty());
  }
  EXPECT_THAT(fileError(file.substr(0, 5)), HasSubstr("too short for the 8-byte header length"));
  EXPECT_THAT(fileError(file.substr(0, 100)), HasSubstr("runs past the end of the file"));
  EXPECT_THAT(fileError(file.substr(0, file.size() - 1)),
              HasSubstr("run past the data section"));
}

TEST(Artifact, RejectsCorruptHeaderLength) {
  std::string file = artifactBytes(validProgram());
  auto withLength = [&](uint64_t length) {
    std::string copy = file;
    for (int i = 0; i < 8; ++i)
      copy[i] = static_cast<char>(length >> (8 * i));
    return fileError(copy);
  };
  EXPECT_THAT(withLength(uint64_t(1) << 63), HasSubstr("exceeds the limit"));
  EXPECT_THAT(withLength(~uint64_t(0)), HasSubstr("exceeds the limit"));
  EXPECT_THAT(withLength(file.size()), HasSubstr("runs past the end of the file"));
  EXPECT_THAT(withLength(0), HasSubstr("must be a JSON object starting with '{'"));
  // Too short: the JSON ends early, or the rest becomes data.
  EXPECT_THAT(withLength(10), HasSubstr("safetensors header: invalid JSON"));
}

TEST(Artifact, RejectsBadTensorRanges) {
  auto header = [](const json &entries) { return entries.dump(); };
  std::string data(16, '\0');
  auto entry = [](const char *dtype, json shape, json offsets) {
    return json{{"dtype", dtype}, {"shape", shape}, {"data_offsets", offsets}};
  };
  auto error = [&](const json &entries) {
    Result<Safetensors> parsed = parseSafetensors(rawFile(header(entries), data));
    return parsed.ok() ? std::string() : parsed.error().message();
  };
  EXPECT_EQ(error({{"a", entry("F32", {4}, {0, 16})}}), "");
  EXPECT_THAT(error({{"a", entry("F32", {2}, {0, 8})}, {"b", entry("F32", {2}, {4, 12})}}),
              HasSubstr("\"a\" and \"b\" overlap"));
  EXPECT_THAT(error({{"a", entry("F32", {2}, {8, 16})}}),
              HasSubstr("bytes 0 to 8 of the data belong to no tensor"));
  EXPECT_THAT(error({{"a", entry("F32", {2}, {0, 8})}}),
              HasSubstr("the data section has 16 bytes, but the tensors cover 8"));
  EXPECT_THAT(error({{"a", entry("F32", {3}, {0, 16})}}),
              HasSubstr("hold 16 bytes, but F32 [3] needs 12"));
  EXPECT_THAT(error({{"a", entry("F64", {2}, {0, 16})}}), HasSubstr("dtype \"F64\" is not supported"));
  EXPECT_THAT(error({{"a", entry("F32", {4}, {16, 0})}}), HasSubstr("end before they begin"));
  // Offsets and shapes near 2^64 must not wrap around.
  uint64_t huge = uint64_t(1) << 63;
  EXPECT_THAT(error({{"a", entry("F32", {4}, {huge, huge + 16})}}),
              HasSubstr("run past the data section of 16 bytes"));
  EXPECT_THAT(error({{"a", entry("F32", {huge, 2}, {0, 16})}}), HasSubstr("below 2^63"));
  EXPECT_THAT(error({{"a", entry("F32", {uint64_t(1) << 40, uint64_t(1) << 40}, {0, 16})}}),
              HasSubstr("too large"));
  EXPECT_THAT(error({{"a", entry("F32", {uint64_t(1) << 62, 4}, {0, 16})}}),
              HasSubstr("too large"));
  EXPECT_THAT(error({{"a", entry("F32", {4}, {0, 1e30})}}),
              HasSubstr("must be non-negative integers"));
  EXPECT_THAT(error({{"a", entry("F32", {-4}, {0, 16})}}), HasSubstr("non-negative integers"));
  EXPECT_THAT(error({{"__metadata__", {{"k", 1}}}}), HasSubstr("__metadata__ value \"k\" must be a string"));
}

TEST(Artifact, RejectsDuplicateKeysAndDeepNesting) {
  std::string duplicate = R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                          R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})";
  Result<Safetensors> parsed = parseSafetensors(rawFile(duplicate, std::string(4, '\0')));
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message(), HasSubstr("duplicate key \"a\""));

  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Result<json> nested = parseJsonDocument(deep, "test");
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(nested.error().message(), HasSubstr("nesting deeper than 64 levels"));
}

TEST(Artifact, WriterRoundTrips) {
  TempDir dir;
  std::string path = dir.file("checkpoint.safetensors");
  std::vector<float> weight(32);
  for (int i = 0; i < 32; ++i)
    weight[i] = float(i);
  uint8_t flags[3] = {1, 0, 1};
  std::vector<TensorData> tensors = {
      {"w", DType::f32, {4, 8}, weight.data(), weight.size() * 4},
      {"flags", DType::i1, {3}, flags, 3},
      {"empty", DType::f16, {0, 5}, nullptr, 0},
  };
  std::map<std::string, std::string> metadata = {{"step", "17"}};
  std::ofstream(path) << "previous contents";
  ASSERT_TRUE(writeSafetensors(path, tensors, metadata).ok());

  Result<Safetensors> read = readSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->metadata, metadata);
  ASSERT_EQ(read->tensors.size(), 3u);
  const SafetensorsEntry *w = read->find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(std::memcmp(read->bytesOf(*w).data(), weight.data(), 128), 0);
  EXPECT_EQ(read->find("flags")->dtype, DType::i1);
  EXPECT_EQ(read->bytesOf(*read->find("flags")), std::string("\1\0\1", 3));
  EXPECT_EQ(read->find("empty")->bytes, 0u);
  // The data starts 8-byte aligned, and no temporary is left behind.
  Result<std::string> bytes = serializeSafetensors(tensors, metadata);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ((bytes->size() - 131) % 8, 0u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);

  std::vector<TensorData> wrong = {{"w", DType::f32, {4, 8}, weight.data(), 100}};
  Status status = writeSafetensors(path, wrong, {});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message(), HasSubstr("has 100 bytes, but f32 [4, 8] needs 128"));
  EXPECT_TRUE(readSafetensors(path).ok()); // the failed write left the old file
  Status missingDir = writeSafetensors(dir.file("no/such/dir.safetensors"), tensors, {});
  EXPECT_FALSE(missingDir.ok());
}

//===----------------------------------------------------------------------===//
// Metadata and program header
//===----------------------------------------------------------------------===//

TEST(Artifact, RejectsBadJson) {
  json metadata = {{"rn.format", "rn-program"}, {"rn.version", std::to_string(kArtifactVersion)},
                   {"rn.program", R"({"format": "rn-program", "version": 1,, })"}};
  std::string error = fileError(artifactBytes(nullptr, validTensors(), metadata));
  EXPECT_THAT(error, HasSubstr("rn.program: invalid JSON: syntax error at byte 39: parse error at line 1, column 39"));
}

/// Another format version is refused before anything else is read: an
/// older one (format 1 listed operands by position) is compiled again, a
/// newer one needs a newer runtime.
TEST(Artifact, RejectsWrongVersion) {
  const std::string ours =
      "this runtime reads format " + std::to_string(kArtifactVersion);
  const std::string older =
      "compiled by an older rn-compile, format 1; " + ours + ": compile the model again";
  const std::string newer = "compiled by a newer rn-compile, format " +
                            std::to_string(kArtifactVersion + 1) + "; " + ours +
                            ": use the runtime of that rn-compile";
  EXPECT_EQ(artifactVersionMismatch(1), older);
  EXPECT_EQ(artifactVersionMismatch(kArtifactVersion + 1), newer);

  auto metadataOf = [](const std::string &version, const json &program) {
    return json{{"rn.format", "rn-program"},
                {"rn.version", version},
                {"rn.program", program.dump()}};
  };
  // The metadata's rn.version.
  EXPECT_THAT(fileError(artifactBytes(nullptr, validTensors(), metadataOf("1", validProgram()))),
              HasSubstr(older));
  EXPECT_THAT(fileError(artifactBytes(nullptr, validTensors(),
                                      metadataOf(std::to_string(kArtifactVersion + 1),
                                                 validProgram()))),
              HasSubstr(newer));
  EXPECT_THAT(fileError(artifactBytes(nullptr, validTensors(), metadataOf("1x", validProgram()))),
              HasSubstr("is not a version number"));

  // The program's "version".
  json program = validProgram();
  program["version"] = 1;
  EXPECT_THAT(programError(program), HasSubstr(older));
  program["version"] = kArtifactVersion + 1;
  EXPECT_THAT(programError(program), HasSubstr(newer));

  // A whole format-1 artifact, positional operands and all: the version
  // speaks first, not the operands.
  json formatOne = validProgram();
  formatOne["version"] = 1;
  node(formatOne, 2, 2)["operands"] = json::array({3, 6, 7});
  node(formatOne, 2, 2)["results"] = json::array({14});
  EXPECT_EQ(fileError(artifactBytes(nullptr, validTensors(), metadataOf("1", formatOne))), older);
  Result<Program> parsed = parseProgram(formatOne.dump());
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message(), HasSubstr(older));
}

TEST(Artifact, RejectsMissingMetadata) {
  json metadata = {{"rn.version", std::to_string(kArtifactVersion)},
                   {"rn.program", validProgram().dump()}};
  EXPECT_THAT(fileError(artifactBytes(nullptr, validTensors(), metadata)),
              HasSubstr("not an rn artifact: the safetensors metadata has no \"rn.format\""));
  metadata = {{"rn.format", "rn-program"}, {"rn.version", std::to_string(kArtifactVersion)}};
  EXPECT_THAT(fileError(artifactBytes(nullptr, validTensors(), metadata)),
              HasSubstr("no \"rn.program\""));
  json program = validProgram();
  program["format"] = "onnx";
  EXPECT_THAT(programError(program), HasSubstr("format \"onnx\" is not an rn program"));
}

//===----------------------------------------------------------------------===//
// Arena, regions and slots
//===----------------------------------------------------------------------===//

TEST(Artifact, RejectsSlotOutOfBounds) {
  json program = validProgram();
  program["functions"][0]["tensors"][14]["slot"] = slot("activations", 496, 32);
  EXPECT_THAT(programError(program),
              HasSubstr("function train_step, tensor 14: slot [496, 528) runs past "
                        "region activations of 512 bytes"));

  program = validProgram();
  program["functions"][0]["tensors"][14]["slot"] = slot("activations", 0, 31);
  EXPECT_THAT(programError(program),
              HasSubstr("tensor 14: slot of 31 bytes cannot hold f32 [2, 4] (32 bytes)"));

  program = validProgram();
  program["functions"][0]["tensors"][14]["slot"] = slot("ema", 0, 32);
  EXPECT_THAT(programError(program),
              HasSubstr("slot names region \"ema\", which the arena does not have"));

  // 2^63 + 2^63 wraps to 0 in 64 bits: caught, not accepted.
  program = validProgram();
  program["functions"][0]["tensors"][14]["slot"] =
      slot("activations", uint64_t(1) << 63, uint64_t(1) << 63);
  EXPECT_THAT(programError(program), HasSubstr("slot end overflows 64 bits"));
}

TEST(Artifact, RejectsRegionOverlap) {
  json program = validProgram();
  program["arena"]["regions"][1]["offset"] = 256;
  EXPECT_THAT(programError(program),
              HasSubstr("arena: regions weights [0, 512) and gradients [256, 768) overlap"));

  program = validProgram();
  program["arena"]["regions"][6]["bytes"] = 1024;
  EXPECT_THAT(programError(program),
              HasSubstr("region 6: region activations [3328, 4352) ends past the arena of 4096 bytes"));

  program = validProgram();
  program["arena"]["regions"][6]["offset"] = 3329;
  EXPECT_THAT(programError(program), HasSubstr("is not 256-byte aligned"));

  program = validProgram();
  program["arena"]["alignment"] = 24;
  EXPECT_THAT(programError(program), HasSubstr("alignment must be a power of two, got 24"));

  program = validProgram();
  program["arena"]["regions"][6]["offset"] = ~uint64_t(0) - 255;
  EXPECT_THAT(programError(program), HasSubstr("overflows 64 bits"));
}

TEST(Artifact, RejectsMissingInputMirror) {
  json program = validProgram();
  program["arena"]["regions"][4]["bytes"] = 256;
  EXPECT_THAT(programError(program),
              HasSubstr("function train_step, tensor 4: slot inputs_a+256 (8 bytes) has no "
                        "mirror in inputs_b (256 bytes)"));
}

//===----------------------------------------------------------------------===//
// Tensors, ops and attributes
//===----------------------------------------------------------------------===//

TEST(Artifact, RejectsUnknownOp) {
  json program = validProgram();
  node(program, 2, 2)["op"] = "conv3d";
  EXPECT_THAT(programError(program),
              HasSubstr("function train_step, subgraph FWD_BWD, node 2 (conv3d): "
                        "unknown op \"conv3d\""));
}

TEST(Artifact, RejectsUnknownTensorId) {
  json program = validProgram();
  node(program, 2, 2)["operands"]["weight"] = 9001;
  EXPECT_THAT(programError(program),
              HasSubstr("function train_step, subgraph FWD_BWD, node 2 (linear): operand "
                        "\"weight\" refers to tensor 9001, but the function has 23 tensors"));

  program = validProgram();
  node(program, 2, 2)["results"]["result"] = 23;
  EXPECT_THAT(programError(program),
              HasSubstr("node 2 (linear): result \"result\" refers to tensor 23, but the function has "
                        "23 tensors"));

  program = validProgram();
  program["functions"][0]["outputs"][0]["tensor"] = 23;
  EXPECT_THAT(programError(program),
              HasSubstr("outputs[0]: loss refers to tensor 23, but the function has 23 tensors"));

  program = validProgram();
  program["functions"][0]["tensors"][3]["id"] = 4;
  EXPECT_THAT(programError(program),
              HasSubstr("tensor ids must be dense and in order: entry 3 has id 4"));

  program = validProgram();
  node(program, 2, 2)["results"]["result"] = 3; // redefines the device images
  EXPECT_THAT(programError(program),
              HasSubstr("result tensor 3 is already defined by subgraph TRANSFER, node 0 "
                        "(host_to_device)"));

  program = validProgram();
  node(program, 2, 2)["operands"]["input"] = 0; // the host buffer
  EXPECT_THAT(programError(program),
              HasSubstr("node 2 (linear): operand \"input\" is tensor 0, a host staging buffer "
                        "(host_input images); only host_to_device reads host buffers"));
}

TEST(Artifact, RejectsBadAttribute) {
  json program = validProgram();
  node(program, 3, 1)["attributes"]["momentum"] = 1.5;
  EXPECT_THAT(programError(program),
              HasSubstr("function train_step, subgraph OPTIMIZER, node 1 (sgd_update): "
                        "attribute \"momentum\" must be in [0, 1), got 1.5"));

  program = validProgram();
  node(program, 3, 1)["attributes"]["weight_decay"] = "5e-4";
  EXPECT_THAT(programError(program),
              HasSubstr("attribute \"weight_decay\" must be a number, got string"));

  program = validProgram();
  node(program, 2, 3)["attributes"].erase("label_smoothing");
  EXPECT_THAT(programError(program),
              HasSubstr("node 3 (softmax_cross_entropy): attribute \"label_smoothing\" is missing"));

  // The momentum buffer and its new value come with momentum, and only
  // with it.
  program = validProgram();
  node(program, 3, 1)["attributes"]["momentum"] = 0.0; // no buffer expected then
  EXPECT_THAT(programError(program),
              HasSubstr("node 1 (sgd_update): with momentum 0 takes no \"momentum_buffer\""));
  node(program, 3, 1)["operands"].erase("momentum_buffer");
  EXPECT_THAT(programError(program),
              HasSubstr("node 1 (sgd_update): with momentum 0 produces no "
                        "\"new_momentum_buffer\""));
  program = validProgram();
  node(program, 3, 1)["operands"].erase("momentum_buffer");
  EXPECT_THAT(programError(program),
              HasSubstr("node 1 (sgd_update): with momentum 0.9 needs operand "
                        "\"momentum_buffer\""));

  // The bias accumulator comes with the bias gradient.
  program = validProgram();
  node(program, 2, 5)["results"].erase("bias_grad");
  EXPECT_THAT(programError(program),
              HasSubstr("node 5 (linear_backward): operand \"bias_grad_acc\" is present "
                        "without result \"bias_grad\""));

  // An input gradient (no longer a unit attribute: the optional result)
  // is a third part.
  program = validProgram();
  program["functions"][0]["tensors"].push_back(
      deviceTensor(23, "f32", {2, 8}, slot("activations", 64, 64)));
  node(program, 2, 5)["results"]["input_grad"] = 23;
  EXPECT_THAT(programError(program),
              HasSubstr("node 5 (linear_backward): lists 2 parts, but this linear_backward has "
                        "3 (weight_grad, bias_grad, input_grad)"));
  node(program, 2, 5)["parts"].push_back(json{{"role", "input_grad"}, {"stream", "comp1"}});
  EXPECT_EQ(programError(program), "");

  program = validProgram();
  node(program, 2, 5)["parts"][1]["role"] = "input_grad";
  EXPECT_THAT(programError(program),
              HasSubstr("part 1: role \"input_grad\", expected \"bias_grad\""));

  program = validProgram();
  node(program, 2, 5)["part_waits"] = {{0, 2}};
  EXPECT_THAT(programError(program), HasSubstr("part index out of range"));
}

/// Nodes name their operands and results by the op's ODS names (format 2);
/// the loader holds them to the op table: known names, every required one,
/// one id for a single or optional one, an array of ids for a list.
TEST(Artifact, RejectsBadNamedValues) {
  json program = validProgram();
  node(program, 2, 2)["operands"]["residual"] = 7;
  EXPECT_THAT(programError(program),
              HasSubstr("function train_step, subgraph FWD_BWD, node 2 (linear): operand "
                        "\"residual\" is not one of linear's operands: input, weight, bias?"));

  program = validProgram();
  node(program, 2, 2)["operands"].erase("weight");
  EXPECT_THAT(programError(program),
              HasSubstr("node 2 (linear): operand \"weight\" is missing (linear's operands: "
                        "input, weight, bias?)"));

  // An optional operand is one id, or absent.
  program = validProgram();
  node(program, 2, 2)["operands"]["bias"] = json::array({7});
  EXPECT_THAT(programError(program),
              HasSubstr("node 2 (linear): operand \"bias\" must be a tensor id (a non-negative "
                        "integer), got array"));
  program = validProgram();
  node(program, 2, 2)["operands"].erase("bias");
  EXPECT_EQ(programError(program), "");

  // Ids are non-negative integers.
  program = validProgram();
  node(program, 2, 2)["operands"]["weight"] = -6;
  EXPECT_THAT(programError(program),
              HasSubstr("operand \"weight\" must be a tensor id (a non-negative integer), got -6"));
  node(program, 2, 2)["operands"]["weight"] = 6.5;
  EXPECT_THAT(programError(program), HasSubstr("operand \"weight\" must be a tensor id (a "
                                               "non-negative integer), got 6.5"));
  node(program, 2, 2)["operands"]["weight"] = "6";
  EXPECT_THAT(programError(program), HasSubstr("operand \"weight\" must be a tensor id (a "
                                               "non-negative integer), got string"));

  // Results likewise.
  program = validProgram();
  node(program, 2, 2)["results"] = {{"output", 14}};
  EXPECT_THAT(programError(program),
              HasSubstr("node 2 (linear): result \"output\" is not one of linear's results: "
                        "result"));
  program = validProgram();
  node(program, 2, 2)["results"] = json::object();
  EXPECT_THAT(programError(program),
              HasSubstr("node 2 (linear): result \"result\" is missing (linear's results: "
                        "result)"));

  // Format 1's positional arrays.
  program = validProgram();
  node(program, 2, 2)["operands"] = json::array({3, 6, 7});
  EXPECT_THAT(programError(program),
              HasSubstr("node 2 (linear): \"operands\" must be an object from name to tensor id "
                        "(linear's operands: input, weight, bias?), got array"));

  // A list: one multi_zero zeroes both gradients.
  program = validProgram();
  json &zeroGrad = program["functions"][0]["subgraphs"][1]["nodes"];
  zeroGrad.erase(1);
  zeroGrad[0] = op("multi_zero", "update", {{"inputs", {8, 9}}}, {{"results", {12, 13}}});
  EXPECT_EQ(programError(program), "");
  Result<Program> parsed = parseProgram(program.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  const Node &zero = parsed->functions[0].subgraphs[1].nodes[0];
  EXPECT_EQ(zero.operands, (std::vector<uint32_t>{8, 9}));
  EXPECT_EQ(zero.results, (std::vector<uint32_t>{12, 13}));
  EXPECT_EQ(zero.layout.operands.count(op_table::multi_zero::operand::inputs), 2u);
  EXPECT_EQ(zero.layout.results.count(op_table::multi_zero::result::results), 2u);
  zeroGrad[0]["operands"]["inputs"] = 8;
  EXPECT_THAT(programError(program),
              HasSubstr("subgraph ZERO_GRAD, node 0 (multi_zero): operand \"inputs\" is a list: "
                        "it must be an array of tensor ids, got number"));
  zeroGrad[0]["operands"]["inputs"] = {8, -9};
  EXPECT_THAT(programError(program),
              HasSubstr("node 0 (multi_zero): operand \"inputs\"[1] must be a tensor id (a "
                        "non-negative integer), got -9"));
  zeroGrad[0]["operands"]["inputs"] = {8, 9};
  zeroGrad[0]["results"]["results"] = json::array({12});
  EXPECT_THAT(programError(program),
              HasSubstr("node 0 (multi_zero): result \"results\" has 1 tensor, expected 2 (one "
                        "per input)"));
}

//===----------------------------------------------------------------------===//
// The registry alone
//===----------------------------------------------------------------------===//

/// Named operands (results) as a node holds them: each name with the next
/// tensor id, "name[n]" a list of n ids.
json named(const std::vector<const char *> &names) {
  json object = json::object();
  uint64_t id = 0;
  for (std::string name : names) {
    size_t bracket = name.find('[');
    if (bracket == std::string::npos) {
      object[name] = id++;
      continue;
    }
    json list = json::array();
    for (size_t n = std::stoul(name.substr(bracket + 1)); n > 0; --n)
      list.push_back(id++);
    object[name.substr(0, bracket)] = std::move(list);
  }
  return object;
}

/// cbr_backward's ten required operands, then `more`.
json cbrBackwardOperands(const std::vector<const char *> &more) {
  std::vector<const char *> names = {"output_grad",  "input",          "filter",
                                     "conv_output",  "gamma",          "batch_mean",
                                     "batch_inv_std", "filter_grad_acc", "gamma_grad_acc",
                                     "beta_grad_acc"};
  names.insert(names.end(), more.begin(), more.end());
  return named(names);
}

/// The layout of an `op` node with these operands and results, read as the
/// loader reads them, or the first error.
Result<NodeLayout> readLayout(const char *op, const json &operands, const json &results) {
  const OpInfo *info = findOp(op);
  if (!info || !info->table)
    return Error(std::string("no op ") + op);
  std::vector<uint64_t> ids;
  Result<ValueLayout> operandLayout =
      readNamedValues(*info->table, /*results=*/false, operands, "operand", ids);
  if (!operandLayout)
    return operandLayout.error();
  ids.clear();
  Result<ValueLayout> resultLayout =
      readNamedValues(*info->table, /*results=*/true, results, "result", ids);
  if (!resultLayout)
    return resultLayout.error();
  return NodeLayout{std::move(*operandLayout), std::move(*resultLayout)};
}

/// The layout of a node that reads.
NodeLayout layoutOf(const char *op, const json &operands, const json &results) {
  Result<NodeLayout> layout = readLayout(op, operands, results);
  EXPECT_TRUE(layout.ok()) << op << ": " << layout.error().message();
  return layout.ok() ? *layout : NodeLayout{};
}

/// What the loader says of an `op` node with these operands, results and
/// attributes (the op table's rules, then the registry's verify): its
/// first error, or "" when it passes.
std::string check(const char *op, const json &operands, const json &results,
                  const json &attributes) {
  Result<NodeLayout> layout = readLayout(op, operands, results);
  if (!layout)
    return layout.error().message();
  Status status = findOp(op)->verify({*layout, attributes});
  return status.ok() ? std::string() : status.error().message();
}

/// The parts a forking node that verifies runs as.
std::vector<std::string_view> partsOf(const char *op, const json &operands, const json &results,
                                      const json &attributes) {
  EXPECT_EQ(check(op, operands, results, attributes), "") << op;
  const NodeLayout layout = layoutOf(op, operands, results);
  EXPECT_NE(findOp(op)->forkParts, nullptr) << op;
  if (!findOp(op)->forkParts)
    return {};
  return findOp(op)->forkParts({layout, attributes});
}

/// readNamedValues: named operands become the flat list in op-table order,
/// one segment per ODS operand (a list's in place), and the table's arity
/// rules hold.
TEST(OpRegistry, ReadsNamedValues) {
  namespace backward = op_table::conv2d_backward;
  const op_table::Op &conv2dBackward = *findOp("conv2d_backward")->table;
  // Ids are unsigned, as the loader's JSON parser reads them.
  std::vector<uint64_t> ids;
  Result<ValueLayout> operands = readNamedValues(conv2dBackward, false,
                                                 {{"output_grad", 5u},
                                                  {"input", 1u},
                                                  {"filter", 2u},
                                                  {"filter_grad_acc", 3u},
                                                  {"bias_grad_acc", 4u}},
                                                 "operand", ids);
  ASSERT_TRUE(operands.ok()) << operands.error().message();
  EXPECT_EQ(ids, (std::vector<uint64_t>{5, 1, 2, 3, 4}));
  ASSERT_EQ(operands->segments.size(), 6u);
  EXPECT_TRUE(operands->has(backward::operand::bias_grad_acc));
  EXPECT_EQ(operands->index(backward::operand::bias_grad_acc), 4u);
  EXPECT_EQ(operands->count(backward::operand::filter), 1u);
  EXPECT_FALSE(operands->has(backward::operand::input_grad_addend));
  EXPECT_EQ(operands->count(backward::operand::input_grad_addend), 0u);
  EXPECT_FALSE(operands->has(99));
  EXPECT_EQ(operands->total(), 5u);
  ids.clear();
  Result<ValueLayout> results = readNamedValues(
      conv2dBackward, true, {{"input_grad", 7u}, {"filter_grad", 8u}, {"bias_grad", 9u}}, "result",
      ids);
  ASSERT_TRUE(results.ok()) << results.error().message();
  EXPECT_EQ(ids, (std::vector<uint64_t>{7, 8, 9}));
  EXPECT_EQ(results->index(backward::result::input_grad), 0u);
  EXPECT_EQ(results->index(backward::result::filter_grad), 1u);
  EXPECT_EQ(results->index(backward::result::bias_grad), 2u);
  ids.clear();
  results = readNamedValues(conv2dBackward, true, {{"filter_grad", 8u}}, "result", ids);
  ASSERT_TRUE(results.ok()) << results.error().message();
  EXPECT_FALSE(results->has(backward::result::input_grad));
  EXPECT_EQ(results->index(backward::result::filter_grad), 0u);
  EXPECT_FALSE(results->has(backward::result::bias_grad));

  // Lists: their ids in place, absent or empty ones of no ids.
  namespace multi = op_table::multi_sgd_update;
  ids.clear();
  operands = readNamedValues(*findOp("multi_sgd_update")->table, false,
                             {{"params", {4u, 5u, 6u}}, {"grads", {7u, 8u, 9u}}, {"lr", 10u}},
                             "operand", ids);
  ASSERT_TRUE(operands.ok()) << operands.error().message();
  EXPECT_EQ(ids, (std::vector<uint64_t>{4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(operands->index(multi::operand::params), 0u);
  EXPECT_EQ(operands->count(multi::operand::params), 3u);
  EXPECT_EQ(operands->index(multi::operand::grads), 3u);
  EXPECT_EQ(operands->count(multi::operand::grads), 3u);
  EXPECT_FALSE(operands->has(multi::operand::momentum_buffers));
  EXPECT_EQ(operands->index(multi::operand::lr), 6u);
  EXPECT_FALSE(operands->has(multi::operand::skip_if));
  EXPECT_EQ(operands->total(), 7u);
  ids.clear();
  results = readNamedValues(*findOp("multi_sgd_update")->table, true,
                            {{"new_values", json::array()}}, "result", ids);
  ASSERT_TRUE(results.ok()) << results.error().message();
  EXPECT_EQ(results->count(multi::result::new_values), 0u);

  auto error = [](const char *op, bool results, const json &object) {
    std::vector<uint64_t> ids;
    Result<ValueLayout> read = readNamedValues(*findOp(op)->table, results, object,
                                               results ? "result" : "operand", ids);
    return read.ok() ? std::string() : read.error().message();
  };
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}, {"filter", 1u}}), "");
  // An unknown name, a missing required one.
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}, {"filter", 1u}, {"foo", 2u}}),
            "operand \"foo\" is not one of conv2d's operands: input, filter, bias?");
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}}),
            "operand \"filter\" is missing (conv2d's operands: input, filter, bias?)");
  EXPECT_EQ(error("conv2d", true, {{"output", 0u}}),
            "result \"output\" is not one of conv2d's results: result");
  EXPECT_EQ(error("conv2d", true, json::object()),
            "result \"result\" is missing (conv2d's results: result)");
  EXPECT_EQ(error("multi_sgd_update", false,
                  {{"params", json::array({0u})}, {"grads", json::array({1u})}}),
            "operand \"lr\" is missing (multi_sgd_update's operands: params[], grads[], "
            "momentum_buffers[], lr, skip_if?)");
  // An optional one given as an array, a list given as a number.
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}, {"filter", 1u}, {"bias", json::array({2u})}}),
            "operand \"bias\" must be a tensor id (a non-negative integer), got array");
  EXPECT_EQ(error("multi_zero", false, {{"inputs", 3u}}),
            "operand \"inputs\" is a list: it must be an array of tensor ids, got number");
  EXPECT_EQ(error("multi_zero", true, {{"results", nullptr}}),
            "result \"results\" is a list: it must be an array of tensor ids, got null");
  // Ids that are not non-negative integers.
  EXPECT_EQ(error("conv2d", false, {{"input", -1}, {"filter", 1u}}),
            "operand \"input\" must be a tensor id (a non-negative integer), got -1");
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}, {"filter", 1.5}}),
            "operand \"filter\" must be a tensor id (a non-negative integer), got 1.5");
  EXPECT_EQ(error("conv2d", false, {{"input", "0"}, {"filter", 1u}}),
            "operand \"input\" must be a tensor id (a non-negative integer), got string");
  EXPECT_EQ(error("multi_zero", false, {{"inputs", {0u, -2}}}),
            "operand \"inputs\"[1] must be a tensor id (a non-negative integer), got -2");
  // Not an object: format 1's positional array.
  EXPECT_EQ(error("conv2d", false, json::array({0u, 1u})),
            "\"operands\" must be an object from name to tensor id (conv2d's operands: "
            "input, filter, bias?), got array");
}

/// The registry alone: what the op table cannot say (attribute ranges, how
/// the present operands and results go together, the sizes of lists).
TEST(OpRegistry, ChecksCountsAndAttributes) {
  json conv = {{"strides", {1, 1}}, {"padding", {1, 1}}, {"dilation", {1, 1}}, {"groups", 1}};
  const json input = named({"input", "filter"});
  const json result = named({"result"});
  EXPECT_EQ(check("conv2d", input, result, conv), "");
  EXPECT_EQ(check("conv2d", named({"input", "filter", "bias"}), result, conv), "");
  EXPECT_EQ(check("conv2d", named({"input", "filter", "bias", "residual"}), result, conv),
            "operand \"residual\" is not one of conv2d's operands: input, filter, bias?");
  json bad = conv;
  bad["strides"] = {1, 0};
  EXPECT_THAT(check("conv2d", input, result, bad),
              HasSubstr("attribute \"strides\" must be positive, got 0 for width"));
  bad = conv;
  bad["padding"] = {-1, 0};
  EXPECT_THAT(check("conv2d", input, result, bad),
              HasSubstr("must be non-negative, got -1 for height"));
  bad = conv;
  bad["groups"] = 0;
  EXPECT_THAT(check("conv2d", input, result, bad),
              HasSubstr("\"groups\" must be at least 1, got 0"));
  bad = conv;
  bad["dilation"] = {1, 1, 1};
  EXPECT_THAT(check("conv2d", input, result, bad), HasSubstr("must be an array of 2 integers"));
  bad = conv;
  bad["groups"] = ~uint64_t(0);
  EXPECT_THAT(check("conv2d", input, result, bad), HasSubstr("\"groups\" must be an integer"));

  // conv2d_backward: results input_grad?, filter_grad, bias_grad?; the bias
  // gradient comes with its accumulator.
  const json weightOnly = named({"output_grad", "input", "filter", "filter_grad_acc"});
  const json withBias =
      named({"output_grad", "input", "filter", "filter_grad_acc", "bias_grad_acc"});
  const json allGrads = named({"input_grad", "filter_grad", "bias_grad"});
  EXPECT_EQ(check("conv2d_backward", weightOnly, named({"filter_grad"}), conv), "");
  EXPECT_EQ(check("conv2d_backward", withBias, named({"filter_grad", "bias_grad"}), conv), "");
  EXPECT_EQ(check("conv2d_backward", withBias, allGrads, conv), "");
  EXPECT_EQ(check("conv2d_backward", withBias, named({"input_grad", "filter_grad"}), conv),
            "operand \"bias_grad_acc\" is present without result \"bias_grad\"");
  EXPECT_EQ(check("conv2d_backward", weightOnly, named({"filter_grad", "bias_grad"}), conv),
            "result \"bias_grad\" is present without operand \"bias_grad_acc\"");
  EXPECT_EQ(check("conv2d_backward", weightOnly, named({"input_grad"}), conv),
            "result \"filter_grad\" is missing (conv2d_backward's results: input_grad?, "
            "filter_grad, bias_grad?)");
  EXPECT_EQ(partsOf("conv2d_backward", withBias, allGrads, conv),
            (std::vector<std::string_view>{"weight_grad", "bias_grad", "input_grad"}));
  EXPECT_EQ(partsOf("conv2d_backward", weightOnly, named({"filter_grad"}), conv),
            (std::vector<std::string_view>{"weight_grad"}));
  // linear_backward: the input gradient is its optional result (no unit
  // attribute), one id.
  const json linearOperands = named({"output_grad", "input", "weight", "weight_grad_acc"});
  EXPECT_EQ(check("linear_backward", linearOperands, named({"input_grad", "weight_grad"}),
                  json::object()),
            "");
  EXPECT_EQ(partsOf("linear_backward", linearOperands, named({"input_grad", "weight_grad"}),
                    json::object()),
            (std::vector<std::string_view>{"weight_grad", "input_grad"}));
  json listed = named({"input_grad", "weight_grad"});
  listed["input_grad"] = json::array({0});
  EXPECT_EQ(check("linear_backward", linearOperands, listed, json::object()),
            "result \"input_grad\" must be a tensor id (a non-negative integer), got array");
  EXPECT_EQ(check("linear_backward", named({"output_grad", "input", "weight", "weight_grad_acc",
                                            "bias_grad_acc"}),
                  named({"weight_grad"}), json::object()),
            "operand \"bias_grad_acc\" is present without result \"bias_grad\"");

  const json found = named({"found_non_finite"});
  EXPECT_EQ(check("check_finite", named({"inputs[7]"}), found, json::object()), "");
  EXPECT_EQ(check("check_finite", named({"inputs[0]"}), found, json::object()),
            "operand \"inputs\" is empty (it needs at least one tensor)");
  EXPECT_EQ(check("check_finite", json::object(), found, json::object()),
            "operand \"inputs\" is empty (it needs at least one tensor)");

  // sgd_update: the momentum buffer and its new value exactly with momentum.
  json sgd = {{"momentum", 0.0}, {"weight_decay", 0.0}};
  const json plainSgd = named({"param", "grad", "lr"});
  const json buffered = named({"param", "grad", "momentum_buffer", "lr"});
  const json newParam = named({"new_param"});
  const json newBoth = named({"new_param", "new_momentum_buffer"});
  EXPECT_EQ(check("sgd_update", plainSgd, newParam, sgd), "");
  EXPECT_EQ(check("sgd_update", named({"param", "grad", "lr", "skip_if"}), newParam, sgd), "");
  EXPECT_EQ(check("sgd_update", buffered, newBoth, sgd),
            "with momentum 0 takes no \"momentum_buffer\"");
  EXPECT_EQ(check("sgd_update", plainSgd, newBoth, sgd),
            "with momentum 0 produces no \"new_momentum_buffer\"");
  sgd["momentum"] = 0.9;
  EXPECT_EQ(check("sgd_update", buffered, newBoth, sgd), "");
  EXPECT_EQ(check("sgd_update", named({"param", "grad", "momentum_buffer", "lr", "skip_if"}),
                  newBoth, sgd),
            "");
  EXPECT_EQ(check("sgd_update", buffered, newParam, sgd),
            "with momentum 0.9 produces result \"new_momentum_buffer\"");
  EXPECT_EQ(check("sgd_update", plainSgd, newBoth, sgd),
            "with momentum 0.9 needs operand \"momentum_buffer\"");
  EXPECT_THAT(check("sgd_update", plainSgd, newParam,
                    {{"momentum", 0.0}, {"weight_decay", 0.0}, {"nesterov", true}}),
              HasSubstr("Nesterov momentum needs momentum > 0"));

  // multi_sgd_update: params[n], grads[n], momentum_buffers[n] (with
  // momentum), lr, skip_if? -> new_values: the n new params, then the n new
  // buffers.
  json multi = {{"momentum", 0.9}, {"weight_decay", 5e-4}, {"nesterov", true}};
  const json six = named({"new_values[6]"});
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[3]", "momentum_buffers[3]", "lr"}), six, multi),
            "");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[3]", "momentum_buffers[3]", "lr", "skip_if"}), six,
                  multi),
            "");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[2]", "momentum_buffers[3]", "lr"}), six, multi),
            "operand \"grads\" has 2 tensors, expected 3 (one per param)");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[3]", "momentum_buffers[2]", "lr"}), six, multi),
            "operand \"momentum_buffers\" has 2 tensors, expected 3 (one per param)");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[3]", "momentum_buffers[3]", "lr"}),
                  named({"new_values[5]"}), multi),
            "result \"new_values\" has 5 tensors, expected 6 (the new params, then the new "
            "momentum buffers)");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[0]", "grads[0]", "momentum_buffers[0]", "lr"}),
                  named({"new_values[0]"}), multi),
            "operand \"params\" is empty (it needs at least one tensor)");
  json plain = {{"momentum", 0.0}, {"weight_decay", 0.0}};
  const json two = named({"new_values[2]"});
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "lr"}), two, plain), "");
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "momentum_buffers[0]", "lr"}),
                  two, plain),
            "");
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "momentum_buffers[2]", "lr"}),
                  two, plain),
            "operand \"momentum_buffers\" has 2 tensors, expected 0 (momentum 0 keeps none)");
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "lr"}),
                  named({"new_values[4]"}), plain),
            "result \"new_values\" has 4 tensors, expected 2 (the new params)");
  json number = two;
  number["new_values"] = 7;
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "lr"}), number, plain),
            "result \"new_values\" is a list: it must be an array of tensor ids, got number");
  const json oneParam = named({"params[1]", "grads[1]", "lr"});
  const json one = named({"new_values[1]"});
  EXPECT_THAT(check("multi_sgd_update", oneParam, one,
                    {{"momentum", 0.0}, {"weight_decay", 0.0}, {"nesterov", true}}),
              HasSubstr("Nesterov momentum needs momentum > 0"));
  EXPECT_THAT(check("multi_sgd_update", oneParam, one, {{"momentum", 0.0}, {"weight_decay", -1.0}}),
              HasSubstr("\"weight_decay\" must be non-negative"));

  // multi_adamw_update: params, grads, exp_avgs, exp_avg_sqs (n each), lr,
  // step, skip_if? -> new_values[3n].
  json adam = {{"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8}, {"weight_decay", 0.01}};
  const json adamResults = named({"new_values[6]"});
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[2]", "lr", "step"}),
                  adamResults, adam),
            "");
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[2]", "lr", "step",
                         "skip_if"}),
                  adamResults, adam),
            "");
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[1]", "lr", "step"}),
                  adamResults, adam),
            "operand \"exp_avg_sqs\" has 1 tensor, expected 2 (one per param)");
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[2]", "lr", "step"}),
                  named({"new_values[5]"}), adam),
            "result \"new_values\" has 5 tensors, expected 6 (the new params, exp_avgs and "
            "exp_avg_sqs)");
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[2]", "lr"}),
                  adamResults, adam),
            "operand \"step\" is missing (multi_adamw_update's operands: params[], grads[], "
            "exp_avgs[], exp_avg_sqs[], lr, step, skip_if?)");
  EXPECT_THAT(check("multi_adamw_update",
                    named({"params[1]", "grads[1]", "exp_avgs[1]", "exp_avg_sqs[1]", "lr", "step"}),
                    named({"new_values[3]"}),
                    {{"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 0.0}, {"weight_decay", 0.0}}),
              HasSubstr("\"epsilon\" must be positive"));

  // multi_lars_update: params, grads, momentum_buffers (n each), lr,
  // skip_if? -> new_values[2n].
  json lars = {{"momentum", 0.9},
               {"weight_decay", 1e-4},
               {"trust_coefficient", 1e-3},
               {"epsilon", 1e-9}};
  const json larsOperands = named({"params[2]", "grads[2]", "momentum_buffers[2]", "lr"});
  const json larsResults = named({"new_values[4]"});
  EXPECT_EQ(check("multi_lars_update", larsOperands, larsResults, lars), "");
  EXPECT_EQ(check("multi_lars_update",
                  named({"params[2]", "grads[2]", "momentum_buffers[2]", "lr", "skip_if"}),
                  larsResults, lars),
            "");
  EXPECT_EQ(check("multi_lars_update",
                  named({"params[2]", "grads[2]", "momentum_buffers[1]", "lr"}), larsResults, lars),
            "operand \"momentum_buffers\" has 1 tensor, expected 2 (one per param)");
  EXPECT_EQ(check("multi_lars_update", larsOperands, named({"new_values[3]"}), lars),
            "result \"new_values\" has 3 tensors, expected 4 (the new params, then the new "
            "momentum buffers)");
  EXPECT_EQ(check("multi_lars_update",
                  named({"params[0]", "grads[0]", "momentum_buffers[0]", "lr"}),
                  named({"new_values[0]"}), lars),
            "operand \"params\" is empty (it needs at least one tensor)");
  const json larsOne = named({"params[1]", "grads[1]", "momentum_buffers[1]", "lr"});
  const json larsOneResults = named({"new_values[2]"});
  lars["trust_coefficient"] = 0.0;
  EXPECT_THAT(check("multi_lars_update", larsOne, larsOneResults, lars),
              HasSubstr("\"trust_coefficient\" must be positive"));
  lars["trust_coefficient"] = 1e-3;
  lars["momentum"] = 1.0;
  EXPECT_THAT(check("multi_lars_update", larsOne, larsOneResults, lars),
              HasSubstr("\"momentum\" must be in [0, 1), got 1"));

  // dropout_train: input and the device step; its stream is step * count + index.
  json dropout = {{"p", 0.5}, {"index", 1}, {"count", 2}};
  const json dropoutOperands = named({"input", "step"});
  const json dropoutResults = named({"result", "mask"});
  EXPECT_EQ(check("dropout_train", dropoutOperands, dropoutResults, dropout), "");
  EXPECT_EQ(check("dropout_train", named({"input"}), dropoutResults, dropout),
            "operand \"step\" is missing (dropout_train's operands: input, step)");
  EXPECT_THAT(check("dropout_train", dropoutOperands, dropoutResults,
                    {{"p", 1.0}, {"index", 0}, {"count", 1}}),
              HasSubstr("\"p\" must be in [0, 1), got 1"));
  EXPECT_THAT(check("dropout_train", dropoutOperands, dropoutResults,
                    {{"p", 0.5}, {"index", 2}, {"count", 2}}),
              HasSubstr("\"index\" must be below \"count\" (2), got 2"));
  EXPECT_THAT(check("dropout_train", dropoutOperands, dropoutResults, {{"p", 0.5}, {"count", 2}}),
              HasSubstr("\"index\" is missing"));
  EXPECT_THAT(check("dropout_train", dropoutOperands, dropoutResults,
                    {{"p", 0.5}, {"index", 0}, {"count", 0}}),
              HasSubstr("\"count\" must be at least 1, got 0"));
  // stochastic_depth_train: keyed as dropout_train, but p = 1 (every sample
  // dropped) is allowed; its backward reads the per-sample mask.
  const json depthResults = named({"result", "mask"});
  EXPECT_EQ(check("stochastic_depth_train", dropoutOperands, depthResults,
                  {{"p", 1.0}, {"index", 0}, {"count", 1}}),
            "");
  EXPECT_THAT(check("stochastic_depth_train", dropoutOperands, depthResults,
                    {{"p", 1.5}, {"index", 0}, {"count", 1}}),
              HasSubstr("\"p\" must be in [0, 1], got 1.5"));
  EXPECT_THAT(check("stochastic_depth_train", dropoutOperands, depthResults,
                    {{"p", 0.5}, {"index", 3}, {"count", 3}}),
              HasSubstr("\"index\" must be below \"count\" (3), got 3"));
  EXPECT_EQ(check("stochastic_depth_train", named({"input"}), depthResults, dropout),
            "operand \"step\" is missing (stochastic_depth_train's operands: input, step)");
  EXPECT_EQ(check("stochastic_depth_backward", named({"output_grad", "mask"}),
                  named({"input_grad"}), json::object()),
            "");
  // hardtanh and its backward: finite bounds, min_val below max_val.
  EXPECT_EQ(check("hardtanh", named({"input"}), result, {{"min_val", 0.0}, {"max_val", 6.0}}),
            "");
  EXPECT_THAT(check("hardtanh", named({"input"}), result, {{"min_val", 6.0}, {"max_val", 6.0}}),
              HasSubstr("attribute \"min_val\" (6) must be below \"max_val\" (6)"));
  EXPECT_THAT(check("hardtanh", named({"input"}), result, {{"min_val", 0.0}}),
              HasSubstr("attribute \"max_val\" is missing"));
  EXPECT_THAT(check("hardtanh_backward", named({"output_grad", "saved"}), named({"input_grad"}),
                    {{"min_val", 1.0}, {"max_val", -1.0}}),
              HasSubstr("attribute \"min_val\" (1) must be below \"max_val\" (-1)"));
  EXPECT_EQ(check("hardtanh_backward", named({"output_grad", "saved"}), named({"input_grad"}),
                  {{"min_val", -1.0}, {"max_val", 1.0}}),
            "");
  // The model-level ops have no step to key their masks: no program may hold them.
  EXPECT_EQ(findOp("dropout"), nullptr);
  EXPECT_EQ(findOp("stochastic_depth"), nullptr);
  EXPECT_THAT(check("batch_norm", named({"input", "weight", "bias", "running_mean", "running_var"}),
                    result, {{"epsilon", 1e-5}, {"momentum", 1.1}}),
              HasSubstr("\"momentum\" must be in [0, 1], got 1.1"));
  EXPECT_THAT(check("batch_norm_train", named({"input", "weight", "bias"}),
                    named({"result", "batch_mean", "batch_inv_std"}), {{"epsilon", 0}}),
              HasSubstr("must be positive"));
  EXPECT_THAT(check("max_pool2d", named({"input"}), result,
                    {{"kernel", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 2}}}),
              HasSubstr("\"padding\" 2 exceeds half the kernel size 2 for width"));
  EXPECT_THAT(check("update_loss_scale", named({"scale", "good_steps", "found_non_finite"}),
                    named({"new_scale", "new_good_steps"}),
                    {{"growth", 2.0}, {"backoff", 0.5}, {"growth_interval", 0}}),
              HasSubstr("\"growth_interval\" must be at least 1"));
  EXPECT_THAT(check("update_running_stats",
                    named({"running_mean", "running_var", "batch_mean", "batch_inv_std"}),
                    named({"new_running_mean", "new_running_var"}),
                    {{"epsilon", 1e-5}, {"momentum", 0.1}, {"count", 1}}),
              HasSubstr("\"count\" must be at least 2"));

  // cbr_backward: ten operands, then a ReLU mask or none, an input
  // prologue, an input gradient addend; its input gradient is an optional
  // result.
  json cbr = conv;
  const json cbrResults =
      named({"conv_output_grad", "input_grad", "filter_grad", "gamma_grad", "beta_grad"});
  const json cbrNoInputGrad = named({"conv_output_grad", "filter_grad", "gamma_grad", "beta_grad"});
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_output"}), cbrResults, cbr), "");
  EXPECT_EQ(partsOf("cbr_backward", cbrBackwardOperands({"relu_output"}), cbrResults, cbr),
            (std::vector<std::string_view>{"bn_grad", "weight_grad", "input_grad"}));
  EXPECT_EQ(partsOf("cbr_backward", cbrBackwardOperands({"relu_output"}), cbrNoInputGrad, cbr),
            (std::vector<std::string_view>{"bn_grad", "weight_grad"}));
  EXPECT_EQ(findOp("relu")->forkParts, nullptr);
  EXPECT_EQ(findOp("rn.relu"), nullptr);
  EXPECT_EQ(check("all_reduce_mean", named({"inputs[2]"}), named({"results[2]"}), json::object()),
            "");
  EXPECT_EQ(check("all_reduce_mean", named({"inputs[2]"}), named({"results[1]"}), json::object()),
            "result \"results\" has 1 tensor, expected 2 (one per input)");
  EXPECT_EQ(check("multi_zero", named({"inputs[3]"}), named({"results[3]"}), json::object()), "");
  EXPECT_EQ(check("multi_zero", named({"inputs[0]"}), named({"results[0]"}), json::object()),
            "operand \"inputs\" is empty (it needs at least one tensor)");
  EXPECT_EQ(check("multi_unscale", named({"grads[2]", "scale"}), named({"results[2]"}),
                  json::object()),
            "");
  EXPECT_EQ(check("multi_unscale", named({"grads[2]", "scale"}), named({"results[3]"}),
                  json::object()),
            "result \"results\" has 3 tensors, expected 2 (one per grad)");
  EXPECT_EQ(check("multi_unscale", named({"grads[0]", "scale"}), named({"results[0]"}),
                  json::object()),
            "operand \"grads\" is empty (it needs at least one tensor)");
  EXPECT_EQ(check("multi_cast", named({"inputs[2]"}), named({"results[2]"}), json::object()), "");
  EXPECT_EQ(check("multi_cast", named({"inputs[2]"}), named({"results[1]"}), json::object()),
            "result \"results\" has 1 tensor, expected 2 (one per input)");
  json decay = {{"decay", 0.5}};
  EXPECT_EQ(check("multi_ema_update", named({"averages[2]", "params[2]"}), named({"results[2]"}),
                  decay),
            "");
  EXPECT_EQ(check("multi_ema_update", named({"averages[2]", "params[1]"}), named({"results[2]"}),
                  decay),
            "operand \"params\" has 1 tensor, expected 2 (one per average)");
  EXPECT_EQ(check("multi_ema_update", named({"averages[2]", "params[2]"}), named({"results[1]"}),
                  decay),
            "result \"results\" has 1 tensor, expected 2 (one per average)");

  // The input gradient's addend (rn-fold-gradient-adds): an operand of its
  // own beside the bias accumulator, and only with an input gradient.
  namespace conv2d_backward = op_table::conv2d_backward;
  const json addend =
      named({"output_grad", "input", "filter", "filter_grad_acc", "input_grad_addend"});
  const json addendAndBias = named(
      {"output_grad", "input", "filter", "filter_grad_acc", "bias_grad_acc", "input_grad_addend"});
  EXPECT_EQ(check("conv2d_backward", addend, named({"input_grad", "filter_grad"}), conv), "");
  EXPECT_EQ(check("conv2d_backward", addend, allGrads, conv),
            "result \"bias_grad\" is present without operand \"bias_grad_acc\"");
  EXPECT_EQ(check("conv2d_backward", addendAndBias, allGrads, conv), "");
  EXPECT_EQ(check("conv2d_backward", addend, named({"filter_grad"}), conv),
            "has an input gradient addend but no input_grad result");
  NodeLayout convLayout = layoutOf("conv2d_backward", addend, named({"input_grad", "filter_grad"}));
  EXPECT_TRUE(convLayout.operands.has(conv2d_backward::operand::input_grad_addend));
  EXPECT_EQ(convLayout.operands.index(conv2d_backward::operand::input_grad_addend), 4u);
  EXPECT_FALSE(convLayout.operands.has(conv2d_backward::operand::bias_grad_acc));
  convLayout = layoutOf("conv2d_backward", addendAndBias, allGrads);
  EXPECT_EQ(convLayout.operands.index(conv2d_backward::operand::bias_grad_acc), 4u);
  EXPECT_EQ(convLayout.operands.index(conv2d_backward::operand::input_grad_addend), 5u);
  EXPECT_FALSE(layoutOf("conv2d_backward", withBias, allGrads)
                   .operands.has(conv2d_backward::operand::input_grad_addend));

  // cbr_backward's ReLU mask: relu_output, or relu_beta (rn-recompute-
  // relu-mask), or none; never both.
  namespace cbr_backward = op_table::cbr_backward;
  const json cbrAddend = cbrBackwardOperands({"relu_output", "input_grad_addend"});
  EXPECT_EQ(check("cbr_backward", cbrAddend, cbrResults, cbr), "");
  NodeLayout cbrLayout = layoutOf("cbr_backward", cbrAddend, cbrResults);
  EXPECT_TRUE(cbrLayout.operands.has(cbr_backward::operand::input_grad_addend));
  EXPECT_EQ(cbrLayout.operands.index(cbr_backward::operand::input_grad_addend), 11u);
  EXPECT_EQ(cbrBackwardReluMask(cbrLayout), ReluMask::output);
  EXPECT_EQ(check("cbr_backward", cbrAddend, cbrNoInputGrad, cbr),
            "has an input gradient addend but no input_grad result");
  const json recomputed = cbrBackwardOperands({"relu_beta", "input_grad_addend"});
  EXPECT_EQ(check("cbr_backward", recomputed, cbrResults, cbr), "");
  cbrLayout = layoutOf("cbr_backward", recomputed, cbrResults);
  EXPECT_EQ(cbrBackwardReluMask(cbrLayout), ReluMask::recomputed);
  EXPECT_TRUE(cbrLayout.operands.has(cbr_backward::operand::input_grad_addend));
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta"}), cbrResults, cbr), "");
  cbrLayout = layoutOf("cbr_backward", cbrBackwardOperands({"relu_beta"}), cbrResults);
  EXPECT_EQ(cbrBackwardReluMask(cbrLayout), ReluMask::recomputed);
  EXPECT_FALSE(cbrLayout.operands.has(cbr_backward::operand::input_grad_addend));
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({}), cbrResults, cbr), "");
  EXPECT_EQ(cbrBackwardReluMask(layoutOf("cbr_backward", cbrBackwardOperands({}), cbrResults)),
            ReluMask::none);
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_output", "relu_beta"}), cbrResults,
                  cbr),
            "has both ReLU masks (relu_output and relu_beta); it takes one");
  EXPECT_EQ(check("pad_channels", named({"input"}), result, json::object()), "");
  EXPECT_EQ(check("pad_channels", named({"input", "filter"}), result, json::object()),
            "operand \"filter\" is not one of pad_channels's operands: input, mean?, std?");
  // A normalizing pad (uint8 images) has both vectors.
  EXPECT_EQ(check("pad_channels", named({"input", "mean", "std"}), result, json::object()), "");
  EXPECT_EQ(check("pad_channels", named({"input", "mean"}), result, json::object()),
            "operand \"mean\" is present without operand \"std\"");
  EXPECT_EQ(check("normalize_images", named({"input", "mean", "std"}), result, json::object()),
            "");
  EXPECT_EQ(allOps().size(), 71u);
}

/// rn-fuse-bn-prologue's forms: cbr_forward and conv_bn_stats with or
/// without a prologue pair, bn_scale_bias, and cbr_backward's input
/// prologue (input_scale and input_bias) and prologue_mask.
TEST(OpRegistry, ChecksBnPrologueForms) {
  const json conv = {{"strides", {1, 1}}, {"padding", {1, 1}}, {"dilation", {1, 1}},
                     {"groups", 1},       {"epsilon", 1e-5}};

  // cbr_forward: input, filter, gamma, beta, and prologue_scale with
  // prologue_bias or neither.
  namespace cbr_forward = op_table::cbr_forward;
  json forward = conv;
  forward["relu"] = true;
  const json forwardResults = named({"result", "conv_output", "batch_mean", "batch_inv_std"});
  const json plain = named({"input", "filter", "gamma", "beta"});
  const json prologue =
      named({"input", "filter", "gamma", "beta", "prologue_scale", "prologue_bias"});
  EXPECT_EQ(check("cbr_forward", plain, forwardResults, forward), "");
  EXPECT_EQ(check("cbr_forward", prologue, forwardResults, forward), "");
  EXPECT_EQ(check("cbr_forward", named({"input", "filter", "gamma", "beta", "prologue_scale"}),
                  forwardResults, forward),
            "operand \"prologue_scale\" is present without operand \"prologue_bias\"");
  EXPECT_EQ(check("cbr_forward", named({"input", "filter", "gamma", "beta", "prologue_bias"}),
                  forwardResults, forward),
            "operand \"prologue_bias\" is present without operand \"prologue_scale\"");
  json listed = prologue;
  listed["prologue_scale"] = json::array({4, 5});
  EXPECT_EQ(check("cbr_forward", listed, forwardResults, forward),
            "operand \"prologue_scale\" must be a tensor id (a non-negative integer), got array");
  EXPECT_EQ(check("cbr_forward", prologue, named({"result", "conv_output", "batch_mean"}), forward),
            "result \"batch_inv_std\" is missing (cbr_forward's results: result, conv_output, "
            "batch_mean, batch_inv_std)");
  // Where the prologue is in the flat list.
  NodeLayout layout = layoutOf("cbr_forward", prologue, forwardResults);
  EXPECT_TRUE(layout.operands.has(cbr_forward::operand::prologue_scale));
  EXPECT_EQ(layout.operands.index(cbr_forward::operand::prologue_scale), 4u);
  EXPECT_EQ(layout.operands.index(cbr_forward::operand::prologue_bias), 5u);
  EXPECT_FALSE(layoutOf("cbr_forward", plain, forwardResults)
                   .operands.has(cbr_forward::operand::prologue_scale));
  // The prologue needs an ungrouped convolution (the dialect's verifier).
  forward["groups"] = 2;
  EXPECT_EQ(check("cbr_forward", plain, forwardResults, forward), "");
  EXPECT_EQ(check("cbr_forward", prologue, forwardResults, forward),
            "has a prologue with \"groups\" 2 (the prologue needs groups 1)");

  // conv_bn_stats: input, filter, and the prologue or not.
  namespace conv_bn_stats = op_table::conv_bn_stats;
  const json statsResults = named({"conv_output", "batch_mean", "batch_inv_std"});
  const json statsPlain = named({"input", "filter"});
  const json statsPrologue = named({"input", "filter", "prologue_scale", "prologue_bias"});
  EXPECT_EQ(check("conv_bn_stats", statsPlain, statsResults, conv), "");
  EXPECT_EQ(check("conv_bn_stats", statsPrologue, statsResults, conv), "");
  EXPECT_EQ(check("conv_bn_stats", named({"input", "filter", "prologue_scale"}), statsResults,
                  conv),
            "operand \"prologue_scale\" is present without operand \"prologue_bias\"");
  EXPECT_EQ(check("conv_bn_stats", statsPrologue,
                  named({"conv_output", "batch_mean", "batch_inv_std", "result"}), conv),
            "result \"result\" is not one of conv_bn_stats's results: conv_output, "
            "batch_mean, batch_inv_std");
  layout = layoutOf("conv_bn_stats", statsPrologue, statsResults);
  EXPECT_EQ(layout.operands.index(conv_bn_stats::operand::prologue_scale), 2u);
  EXPECT_EQ(layout.operands.index(conv_bn_stats::operand::prologue_bias), 3u);
  EXPECT_FALSE(layoutOf("conv_bn_stats", statsPlain, statsResults)
                   .operands.has(conv_bn_stats::operand::prologue_scale));
  json stats = conv;
  stats.erase("epsilon");
  EXPECT_THAT(check("conv_bn_stats", statsPlain, statsResults, stats),
              HasSubstr("\"epsilon\" is missing"));
  stats = conv;
  stats["groups"] = 4;
  EXPECT_EQ(check("conv_bn_stats", statsPlain, statsResults, stats), "");
  EXPECT_THAT(check("conv_bn_stats", statsPrologue, statsResults, stats),
              HasSubstr("the prologue needs groups 1"));

  // bn_scale_bias: batch_mean, batch_inv_std, gamma, beta -> scale, bias.
  const json scaleBiasOperands = named({"batch_mean", "batch_inv_std", "gamma", "beta"});
  EXPECT_EQ(check("bn_scale_bias", scaleBiasOperands, named({"scale", "bias"}), json::object()),
            "");
  EXPECT_EQ(check("bn_scale_bias", named({"batch_mean", "batch_inv_std", "gamma"}),
                  named({"scale", "bias"}), json::object()),
            "operand \"beta\" is missing (bn_scale_bias's operands: batch_mean, "
            "batch_inv_std, gamma, beta)");
  EXPECT_EQ(check("bn_scale_bias", scaleBiasOperands, named({"scale"}), json::object()),
            "result \"bias\" is missing (bn_scale_bias's results: scale, bias)");

  // cbr_backward's input prologue (input_scale, input_bias) after its ReLU
  // mask, before the addend.
  namespace cbr_backward = op_table::cbr_backward;
  json backward = conv;
  backward.erase("epsilon");
  const json backwardResults =
      named({"conv_output_grad", "input_grad", "filter_grad", "gamma_grad", "beta_grad"});
  const json recomputed = cbrBackwardOperands({"relu_beta", "input_scale", "input_bias"});
  EXPECT_EQ(check("cbr_backward", recomputed, backwardResults, backward), "");
  layout = layoutOf("cbr_backward", recomputed, backwardResults);
  EXPECT_TRUE(layout.operands.has(cbr_backward::operand::input_scale));
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_scale), 11u);
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_bias), 12u);
  EXPECT_EQ(cbrBackwardReluMask(layout), ReluMask::recomputed);
  EXPECT_FALSE(layout.operands.has(cbr_backward::operand::input_grad_addend));
  EXPECT_FALSE(cbrBackwardPrologueMask(backward));
  // With the mask recomputed in the prologue's rounding.
  backward["prologue_mask"] = true;
  EXPECT_EQ(check("cbr_backward", recomputed, backwardResults, backward), "");
  EXPECT_TRUE(cbrBackwardPrologueMask(backward));
  EXPECT_EQ(partsOf("cbr_backward", recomputed, backwardResults, backward),
            (std::vector<std::string_view>{"bn_grad", "weight_grad", "input_grad"}));
  backward.erase("prologue_mask");
  // With relu_output and an addend: input_scale is operand 11, the addend
  // the last.
  const json full =
      cbrBackwardOperands({"relu_output", "input_scale", "input_bias", "input_grad_addend"});
  EXPECT_EQ(check("cbr_backward", full, backwardResults, backward), "");
  layout = layoutOf("cbr_backward", full, backwardResults);
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_scale), 11u);
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_grad_addend), 13u);
  EXPECT_EQ(layout.operands.total(), 14u);
  EXPECT_EQ(cbrBackwardReluMask(layout), ReluMask::output);
  EXPECT_TRUE(layout.operands.has(cbr_backward::operand::input_grad_addend));
  // No ReLU: input_scale is operand 10.
  const json noRelu = cbrBackwardOperands({"input_scale", "input_bias"});
  EXPECT_EQ(check("cbr_backward", noRelu, backwardResults, backward), "");
  layout = layoutOf("cbr_backward", noRelu, backwardResults);
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_scale), 10u);
  EXPECT_EQ(cbrBackwardReluMask(layout), ReluMask::none);
  // No input prologue.
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta"}), backwardResults, backward),
            "");
  EXPECT_FALSE(layoutOf("cbr_backward", cbrBackwardOperands({"relu_beta"}), backwardResults)
                   .operands.has(cbr_backward::operand::input_scale));
  // Half an input prologue.
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta", "input_scale"}),
                  backwardResults, backward),
            "operand \"input_scale\" is present without operand \"input_bias\"");
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta", "input_bias"}),
                  backwardResults, backward),
            "operand \"input_bias\" is present without operand \"input_scale\"");
  // prologue_mask only with relu_recompute (relu_beta).
  backward["prologue_mask"] = true;
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_output", "input_scale", "input_bias"}),
                  backwardResults, backward),
            "has prologue_mask without relu_recompute");
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({}), backwardResults, backward),
            "has prologue_mask without relu_recompute");
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta"}), backwardResults, backward),
            "");
  backward["prologue_mask"] = 1;
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta"}), backwardResults, backward),
            "attribute \"prologue_mask\" must be a boolean, got number");
  EXPECT_FALSE(cbrBackwardPrologueMask(backward));
}

//===----------------------------------------------------------------------===//
// Events, schedules and state
//===----------------------------------------------------------------------===//

TEST(Artifact, RejectsMissingEvent) {
  json program = validProgram();
  program["functions"][0]["subgraphs"][1]["nodes"].erase(2); // record(1)
  EXPECT_THAT(programError(program),
              HasSubstr("function train_step, subgraph FWD_BWD, node 1 (event_wait): waits on "
                        "event 1, which no node of function train_step records"));

  program = validProgram();
  node(program, 2, 6)["event"] = 3;
  EXPECT_THAT(programError(program),
              HasSubstr("node 6 (event_record): event 3 is not below num_events 3"));

  program = validProgram();
  node(program, 2, 1)["distance"] = 1; // ZERO_GRAD is not double-buffered
  EXPECT_THAT(programError(program),
              HasSubstr("distance 1 needs double-buffered subgraphs on both sides"));

  program = validProgram();
  program["num_events"] = uint64_t(1) << 40;
  EXPECT_THAT(programError(program), HasSubstr("exceeds the limit"));
}

TEST(Artifact, RejectsVariantMismatch) {
  json program = validProgram();
  program["schedules"][0]["steps"][1]["variant"] = "a";
  EXPECT_THAT(programError(program),
              HasSubstr("schedule train_even, step 1: launches subgraph ZERO_GRAD with "
                        "variant a, but it is not double-buffered"));

  program = validProgram();
  program["schedules"][0]["steps"][2].erase("variant");
  EXPECT_THAT(programError(program),
              HasSubstr("step 2: launches double-buffered subgraph FWD_BWD without a variant"));

  program = validProgram();
  program["schedules"][0]["steps"][0]["launch"] = "EVAL";
  EXPECT_THAT(programError(program),
              HasSubstr("launches unknown subgraph \"EVAL\" (not in function train_step)"));

  program = validProgram();
  program["schedules"][0]["steps"][0]["variant"] = "c";
  EXPECT_THAT(programError(program), HasSubstr("variant must be \"a\" or \"b\""));
}

TEST(Artifact, RejectsMissingParameterTensor) {
  std::vector<RawTensor> tensors = validTensors();
  tensors.pop_back(); // fc.bias
  EXPECT_THAT(fileError(artifactBytes(validProgram(), tensors)),
              HasSubstr("state fc.bias: the artifact has no tensor \"fc.bias\" with the "
                        "initial value of this parameter"));

  tensors = validTensors();
  tensors.push_back({"fc2.weight", "F32", {1}, floats({0})});
  EXPECT_THAT(fileError(artifactBytes(validProgram(), tensors)),
              HasSubstr("the artifact's tensor \"fc2.weight\" is not a state entry"));
}

TEST(Artifact, RejectsDtypeMismatch) {
  std::vector<RawTensor> tensors = validTensors();
  tensors[0].dtype = "F16";
  tensors[0].data.resize(64);
  EXPECT_THAT(fileError(artifactBytes(validProgram(), tensors)),
              HasSubstr("state fc.weight: the artifact's tensor is F16 [4, 8], but the state "
                        "is f32 [4, 8]"));

  tensors = validTensors();
  tensors[0].shape = {8, 4};
  EXPECT_THAT(fileError(artifactBytes(validProgram(), tensors)),
              HasSubstr("is F32 [8, 4], but the state is f32 [4, 8]"));
}

TEST(Artifact, RejectsInconsistentState) {
  json program = validProgram();
  program["functions"][0]["tensors"][19]["slot"] = slot("weights", 256, 128);
  program["functions"][0]["tensors"][21]["slot"] = slot("weights", 0, 16);
  EXPECT_THAT(programError(program),
              HasSubstr("state result fc.weight: tensor 19 lives at weights+256 (128 bytes), "
                        "but it must be written in place of its argument at weights+0"));

  program = validProgram();
  program["functions"][0]["state"][0]["name"] = "fc.kernel";
  EXPECT_THAT(programError(program), HasSubstr("state argument fc.kernel: no state entry"));

  program = validProgram();
  program["state"][2]["of"] = "grad.fc.bias";
  EXPECT_THAT(programError(program),
              HasSubstr("state grad.fc.weight: \"of\" names \"grad.fc.bias\", which is not a parameter"));

  program = validProgram();
  program["state"][0]["role"] = "weights";
  EXPECT_THAT(programError(program), HasSubstr("state fc.weight: unknown role \"weights\""));
}

#ifdef RN_TEST_INPUTS_DIR
/// Artifacts written by rn-compile (test/runtime/Inputs) pass the validator:
/// every checked-in one is of this format, and each op node's flat lists
/// are what its layout says.
TEST(Artifact, LoadsCompiledArtifacts) {
  std::vector<std::filesystem::path> paths;
  for (const auto &entry : std::filesystem::directory_iterator(RN_TEST_INPUTS_DIR))
    if (entry.path().extension() == ".rnx")
      paths.push_back(entry.path());
  EXPECT_FALSE(paths.empty()) << "no .rnx in " << RN_TEST_INPUTS_DIR;
  for (const std::filesystem::path &path : paths) {
    const std::string name = path.filename().string();
    Result<Artifact> loaded = loadArtifact(path.string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    EXPECT_EQ(loaded->program.version, kArtifactVersion) << name;
    EXPECT_NE(loaded->program.findFunction("train_step"), nullptr) << name;
    EXPECT_FALSE(loaded->program.schedules.empty()) << name;
    for (const Function &function : loaded->program.functions)
      for (const Subgraph &subgraph : function.subgraphs)
        for (const Node &node : subgraph.nodes)
          if (node.kind == Node::Kind::op) {
            ASSERT_NE(node.info, nullptr) << name << ": " << node.op;
            EXPECT_EQ(node.layout.operands.segments.size(), node.info->table->numOperands)
                << name << ": " << node.op;
            EXPECT_EQ(node.layout.results.segments.size(), node.info->table->numResults)
                << name << ": " << node.op;
            EXPECT_EQ(node.layout.operands.total(), node.operands.size())
                << name << ": " << node.op;
            EXPECT_EQ(node.layout.results.total(), node.results.size())
                << name << ": " << node.op;
          }
  }
}
#endif

/// Writes the valid artifact and program as fuzzing seeds when asked
/// (RN_FUZZ_SEED_DIR=dir), see docs/artifact.md "Fuzzing".
TEST(Artifact, WritesFuzzSeeds) {
  const char *dir = std::getenv("RN_FUZZ_SEED_DIR");
  if (!dir)
    GTEST_SKIP() << "set RN_FUZZ_SEED_DIR to write the fuzzing seeds";
  std::filesystem::create_directories(dir);
  std::ofstream(std::string(dir) + "/mlp.rnx", std::ios::binary)
      << artifactBytes(validProgram());
  std::ofstream(std::string(dir) + "/mlp.program.json") << validProgram().dump();
}

} // namespace
} // namespace rn
