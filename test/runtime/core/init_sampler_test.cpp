//===- init_sampler_test.cpp - The shared parameter sampler ---------------===//
//
// XXH3-64 known answers (llvm::xxh3_64bits), rounding once from double, the
// sampler against the parameters the checked-in artifacts hold (written by
// rn-compile), and weight-free artifacts: the loader's checks and a CPU
// executor initialized to exactly the state of the artifact with weights.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/init_sampler.h"

#include "../cpu/executor_test_util.h"
#include "runtime/core/artifact.h"
#include "runtime/core/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>

namespace rn {
namespace {

// Values of llvm::xxh3_64bits (LLVM 22) for the string of `length` bytes
// 'a' + (7 i mod 26): every path of XXH3 (0, 1-3, 4-8, 9-16, 17-128,
// 129-240 bytes and the long one) and the lengths at their edges.
TEST(InitSampler, Xxh3MatchesLlvm) {
  struct Case {
    size_t length;
    uint64_t hash;
  };
  const Case cases[] = {
      {0, 0x2d06800538d394c2ull},    {1, 0xe6c632b61e964e1full},
      {2, 0x3a6dd033830eea1eull},    {3, 0x7ea47a004f34273cull},
      {4, 0xa02b1fe01d5e8c68ull},    {5, 0x6ed62fa163828e19ull},
      {8, 0xae512ee33cb829a3ull},    {9, 0x8a413b4d39e87b1dull},
      {12, 0xfca66e7a4c58329dull},   {16, 0xdfd4b837b7921abfull},
      {17, 0x93e37276a1b3d25eull},   {32, 0x9e944f124f567af0ull},
      {33, 0x1b937113ce5b010aull},   {64, 0xbef582cbcf46a82aull},
      {65, 0xf6d01768d1a2a2f3ull},   {96, 0x46fba7132d002366ull},
      {97, 0x74a9cee537f1842bull},   {128, 0xb2750a05a86bd144ull},
      {129, 0x7944327491a28ad0ull},  {200, 0x7d75d81144c52f0dull},
      {240, 0x42b550f096408b23ull},  {241, 0x58129d823c648ff5ull},
      {1024, 0x62efeb73eb589676ull}, {1025, 0x8328e4d7340701c7ull},
      {3000, 0xaf42347714596cb3ull},
  };
  for (const Case &c : cases) {
    std::string data(c.length, '\0');
    for (size_t i = 0; i < c.length; ++i)
      data[i] = char('a' + (i * 7) % 26);
    EXPECT_EQ(xxh3_64bits(data), c.hash) << "length " << c.length;
  }
  // Parameter names.
  EXPECT_EQ(xxh3_64bits("fc.bias"), 0x25ec52c86ff7ec3eull);
  EXPECT_EQ(xxh3_64bits("conv1.weight"), 0x68019ca25a01e5c4ull);
  EXPECT_EQ(xxh3_64bits("layer1.0.bn1.running_mean"), 0x23d2450750f702c8ull);
  EXPECT_EQ(initStreamSeed("fc.bias", 5), 5 ^ 0x25ec52c86ff7ec3eull);
}

// Just above a tie of the narrow format, but below float's precision: via
// float the value becomes the tie and rounds to even (down); from double it
// rounds up, as APFloat does.
TEST(InitSampler, RoundsOnceFromDouble) {
  double aboveHalfTie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(floatToHalf(float(aboveHalfTie)), 0x3c00);
  EXPECT_EQ(doubleToHalf(aboveHalfTie), 0x3c01);
  EXPECT_EQ(doubleToHalf(-aboveHalfTie), 0xbc01);
  double aboveBf16Tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(floatToBFloat16(float(aboveBf16Tie)), 0x3f80);
  EXPECT_EQ(doubleToBFloat16(aboveBf16Tie), 0x3f81);
  // Exact ties still go to even; subnormals, overflow, zero, NaN.
  EXPECT_EQ(doubleToHalf(1.0 + std::ldexp(1.0, -11)), 0x3c00);
  EXPECT_EQ(doubleToHalf(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -25)), 0x0000);
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -25) + std::ldexp(1.0, -60)), 0x0001);
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(doubleToHalf(65519.99), 0x7bff);
  EXPECT_EQ(doubleToHalf(65520.0), 0x7c00);
  EXPECT_EQ(doubleToHalf(1e300), 0x7c00);
  EXPECT_EQ(doubleToBFloat16(1e300), 0x7f80);
  EXPECT_EQ(doubleToBFloat16(-1e300), 0xff80);
  EXPECT_EQ(doubleToBFloat16(std::ldexp(1.0, -140)), 0x0000);
  EXPECT_EQ(doubleToBFloat16(std::ldexp(1.0, -133)), 0x0001);
  EXPECT_EQ(doubleToHalf(-0.0), 0x8000);
  EXPECT_EQ(doubleToHalf(0.0), 0x0000);
  EXPECT_TRUE(std::isnan(halfToFloat(doubleToHalf(std::nan("")))));
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(doubleToBFloat16(std::nan("")))));
}

