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
#include "runtime/core/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

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
  json linearBackward = op("linear_backward", "comp1", {16, 3, 6, 12, 13}, {17, 18});
  linearBackward["parts"] = {{{"role", "weight_grad"}, {"stream", "comp1"}},
                             {{"role", "bias_grad"}, {"stream", "comp2"}}};
  linearBackward["part_waits"] = json::array();
  json subgraphs = json::array({
      {{"name", "TRANSFER"}, {"primary", "trans"}, {"double_buffered", true},
       {"nodes", {op("host_to_device", "trans", {0}, {3}),
                  op("host_to_device", "trans", {1}, {4}),
                  op("host_to_device", "trans", {2}, {5}), record(0, "trans")}}},
      {{"name", "ZERO_GRAD"}, {"primary", "update"}, {"double_buffered", false},
       {"nodes", {op("zero", "update", {8}, {12}), op("zero", "update", {9}, {13}),
                  record(1, "update")}}},
      {{"name", "FWD_BWD"}, {"primary", "comp1"}, {"double_buffered", true},
       {"nodes",
        {wait(0, "comp1"), wait(1, "comp1"), op("linear", "comp1", {3, 6, 7}, {14}),
         op("softmax_cross_entropy", "comp1", {14, 4}, {15}, {{"label_smoothing", 0.0}}),
         op("softmax_cross_entropy_backward", "comp1", {14, 4}, {16},
            {{"label_smoothing", 0.0}}),
         linearBackward, record(2, "comp1")}}},
      {{"name", "OPTIMIZER"}, {"primary", "update"}, {"double_buffered", true},
       {"nodes", {wait(2, "update"), op("sgd_update", "update", {6, 17, 10, 5}, {19, 20}, sgd),
                  op("sgd_update", "update", {7, 18, 11, 5}, {21, 22}, sgd)}}},
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
      {"version", 1},
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
    metadata = {{"rn.format", "rn-program"}, {"rn.version", "1"},
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

  EXPECT_EQ(program.version, 1);
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
  EXPECT_EQ(backward.operands, (std::vector<uint32_t>{16, 3, 6, 12, 13}));
  EXPECT_EQ(backward.results, (std::vector<uint32_t>{17, 18}));
  ASSERT_EQ(backward.parts.size(), 2u);
  EXPECT_EQ(backward.parts[1].role, "bias_grad");
  EXPECT_EQ(backward.parts[1].stream, Stream::comp2);
  const Node &sgd = step.findSubgraph("OPTIMIZER")->nodes[1];
  EXPECT_DOUBLE_EQ(sgd.attributes["momentum"].get<double>(), 0.9);

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
  json metadata = {{"rn.format", "rn-program"}, {"rn.version", "1"},
                   {"rn.program", R"({"format": "rn-program", "version": 1,, })"}};
  std::string error = fileError(artifactBytes(nullptr, validTensors(), metadata));
  EXPECT_THAT(error, HasSubstr("rn.program: invalid JSON: syntax error at byte 39: parse error at line 1, column 39"));
}

TEST(Artifact, RejectsWrongVersion) {
  json metadata = {{"rn.format", "rn-program"}, {"rn.version", "2"},
                   {"rn.program", validProgram().dump()}};
  EXPECT_THAT(fileError(artifactBytes(nullptr, validTensors(), metadata)),
              HasSubstr("unsupported artifact version 2 (this runtime supports version 1)"));
  json program = validProgram();
  program["version"] = 2;
  EXPECT_THAT(programError(program),
              HasSubstr("unsupported program version 2 (this runtime supports version 1)"));
  metadata["rn.version"] = "1x";
  EXPECT_THAT(fileError(artifactBytes(nullptr, validTensors(), metadata)),
              HasSubstr("is not a version number"));
}

TEST(Artifact, RejectsMissingMetadata) {
  json metadata = {{"rn.version", "1"}, {"rn.program", validProgram().dump()}};
  EXPECT_THAT(fileError(artifactBytes(nullptr, validTensors(), metadata)),
              HasSubstr("not an rn artifact: the safetensors metadata has no \"rn.format\""));
  metadata = {{"rn.format", "rn-program"}, {"rn.version", "1"}};
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
  node(program, 2, 2)["operands"][1] = 9001;
  EXPECT_THAT(programError(program),
              HasSubstr("function train_step, subgraph FWD_BWD, node 2 (linear): operand 1 "
                        "refers to tensor 9001, but the function has 23 tensors"));

  program = validProgram();
  program["functions"][0]["outputs"][0]["tensor"] = 23;
  EXPECT_THAT(programError(program),
              HasSubstr("outputs[0]: loss refers to tensor 23, but the function has 23 tensors"));

  program = validProgram();
  program["functions"][0]["tensors"][3]["id"] = 4;
  EXPECT_THAT(programError(program),
              HasSubstr("tensor ids must be dense and in order: entry 3 has id 4"));

  program = validProgram();
  node(program, 2, 2)["results"][0] = 3; // redefines the device images
  EXPECT_THAT(programError(program),
              HasSubstr("result tensor 3 is already defined by subgraph TRANSFER, node 0 "
                        "(host_to_device)"));

  program = validProgram();
  node(program, 2, 2)["operands"][0] = 0; // the host buffer
  EXPECT_THAT(programError(program),
              HasSubstr("operand 0 is tensor 0, a host staging buffer (host_input images)"));
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

  program = validProgram();
  node(program, 3, 1)["attributes"]["momentum"] = 0.0; // no buffer expected then
  EXPECT_THAT(programError(program),
              HasSubstr("node 1 (sgd_update): produces 1 result (new_param), got 2"));
  node(program, 3, 1)["operands"].push_back(5);
  node(program, 3, 1)["operands"].push_back(5);
  EXPECT_THAT(programError(program),
              HasSubstr("with momentum 0 takes param, grad, lr and an optional skip_if "
                        "(3 or 4 operands), got 6"));

  program = validProgram();
  node(program, 2, 5)["attributes"]["input_grad"] = true; // one more result expected
  EXPECT_THAT(programError(program),
              HasSubstr("node 5 (linear_backward): produces 3 results (input_grad, "
                        "weight_grad, bias_grad), got 2"));

  program = validProgram();
  node(program, 2, 5)["parts"][1]["role"] = "input_grad";
  EXPECT_THAT(programError(program),
              HasSubstr("part 1: role \"input_grad\", expected \"bias_grad\""));

  program = validProgram();
  node(program, 2, 5)["part_waits"] = {{0, 2}};
  EXPECT_THAT(programError(program), HasSubstr("part index out of range"));
}

/// The registry alone: counts and attribute ranges of the variadic ops.
TEST(OpRegistry, ChecksCountsAndAttributes) {
  auto check = [](const char *name, size_t operands, size_t results, json attributes) {
    const OpInfo *info = findOp(name);
    EXPECT_NE(info, nullptr) << name;
    if (!info)
      return std::string("unknown");
    Status status = info->verify({operands, results, attributes});
    return status.ok() ? std::string() : status.error().message();
  };
  json conv = {{"strides", {1, 1}}, {"padding", {1, 1}}, {"dilation", {1, 1}}, {"groups", 1}};
  EXPECT_EQ(check("conv2d", 2, 1, conv), "");
  EXPECT_EQ(check("conv2d", 3, 1, conv), "");
  EXPECT_THAT(check("conv2d", 4, 1, conv), HasSubstr("takes 2 to 3 operands, got 4"));
  json bad = conv;
  bad["strides"] = {1, 0};
  EXPECT_THAT(check("conv2d", 2, 1, bad),
              HasSubstr("attribute \"strides\" must be positive, got 0 for width"));
  bad = conv;
  bad["padding"] = {-1, 0};
  EXPECT_THAT(check("conv2d", 2, 1, bad), HasSubstr("must be non-negative, got -1 for height"));
  bad = conv;
  bad["groups"] = 0;
  EXPECT_THAT(check("conv2d", 2, 1, bad), HasSubstr("\"groups\" must be at least 1, got 0"));
  bad = conv;
  bad["dilation"] = {1, 1, 1};
  EXPECT_THAT(check("conv2d", 2, 1, bad), HasSubstr("must be an array of 2 integers"));
  bad = conv;
  bad["groups"] = ~uint64_t(0);
  EXPECT_THAT(check("conv2d", 2, 1, bad), HasSubstr("\"groups\" must be an integer"));

  // conv2d_backward: results [dX] dW [dB].
  json backward = conv;
  EXPECT_EQ(check("conv2d_backward", 4, 1, backward), "");
  EXPECT_EQ(check("conv2d_backward", 5, 2, backward), "");
  backward["input_grad"] = true;
  EXPECT_EQ(check("conv2d_backward", 5, 3, backward), "");
  EXPECT_THAT(check("conv2d_backward", 4, 1, backward), HasSubstr("produces 2 results"));
  std::vector<std::string_view> parts =
      findOp("conv2d_backward")->forkParts({5, 3, backward});
  EXPECT_EQ(parts, (std::vector<std::string_view>{"weight_grad", "bias_grad", "input_grad"}));
  EXPECT_EQ(check("linear_backward", 4, 2, {{"input_grad", true}}), "");
  EXPECT_THAT(check("linear_backward", 4, 2, {{"input_grad", 1}}), HasSubstr("must be a boolean"));

  EXPECT_EQ(check("check_finite", 7, 1, json::object()), "");
  EXPECT_THAT(check("check_finite", 0, 1, json::object()), HasSubstr("at least 1 operand"));

  json sgd = {{"momentum", 0.0}, {"weight_decay", 0.0}};
  EXPECT_EQ(check("sgd_update", 3, 1, sgd), "");
  EXPECT_EQ(check("sgd_update", 4, 1, sgd), ""); // skip_if
  sgd["momentum"] = 0.9;
  EXPECT_EQ(check("sgd_update", 4, 2, sgd), "");
  EXPECT_EQ(check("sgd_update", 5, 2, sgd), "");
  EXPECT_THAT(check("sgd_update", 5, 1, sgd), HasSubstr("produces 2 results"));
  sgd["operandSegmentSizes"] = {1, 1, 1, 1, 0};
  EXPECT_THAT(check("sgd_update", 5, 2, sgd), HasSubstr("operandSegmentSizes"));
  EXPECT_THAT(check("sgd_update", 3, 1, {{"momentum", 0.0}, {"weight_decay", 0.0}, {"nesterov", true}}),
              HasSubstr("Nesterov momentum needs momentum > 0"));

  // multi_sgd_update: n params, n grads, [n buffers], lr, [skip_if] -> n new
  // params, [n new buffers]; the group size comes from the results.
  json multi = {{"momentum", 0.9}, {"weight_decay", 5e-4}, {"nesterov", true}};
  EXPECT_EQ(check("multi_sgd_update", 10, 6, multi), ""); // 3 tensors
  EXPECT_EQ(check("multi_sgd_update", 11, 6, multi), ""); // skip_if
  EXPECT_THAT(check("multi_sgd_update", 9, 6, multi),
              HasSubstr("with 3 tensors and momentum 0.9 takes params, grads, momentum_buffers, "
                        "lr and an optional skip_if (10 or 11 operands), got 9"));
  EXPECT_THAT(check("multi_sgd_update", 10, 5, multi),
              HasSubstr("two results per tensor (new params, then new momentum buffers), got 5"));
  EXPECT_THAT(check("multi_sgd_update", 1, 0, multi), HasSubstr("got 0"));
  json plain = {{"momentum", 0.0}, {"weight_decay", 0.0}};
  EXPECT_EQ(check("multi_sgd_update", 5, 2, plain), ""); // 2 tensors, no buffers
  EXPECT_THAT(check("multi_sgd_update", 7, 2, plain), HasSubstr("(5 or 6 operands), got 7"));
  multi["operandSegmentSizes"] = {3, 3, 3, 1, 0};
  EXPECT_EQ(check("multi_sgd_update", 10, 6, multi), "");
  EXPECT_THAT(check("multi_sgd_update", 11, 6, multi),
              HasSubstr("\"operandSegmentSizes\" disagrees with the operands (expected "
                        "[3,3,3,1,1])"));
  EXPECT_THAT(check("multi_sgd_update", 3, 1, {{"momentum", 0.0}, {"weight_decay", 0.0}, {"nesterov", true}}),
              HasSubstr("Nesterov momentum needs momentum > 0"));
  EXPECT_THAT(check("multi_sgd_update", 3, 1, {{"momentum", 0.0}, {"weight_decay", -1.0}}),
              HasSubstr("\"weight_decay\" must be non-negative"));

  // multi_adamw_update: n params, grads, exp_avgs, exp_avg_sqs, lr, step,
  // [skip_if] -> 3n results.
  json adam = {{"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8}, {"weight_decay", 0.01}};
  EXPECT_EQ(check("multi_adamw_update", 10, 6, adam), ""); // 2 tensors
  EXPECT_EQ(check("multi_adamw_update", 11, 6, adam), ""); // skip_if
  EXPECT_THAT(check("multi_adamw_update", 9, 6, adam),
              HasSubstr("with 2 tensors takes params, grads, exp_avgs, exp_avg_sqs, lr, step and "
                        "an optional skip_if (10 or 11 operands), got 9"));
  EXPECT_THAT(check("multi_adamw_update", 10, 5, adam),
              HasSubstr("three results per tensor (new params, exp_avgs, exp_avg_sqs), got 5"));
  adam["operandSegmentSizes"] = {2, 2, 2, 2, 1, 1, 0};
  EXPECT_EQ(check("multi_adamw_update", 10, 6, adam), "");
  EXPECT_THAT(check("multi_adamw_update", 11, 6, adam), HasSubstr("[2,2,2,2,1,1,1]"));
  EXPECT_THAT(check("multi_adamw_update", 6, 3,
                    {{"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 0.0}, {"weight_decay", 0.0}}),
              HasSubstr("\"epsilon\" must be positive"));

  // multi_lars_update: n params, grads, momentum_buffers, lr, [skip_if] ->
  // 2n results.
  json lars = {{"momentum", 0.9},
               {"weight_decay", 1e-4},
               {"trust_coefficient", 1e-3},
               {"epsilon", 1e-9}};
  EXPECT_EQ(check("multi_lars_update", 7, 4, lars), ""); // 2 tensors
  EXPECT_EQ(check("multi_lars_update", 8, 4, lars), ""); // skip_if
  EXPECT_THAT(check("multi_lars_update", 6, 4, lars),
              HasSubstr("with 2 tensors takes params, grads, momentum_buffers, lr and an "
                        "optional skip_if (7 or 8 operands), got 6"));
  EXPECT_THAT(check("multi_lars_update", 7, 3, lars),
              HasSubstr("two results per tensor (new params, then new momentum buffers), got 3"));
  EXPECT_THAT(check("multi_lars_update", 1, 0, lars), HasSubstr("got 0"));
  lars["operandSegmentSizes"] = {2, 2, 2, 1, 0};
  EXPECT_EQ(check("multi_lars_update", 7, 4, lars), "");
  EXPECT_THAT(check("multi_lars_update", 8, 4, lars), HasSubstr("[2,2,2,1,1]"));
  lars.erase("operandSegmentSizes");
  lars["trust_coefficient"] = 0.0;
  EXPECT_THAT(check("multi_lars_update", 4, 2, lars),
              HasSubstr("\"trust_coefficient\" must be positive"));
  lars["trust_coefficient"] = 1e-3;
  lars["momentum"] = 1.0;
  EXPECT_THAT(check("multi_lars_update", 4, 2, lars),
              HasSubstr("\"momentum\" must be in [0, 1), got 1"));

  // dropout_train: input and the device step; its stream is step * count + index.
  json dropout = {{"p", 0.5}, {"index", 1}, {"count", 2}};
  EXPECT_EQ(check("dropout_train", 2, 2, dropout), "");
  EXPECT_THAT(check("dropout_train", 1, 2, dropout), HasSubstr("takes 2 operands, got 1"));
  EXPECT_THAT(check("dropout_train", 2, 2, {{"p", 1.0}, {"index", 0}, {"count", 1}}),
              HasSubstr("\"p\" must be in [0, 1), got 1"));
  EXPECT_THAT(check("dropout_train", 2, 2, {{"p", 0.5}, {"index", 2}, {"count", 2}}),
              HasSubstr("\"index\" must be below \"count\" (2), got 2"));
  EXPECT_THAT(check("dropout_train", 2, 2, {{"p", 0.5}, {"count", 2}}),
              HasSubstr("\"index\" is missing"));
  EXPECT_THAT(check("dropout_train", 2, 2, {{"p", 0.5}, {"index", 0}, {"count", 0}}),
              HasSubstr("\"count\" must be at least 1, got 0"));
  // The model-level op has no step to key its mask: no program may hold it.
  EXPECT_EQ(findOp("dropout"), nullptr);
  EXPECT_THAT(check("batch_norm", 5, 1, {{"epsilon", 1e-5}, {"momentum", 1.1}}),
              HasSubstr("\"momentum\" must be in [0, 1], got 1.1"));
  EXPECT_THAT(check("batch_norm_train", 3, 3, {{"epsilon", 0}}), HasSubstr("must be positive"));
  EXPECT_THAT(check("max_pool2d", 1, 1, {{"kernel", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 2}}}),
              HasSubstr("\"padding\" 2 exceeds half the kernel size 2 for width"));
  EXPECT_THAT(check("update_loss_scale", 3, 2,
                    {{"growth", 2.0}, {"backoff", 0.5}, {"growth_interval", 0}}),
              HasSubstr("\"growth_interval\" must be at least 1"));
  EXPECT_THAT(check("update_running_stats", 4, 2,
                    {{"epsilon", 1e-5}, {"momentum", 0.1}, {"count", 1}}),
              HasSubstr("\"count\" must be at least 2"));
  json cbr = conv;
  cbr["input_grad"] = true;
  EXPECT_EQ(check("cbr_backward", 11, 5, cbr), "");
  EXPECT_EQ(findOp("cbr_backward")->forkParts({11, 5, cbr}).size(), 3u);
  EXPECT_EQ(findOp("relu")->forkParts, nullptr);
  EXPECT_EQ(findOp("rn.relu"), nullptr);
  EXPECT_EQ(check("all_reduce_mean", 2, 2, json::object()), "");
  EXPECT_THAT(check("all_reduce_mean", 2, 1, json::object()),
              HasSubstr("produces 2 results (one per input), got 1"));
  EXPECT_EQ(check("multi_zero", 3, 3, json::object()), "");
  EXPECT_THAT(check("multi_zero", 0, 0, json::object()), HasSubstr("takes at least 1 operand"));
  EXPECT_EQ(check("multi_unscale", 3, 2, json::object()), "");
  EXPECT_THAT(check("multi_unscale", 3, 3, json::object()),
              HasSubstr("produces 2 results (one per grad), got 3"));
  EXPECT_THAT(check("multi_unscale", 1, 0, json::object()),
              HasSubstr("takes at least 2 operands"));
  EXPECT_EQ(check("multi_cast", 2, 2, json::object()), "");
  EXPECT_THAT(check("multi_cast", 2, 1, json::object()),
              HasSubstr("produces 2 results (one per input), got 1"));
  json decay = {{"decay", 0.5}};
  EXPECT_EQ(check("multi_ema_update", 4, 2, decay), "");
  EXPECT_THAT(check("multi_ema_update", 3, 1, decay), HasSubstr("one param per average"));
  EXPECT_THAT(check("multi_ema_update", 4, 1, decay),
              HasSubstr("produces 2 results (one per average), got 1"));
  // The input gradient's addend (rn-fold-gradient-adds), told apart from
  // the bias accumulator and the ReLU output by operandSegmentSizes.
  json addend = conv;
  addend["input_grad"] = true;
  addend["operandSegmentSizes"] = {1, 1, 1, 1, 0, 1};
  EXPECT_EQ(check("conv2d_backward", 5, 2, addend), "");
  EXPECT_THAT(check("conv2d_backward", 5, 3, addend), HasSubstr("produces 2 results"));
  json withBias = addend;
  withBias["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1};
  EXPECT_EQ(check("conv2d_backward", 6, 3, withBias), "");
  json noInputGrad = conv;
  noInputGrad["operandSegmentSizes"] = {1, 1, 1, 1, 0, 1};
  EXPECT_THAT(check("conv2d_backward", 5, 1, noInputGrad),
              HasSubstr("input gradient addend but no input_grad"));
  json cbrAddend = addend;
  cbrAddend["epsilon"] = 1e-5;
  cbrAddend["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(check("cbr_backward", 12, 5, cbrAddend), "");
  EXPECT_TRUE(hasInputGradAddend(cbrAddend));
  EXPECT_FALSE(hasInputGradAddend(json{{"operandSegmentSizes", {1, 1, 1, 1, 0, 0}}}));
  EXPECT_FALSE(hasInputGradAddend(json::object()));
  // cbr_backward's ReLU mask: relu_output (count 10) or relu_beta (count
  // 11, rn-recompute-relu-mask); artifacts from before relu_beta have 12
  // counts, and hand-written nodes none.
  EXPECT_EQ(cbrBackwardReluMask(cbrAddend, 12), ReluMask::output);
  json recomputed = cbrAddend;
  recomputed["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1};
  EXPECT_EQ(check("cbr_backward", 12, 5, recomputed), "");
  EXPECT_EQ(cbrBackwardReluMask(recomputed, 12), ReluMask::recomputed);
  EXPECT_TRUE(hasInputGradAddend(recomputed));
  recomputed["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0};
  EXPECT_EQ(check("cbr_backward", 11, 5, recomputed), "");
  EXPECT_EQ(cbrBackwardReluMask(recomputed, 11), ReluMask::recomputed);
  recomputed["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  EXPECT_EQ(cbrBackwardReluMask(recomputed, 10), ReluMask::none);
  json twoMasks = cbrAddend;
  twoMasks["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
  EXPECT_THAT(check("cbr_backward", 12, 5, twoMasks), HasSubstr("takes 10 to 11 operands"));
  EXPECT_THAT(check("cbr_backward", 11, 5, twoMasks), HasSubstr("disagrees with the operands"));
  json handWritten = json{{"input_grad", true}};
  EXPECT_EQ(cbrBackwardReluMask(handWritten, 11), ReluMask::output);
  EXPECT_EQ(cbrBackwardReluMask(handWritten, 10), ReluMask::none);
  EXPECT_EQ(check("pad_channels", 1, 1, json::object()), "");
  EXPECT_THAT(check("pad_channels", 2, 1, json::object()), HasSubstr("operand"));
  EXPECT_EQ(allOps().size(), 56u);
}

/// rn-fuse-bn-prologue's forms: cbr_forward and conv_bn_stats with or
/// without a prologue pair, bn_scale_bias, and cbr_backward's 15 segment
/// sizes (input_prologue) and prologue_mask.
TEST(OpRegistry, ChecksBnPrologueForms) {
  auto check = [](const char *name, size_t operands, size_t results, const json &attributes) {
    const OpInfo *info = findOp(name);
    EXPECT_NE(info, nullptr) << name;
    if (!info)
      return std::string("unknown");
    Status status = info->verify({operands, results, attributes});
    return status.ok() ? std::string() : status.error().message();
  };
  const json conv = {{"strides", {1, 1}}, {"padding", {1, 1}}, {"dilation", {1, 1}},
                     {"groups", 1},       {"epsilon", 1e-5}};

  // cbr_forward: 4 operands, or 6 with prologue_scale and prologue_bias.
  json forward = conv;
  forward["relu"] = true;
  EXPECT_EQ(check("cbr_forward", 4, 4, forward), "");
  EXPECT_EQ(check("cbr_forward", 6, 4, forward), "");
  EXPECT_EQ(check("cbr_forward", 5, 4, forward),
            "has half a prologue (5 operands: expected 4, or 6 with prologue_scale and "
            "prologue_bias)");
  EXPECT_EQ(check("cbr_forward", 7, 4, forward), "takes 4 to 6 operands, got 7");
  EXPECT_EQ(check("cbr_forward", 6, 3, forward), "produces 4 results, got 3");
  forward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1};
  EXPECT_EQ(check("cbr_forward", 6, 4, forward), "");
  EXPECT_THAT(check("cbr_forward", 4, 4, forward),
              HasSubstr("\"operandSegmentSizes\" disagrees with the operands (4, then "
                        "[prologue_scale, prologue_bias])"));
  forward["operandSegmentSizes"] = {1, 1, 1, 1, 0, 0};
  EXPECT_EQ(check("cbr_forward", 4, 4, forward), "");
  forward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 0};
  EXPECT_THAT(check("cbr_forward", 5, 4, forward), HasSubstr("has half a prologue"));
  EXPECT_THAT(check("cbr_forward", 6, 4, forward), HasSubstr("disagrees with the operands"));
  forward["operandSegmentSizes"] = {1, 1, 1, 1, 1};
  EXPECT_THAT(check("cbr_forward", 5, 4, forward), HasSubstr("has half a prologue"));
  forward["operandSegmentSizes"] = {1, 1, 1, 1, 2, 2};
  EXPECT_THAT(check("cbr_forward", 8, 4, forward), HasSubstr("takes 4 to 6 operands"));
  forward.erase("operandSegmentSizes");
  // The prologue needs an ungrouped convolution (the dialect's verifier).
  forward["groups"] = 2;
  EXPECT_EQ(check("cbr_forward", 4, 4, forward), "");
  EXPECT_EQ(check("cbr_forward", 6, 4, forward),
            "has a prologue with \"groups\" 2 (the prologue needs groups 1)");

  // conv_bn_stats: 2 operands, or 4 with the prologue; 3 results.
  EXPECT_EQ(check("conv_bn_stats", 2, 3, conv), "");
  EXPECT_EQ(check("conv_bn_stats", 4, 3, conv), "");
  EXPECT_EQ(check("conv_bn_stats", 3, 3, conv),
            "has half a prologue (3 operands: expected 2, or 4 with prologue_scale and "
            "prologue_bias)");
  EXPECT_EQ(check("conv_bn_stats", 4, 4, conv),
            "produces 3 results (conv_output, batch_mean, batch_inv_std), got 4");
  json stats = conv;
  stats["operandSegmentSizes"] = {1, 1, 1, 1};
  EXPECT_EQ(check("conv_bn_stats", 4, 3, stats), "");
  stats["operandSegmentSizes"] = {1, 1, 0, 0};
  EXPECT_EQ(check("conv_bn_stats", 2, 3, stats), "");
  EXPECT_THAT(check("conv_bn_stats", 4, 3, stats),
              HasSubstr("disagrees with the operands (2, then [prologue_scale, prologue_bias])"));
  stats.erase("operandSegmentSizes");
  stats.erase("epsilon");
  EXPECT_THAT(check("conv_bn_stats", 2, 3, stats), HasSubstr("\"epsilon\" is missing"));
  stats = conv;
  stats["groups"] = 4;
  EXPECT_EQ(check("conv_bn_stats", 2, 3, stats), "");
  EXPECT_THAT(check("conv_bn_stats", 4, 3, stats), HasSubstr("the prologue needs groups 1"));

  // bn_scale_bias: mean, inv_std, gamma, beta -> scale, bias.
  EXPECT_EQ(check("bn_scale_bias", 4, 2, json::object()), "");
  EXPECT_EQ(check("bn_scale_bias", 3, 2, json::object()), "takes 4 operands, got 3");
  EXPECT_EQ(check("bn_scale_bias", 4, 1, json::object()), "produces 2 results, got 1");

  EXPECT_EQ(convPrologue("cbr_forward", 6), std::optional<size_t>(4));
  EXPECT_EQ(convPrologue("cbr_forward", 4), std::nullopt);
  EXPECT_EQ(convPrologue("conv_bn_stats", 4), std::optional<size_t>(2));
  EXPECT_EQ(convPrologue("conv_bn_stats", 2), std::nullopt);
  EXPECT_EQ(convPrologue("conv2d", 4), std::nullopt);

  // cbr_backward with 15 segment sizes: ten, relu_output, relu_beta,
  // input_scale, input_bias, input_grad_addend.
  json backward = conv;
  backward.erase("epsilon");
  backward["input_grad"] = true;
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0};
  EXPECT_EQ(check("cbr_backward", 13, 5, backward), "");
  EXPECT_EQ(cbrBackwardInputPrologue(backward), std::optional<size_t>(11));
  EXPECT_EQ(cbrBackwardReluMask(backward, 13), ReluMask::recomputed);
  EXPECT_FALSE(hasInputGradAddend(backward));
  EXPECT_FALSE(cbrBackwardPrologueMask(backward));
  EXPECT_THAT(check("cbr_backward", 12, 5, backward), HasSubstr("disagrees with the operands"));
  EXPECT_EQ(check("cbr_backward", 14, 5, backward), "takes 12 to 13 operands, got 14");
  // With the mask recomputed in the prologue's rounding.
  backward["prologue_mask"] = true;
  EXPECT_EQ(check("cbr_backward", 13, 5, backward), "");
  EXPECT_TRUE(cbrBackwardPrologueMask(backward));
  // With relu_output and an addend: input_scale is operand 11, the addend
  // the last.
  backward.erase("prologue_mask");
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1};
  EXPECT_EQ(check("cbr_backward", 14, 5, backward), "");
  EXPECT_EQ(cbrBackwardInputPrologue(backward), std::optional<size_t>(11));
  EXPECT_EQ(cbrBackwardReluMask(backward, 14), ReluMask::output);
  EXPECT_TRUE(hasInputGradAddend(backward));
  // No ReLU: input_scale is operand 10.
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0};
  EXPECT_EQ(check("cbr_backward", 12, 5, backward), "");
  EXPECT_EQ(cbrBackwardInputPrologue(backward), std::optional<size_t>(10));
  EXPECT_EQ(cbrBackwardReluMask(backward, 12), ReluMask::none);
  // No input prologue in the 15 counts.
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0};
  EXPECT_EQ(check("cbr_backward", 11, 5, backward), "");
  EXPECT_EQ(cbrBackwardInputPrologue(backward), std::nullopt);
  EXPECT_EQ(cbrBackwardInputPrologue(json::object()), std::nullopt);
  // Half an input prologue, bad segment sizes.
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0};
  EXPECT_EQ(check("cbr_backward", 12, 5, backward),
            "attribute \"operandSegmentSizes\" disagrees with the operands (ten, [relu_output], "
            "[relu_beta], [input_scale, input_bias], [input_grad_addend])");
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0};
  EXPECT_EQ(check("cbr_backward", 12, 5, backward), "takes 10 to 11 operands, got 12");
  EXPECT_THAT(check("cbr_backward", 11, 5, backward), HasSubstr("disagrees with the operands"));
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1}; // 14
  EXPECT_THAT(check("cbr_backward", 12, 5, backward), HasSubstr("disagrees with the operands"));
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 2, 2, 0};
  EXPECT_THAT(check("cbr_backward", 11, 5, backward), HasSubstr("disagrees with the operands"));
  // prologue_mask only with relu_recompute.
  backward["prologue_mask"] = true;
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0};
  EXPECT_EQ(check("cbr_backward", 13, 5, backward), "has prologue_mask without relu_recompute");
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0};
  EXPECT_EQ(check("cbr_backward", 10, 5, backward), "has prologue_mask without relu_recompute");
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0};
  EXPECT_EQ(check("cbr_backward", 11, 5, backward), "");
  backward.erase("operandSegmentSizes"); // hand-written: the eleventh is relu_output
  EXPECT_EQ(check("cbr_backward", 11, 5, backward), "has prologue_mask without relu_recompute");
  backward["operandSegmentSizes"] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0};
  backward["prologue_mask"] = 1;
  EXPECT_EQ(check("cbr_backward", 11, 5, backward),
            "attribute \"prologue_mask\" must be a boolean, got number");
  EXPECT_EQ(findOp("cbr_backward")->forkParts({13, 5, backward}),
            (std::vector<std::string_view>{"bn_grad", "weight_grad", "input_grad"}));
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
/// Artifacts written by rn-compile (test/runtime/Inputs) pass the validator.
TEST(Artifact, LoadsCompiledArtifacts) {
  for (const char *name : {"mlp.rnx", "cbr.rnx"}) {
    std::string path = std::string(RN_TEST_INPUTS_DIR) + "/" + name;
    if (!std::filesystem::exists(path))
      continue;
    Result<Artifact> loaded = loadArtifact(path);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    EXPECT_NE(loaded->program.findFunction("train_step"), nullptr) << name;
    EXPECT_FALSE(loaded->program.schedules.empty()) << name;
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
