//===- artifact_test.cpp - Loading, safetensors, metadata -----------------===//
//
// Loading the tiny valid artifact of artifact_test_util.h, the safetensors
// container around the program, the metadata and program header, and the
// artifacts rn-compile wrote into test/runtime/Inputs.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/core/op_table.h"
#include "runtime/core/safetensors.h"
#include "test/runtime/core/artifact_test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace rn {
namespace {

using namespace rn::test;
using ::testing::HasSubstr;

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
