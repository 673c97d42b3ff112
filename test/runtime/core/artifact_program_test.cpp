//===- artifact_program_test.cpp - What the loader validates --------------===//
//
// Each test breaks one thing in the tiny valid artifact of
// artifact_test_util.h (a slot, a region, a tensor id, an op, an attribute,
// a named operand, an event, a schedule step, a state entry) and checks
// that the loader's message names it and its place.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/core/op_table.h"
#include "test/runtime/core/artifact_test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rn {
namespace {

using namespace rn::test;
using ::testing::HasSubstr;

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

} // namespace
} // namespace rn