TEST(InitSampler, KindsAndStreams) {
  auto values = [](const char *name, Init init, DType dtype, uint64_t seed = 0) {
    Result<std::vector<float>> v = sampleInitialValues(name, init, dtype, 1000, seed);
    EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.error().message());
    return v.ok() ? *v : std::vector<float>();
  };
  EXPECT_EQ(values("b", {"zeros", 3}, DType::f32), std::vector<float>(1000, 0.0f));
  EXPECT_EQ(values("b", {"ones", 3}, DType::f16), std::vector<float>(1000, 1.0f));
  EXPECT_EQ(values("b", {"constant", 65536}, DType::f32),
            std::vector<float>(1000, 65536.0f));
  EXPECT_EQ(values("b", {"constant", 7.9}, DType::i32), std::vector<float>(1000, 7.0f));

  std::vector<float> u = values("w", {"uniform", 0.25}, DType::f32);
  double sum = 0;
  for (float x : u) {
    EXPECT_LE(std::fabs(x), 0.25f);
    sum += x;
  }
  EXPECT_LT(std::fabs(sum / 1000), 0.03);
  // Same name and seed, same values; another name or seed, others.
  EXPECT_EQ(values("w", {"uniform", 0.25}, DType::f32), u);
  EXPECT_NE(values("v", {"uniform", 0.25}, DType::f32), u);
  EXPECT_NE(values("w", {"uniform", 0.25}, DType::f32, 1), u);

  std::vector<float> n = values("w", {"normal", 2.0}, DType::bf16);
  double sq = 0;
  for (float x : n) {
    EXPECT_EQ(x, bfloat16ToFloat(floatToBFloat16(x))); // exactly a bf16 value
    sq += double(x) * x;
  }
  EXPECT_NEAR(std::sqrt(sq / 1000), 2.0, 0.2);

  // Bytes are the values in the dtype's encoding.
  Result<std::vector<uint8_t>> bytes =
      sampleInitialBytes("w", {"normal", 2.0}, DType::bf16, 1000, 0);
  ASSERT_TRUE(bytes.ok());
  ASSERT_EQ(bytes->size(), 2000u);
  for (size_t i = 0; i < 1000; ++i)
    EXPECT_EQ(bfloat16ToFloat(uint16_t((*bytes)[2 * i] | (*bytes)[2 * i + 1] << 8)), n[i]);

  Result<std::vector<uint8_t>> derived =
      sampleInitialBytes("w", {"derived", 0}, DType::f16, 4, 0);
  ASSERT_FALSE(derived.ok());
  EXPECT_NE(derived.error().message().find("not sampled"), std::string::npos);
  EXPECT_FALSE(sampleInitialBytes("w", {"xavier", 1}, DType::f32, 4, 0).ok());

  // values: every element given, rounded once to the dtype.
  const Init given{"values", 0, {0.4914, 0.4822, 0.4465}};
  Result<std::vector<float>> exact = sampleInitialValues("input.mean", given, DType::f32, 3, 0);
  ASSERT_TRUE(exact.ok()) << exact.error().message();
  EXPECT_EQ(*exact, (std::vector<float>{0.4914f, 0.4822f, 0.4465f}));
  Result<std::vector<float>> half = sampleInitialValues("input.mean", given, DType::f16, 3, 7);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ((*half)[0], halfToFloat(doubleToHalf(0.4914)));
  Result<std::vector<uint8_t>> miscounted =
      sampleInitialBytes("input.mean", given, DType::f32, 4, 0);
  ASSERT_FALSE(miscounted.ok());
  EXPECT_NE(miscounted.error().message().find("gives 3 values for 4 elements"), std::string::npos)
      << miscounted.error().message();
}

