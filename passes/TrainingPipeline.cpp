//===- TrainingPipeline.cpp - The rn-training-pipeline ----------------------===//
//
// Everything between the model and the capture program, in order:
// rn-build-training, rn-fuse-cbr, rn-recompute-relu-mask,
// rn-pad-conv-channels, rn-fold-gradient-adds, (rn-fuse-bn-prologue,)
// rn-partition, (rn-bucket-all-reduce,) rn-group-updates,
// rn-group-elementwise, rn-plan-memory, rn-assign-streams,
// rn-insert-barriers, rn-verify-schedule: the BN prologue only with
// fuse-bn-prologue, the bucketing only with data-parallel, the others
// unless an option turns them off.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TrainingPipeline.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::rn;

namespace {
struct TrainingPipelineOptions
    : public PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, adamw or lars"),
                                llvm::cl::init("sgd")};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("momentum"),
                          llvm::cl::init(0.9)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("Nesterov (SGD)"),
                        llvm::cl::init(false)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("weight decay"),
                             llvm::cl::init(0.0)};
  Option<bool> noDecayBnBias{*this, "no-decay-bn-bias",
                             llvm::cl::desc("no decay on BN and biases"),
                             llvm::cl::init(false)};
  Option<std::string> precision{*this, "precision",
                                llvm::cl::desc("f32, f16 or bf16"),
                                llvm::cl::init("f32")};
  Option<std::string> lossScaling{*this, "loss-scaling",
                                  llvm::cl::desc("none, static or dynamic"),
                                  llvm::cl::init("none")};
  Option<double> lossScale{*this, "loss-scale",
                           llvm::cl::desc("static or initial loss scale"),
                           llvm::cl::init(65536.0)};
  Option<double> emaDecay{*this, "ema-decay",
                          llvm::cl::desc("EMA of the weights (0: off)"),
                          llvm::cl::init(0.0)};
  Option<bool> dataParallel{*this, "data-parallel",
                            llvm::cl::desc("all-reduce the gradients over "
                                           "data-parallel replicas"),
                            llvm::cl::init(false)};
  Option<bool> fuse{*this, "fuse", llvm::cl::desc("fuse CBR ops"),
                    llvm::cl::init(true)};
  Option<bool> recomputeReluMask{
      *this, "recompute-relu-mask",
      llvm::cl::desc("recompute the CBR backward's ReLU mask from the "
                     "convolution output instead of reading the ReLU result "
                     "(rn-recompute-relu-mask)"),
      llvm::cl::init(true)};
  Option<int64_t> padConvChannels{
      *this, "pad-conv-channels",
      llvm::cl::desc("zero-pad the input channels of f16/bf16 convolutions "
                     "to a multiple of this (rn-pad-conv-channels; 0: off)"),
      llvm::cl::init(8)};
  Option<bool> foldGradientAdds{
      *this, "fold-gradient-adds",
      llvm::cl::desc("fold residual junctions' gradient sums into the data "
                     "gradient's epilogue (rn-fold-gradient-adds)"),
      llvm::cl::init(true)};
  Option<int64_t> foldGradientAddsMaxStride{
      *this, "fold-gradient-adds-max-stride",
      llvm::cl::desc("with fold-gradient-adds, fold only into data gradients "
                     "whose strides are at most this (0: any; the default 1 "
                     "keeps the adds of strided junctions, whose cuDNN "
                     "dgrad-with-addend plans cost more than the add)"),
      llvm::cl::init(1)};
  Option<bool> fuseBnPrologue{
      *this, "fuse-bn-prologue",
      llvm::cl::desc("move f16 CBRs' batch norm apply + ReLU into the "
                     "prologue of the convolutions that read them "
                     "(rn-fuse-bn-prologue)"),
      llvm::cl::init(false)};
  Option<bool> groupUpdates{
      *this, "group-updates",
      llvm::cl::desc("merge the per-parameter SGD and AdamW updates into "
                     "multi-tensor updates (rn-group-updates)"),
      llvm::cl::init(true)};
  Option<int64_t> allReduceBucketBytes{
      *this, "all-reduce-bucket-bytes",
      llvm::cl::desc("with data-parallel: bytes of f32 gradients per "
                     "all-reduce bucket issued during the backward "
                     "(rn-bucket-all-reduce); 0 keeps one all-reduce after "
                     "the backward"),
      llvm::cl::init(26214400)};
  Option<bool> groupElementwise{
      *this, "group-elementwise",
      llvm::cl::desc("merge the per-tensor gradient zeroing, unscaling and "
                     "casts into multi-tensor ops (rn-group-elementwise)"),
      llvm::cl::init(true)};
  Option<bool> reuse{*this, "reuse",
                     llvm::cl::desc("reuse activation memory by liveness"),
                     llvm::cl::init(true)};
  Option<bool> singleStream{*this, "single-stream",
                            llvm::cl::desc("everything on one stream"),
                            llvm::cl::init(false)};
  Option<bool> verify{*this, "verify",
                      llvm::cl::desc("prove the schedule at the end"),
                      llvm::cl::init(true)};
};
} // namespace

static void buildPipeline(OpPassManager &pm,
                          const TrainingPipelineOptions &options) {
  BuildTrainingOptions training;
  training.optimizer = options.optimizer;
  training.momentum = options.momentum;
  training.nesterov = options.nesterov;
  training.weightDecay = options.weightDecay;
  training.noDecayBnBias = options.noDecayBnBias;
  training.precision = options.precision;
  training.lossScaling = options.lossScaling;
  training.lossScale = options.lossScale;
  training.emaDecay = options.emaDecay;
  training.dataParallel = options.dataParallel;
  pm.addPass(createBuildTraining(training));
  pm.addPass(createFuseCbr(FuseCbrOptions{options.fuse}));
  if (options.recomputeReluMask)
    pm.addPass(createRecomputeReluMask());
  if (options.padConvChannels > 1)
    pm.addPass(createPadConvChannels(PadConvChannelsOptions{options.padConvChannels}));
  if (options.foldGradientAdds)
    pm.addPass(createFoldGradientAdds(
        FoldGradientAddsOptions{options.foldGradientAddsMaxStride}));
  if (options.fuseBnPrologue)
    pm.addPass(createFuseBnPrologue());
  pm.addPass(createPartition());
  if (options.dataParallel && options.allReduceBucketBytes > 0) {
    BucketAllReduceOptions buckets;
    buckets.bucketBytes = options.allReduceBucketBytes;
    pm.addPass(createBucketAllReduce(buckets));
  }
  if (options.groupUpdates)
    pm.addPass(createGroupUpdates());
  if (options.groupElementwise)
    pm.addPass(createGroupElementwise());
  PlanMemoryOptions memory;
  memory.reuse = options.reuse;
  pm.addPass(createPlanMemory(memory));
  AssignStreamsOptions streams;
  streams.singleStream = options.singleStream;
  pm.addPass(createAssignStreams(streams));
  pm.addPass(createInsertBarriers());
  if (options.verify)
    pm.addPass(createVerifySchedule());
}

void mlir::rn::registerTrainingPipeline() {
  PassPipelineRegistration<TrainingPipelineOptions>(
      "rn-training-pipeline",
      "Model -> scheduled training step: build-training, fuse-cbr, "
      "recompute-relu-mask, pad-conv-channels, fold-gradient-adds, "
      "fuse-bn-prologue (off by default), partition, "
      "bucket-all-reduce (data-parallel), group-updates, group-elementwise, "
      "plan-memory, assign-streams, insert-barriers, verify-schedule",
      buildPipeline);
}