// The checked-in artifacts were written by rn-compile with seed 0: every
// parameter and buffer tensor is what the sampler gives.
TEST(InitSampler, MatchesTheCheckedInArtifacts) {
  for (const char *file : {"mlp.rnx", "cbr.rnx", "cnn.rnx", "cbr-u8.rnx"}) {
    Artifact artifact = test_inputs::load(file);
    size_t checked = 0;
    for (const StateEntry &entry : artifact.program.state) {
      const SafetensorsEntry *tensor = artifact.tensors.find(entry.name);
      if (!tensor)
        continue;
      int64_t n = 1;
      for (int64_t size : entry.shape)
        n *= size;
      Result<std::vector<uint8_t>> bytes =
          sampleInitialBytes(entry.name, entry.init, entry.dtype, n, 0);
      ASSERT_TRUE(bytes.ok()) << bytes.error().message();
      std::string_view stored = artifact.tensors.bytesOf(*tensor);
      EXPECT_TRUE(stored.size() == bytes->size() &&
                  std::memcmp(stored.data(), bytes->data(), stored.size()) == 0)
          << file << ": " << entry.name;
      ++checked;
    }
    EXPECT_GT(checked, 0u) << file;
  }
}

//===----------------------------------------------------------------------===//
// Weight-free artifacts
//===----------------------------------------------------------------------===//

/// The program of Inputs/`file` with an "init" entry (as `rn-compile
/// --no-weights` writes it), or with `edit` applied instead.
std::string weightFreeProgram(const char *file,
                              const std::function<void(nlohmann::json &)> &edit = {}) {
  Result<Safetensors> st = readSafetensors(test_inputs::inputPath(file));
  EXPECT_TRUE(st.ok());
  if (!st.ok())
    return "";
  nlohmann::json program = nlohmann::json::parse(st->metadata.at("rn.program"));
  program["init"] = {{"sampler", "mt19937_64-xxh3"}, {"seed", 0}};
  if (edit)
    edit(program);
  return program.dump();
}

Result<Artifact> artifactOf(const std::string &program,
                            const std::vector<TensorData> &tensors = {}) {
  Result<std::string> file = serializeSafetensors(
      tensors, {{"rn.format", "rn-program"}, {"rn.version", std::to_string(kArtifactVersion)}, {"rn.program", program}});
  if (!file)
    return file.error();
  return parseArtifact(*file);
}

TEST(WeightFree, InitializesToTheStateOfTheArtifactWithWeights) {
  for (const char *file : {"mlp.rnx", "cbr.rnx", "cnn.rnx", "cbr-u8.rnx"}) {
    SCOPED_TRACE(file);
    Artifact withWeights = test_inputs::load(file);
    Result<Artifact> weightFree = artifactOf(weightFreeProgram(file));
    ASSERT_TRUE(weightFree.ok()) << weightFree.error().message();
    ASSERT_TRUE(weightFree->program.sampling.has_value());
    EXPECT_EQ(weightFree->program.sampling->seed, 0u);
    EXPECT_TRUE(weightFree->tensors.tensors.empty());
    EXPECT_FALSE(withWeights.program.sampling.has_value());

    auto a = test_inputs::makeExecutor(withWeights);
    auto b = test_inputs::makeExecutor(*weightFree);
    ASSERT_TRUE(a && b);
    size_t compared = 0;
    for (const StateEntry &entry : withWeights.program.state) {
      if (!entry.slot)
        continue;
      Result<std::vector<float>> x = a->readState(entry.name);
      Result<std::vector<float>> y = b->readState(entry.name);
      ASSERT_TRUE(x.ok() && y.ok()) << entry.name;
      ASSERT_EQ(x->size(), y->size()) << entry.name;
      EXPECT_EQ(std::memcmp(x->data(), y->data(), x->size() * sizeof(float)), 0)
          << entry.name;
      ++compared;
    }
    EXPECT_EQ(compared, withWeights.program.state.size());
  }
}

TEST(WeightFree, AnotherSeedGivesOtherParameters) {
  Artifact withWeights = test_inputs::load("mlp.rnx");
  Result<Artifact> seeded = artifactOf(weightFreeProgram(
      "mlp.rnx", [](nlohmann::json &p) { p["init"]["seed"] = 18446744073709551615ull; }));
  ASSERT_TRUE(seeded.ok()) << seeded.error().message();
  EXPECT_EQ(seeded->program.sampling->seed, ~0ull);
  for (const StateEntry &entry : withWeights.program.state) {
    if (entry.init.kind != "uniform" && entry.init.kind != "normal")
      continue;
    Result<std::vector<float>> x = initialStateValues(withWeights, entry);
    Result<std::vector<float>> y = initialStateValues(*seeded, entry);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_NE(*x, *y) << entry.name;
  }
}

TEST(WeightFree, LoaderChecks) {
  auto error = [](const Result<Artifact> &artifact) {
    return artifact.ok() ? std::string("(loaded)") : artifact.error().message();
  };
  // A weight-free program with tensors is a mix-up of two files.
  float one = 1;
  Result<Artifact> mixed =
      artifactOf(weightFreeProgram("mlp.rnx"), {{"fc1.bias", DType::f32, {1}, &one, 4}});
  EXPECT_NE(error(mixed).find("the program has no weights (it has \"init\"), but the "
                              "artifact holds 1 tensor (first \"fc1.bias\")"),
            std::string::npos)
      << error(mixed);
  Result<Artifact> sampler = artifactOf(weightFreeProgram(
      "mlp.rnx", [](nlohmann::json &p) { p["init"]["sampler"] = "philox"; }));
  EXPECT_NE(error(sampler).find("init: unknown sampler \"philox\""), std::string::npos)
      << error(sampler);
  Result<Artifact> seed = artifactOf(
      weightFreeProgram("mlp.rnx", [](nlohmann::json &p) { p["init"]["seed"] = -1; }));
  EXPECT_NE(error(seed).find("\"seed\" must be a non-negative integer"), std::string::npos)
      << error(seed);
  Result<Artifact> noSeed = artifactOf(
      weightFreeProgram("mlp.rnx", [](nlohmann::json &p) { p["init"].erase("seed"); }));
  EXPECT_NE(error(noSeed).find("missing \"seed\""), std::string::npos) << error(noSeed);
  Result<Artifact> notObject = artifactOf(
      weightFreeProgram("mlp.rnx", [](nlohmann::json &p) { p["init"] = 3; }));
  EXPECT_FALSE(notObject.ok());
  // A values init gives each element, as many as the state has.
  auto editMean = [](const std::function<void(nlohmann::json &)> &edit) {
    return [edit](nlohmann::json &p) {
      for (nlohmann::json &entry : p["state"])
        if (entry["name"] == "input.mean")
          edit(entry["init"]);
    };
  };
  Result<Artifact> miscounted = artifactOf(weightFreeProgram(
      "cbr-u8.rnx", editMean([](nlohmann::json &init) { init["values"].push_back(0.5); })));
  EXPECT_NE(error(miscounted)
                .find("state input.mean: init \"values\" gives 2 values for shape [1] (1 "
                      "elements)"),
            std::string::npos)
      << error(miscounted);
  Result<Artifact> noValues = artifactOf(weightFreeProgram(
      "cbr-u8.rnx", editMean([](nlohmann::json &init) { init.erase("values"); })));
  EXPECT_NE(error(noValues).find("init \"values\" needs a non-empty \"values\" array"),
            std::string::npos)
      << error(noValues);
  Result<Artifact> infinite = artifactOf(weightFreeProgram(
      "cbr-u8.rnx", editMean([](nlohmann::json &init) { init["values"][0] = "inf"; })));
  EXPECT_NE(error(infinite).find("init \"values\" must hold finite numbers"), std::string::npos)
      << error(infinite);
  // Without "init", the program needs its tensors, as before.
  Result<Artifact> bare = artifactOf(
      weightFreeProgram("mlp.rnx", [](nlohmann::json &p) { p.erase("init"); }));
  EXPECT_NE(error(bare).find("the artifact has no tensor"), std::string::npos)
      << error(bare);
}

} // namespace
} // namespace rn
