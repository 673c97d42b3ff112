//===- trainer.cpp - Training steps, evaluation and state over an executor ===//

#include "runtime/train/trainer.h"

#include "runtime/core/op_table.h"
#include "runtime/core/safetensors.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/train/data_parallel.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

namespace rn::train {
namespace {

/// The loss node of `fn` (its first softmax_cross_entropy), or null.
const Node *lossNode(const Function &fn) {
  for (const Subgraph &sg : fn.subgraphs)
    for (const Node &n : sg.nodes)
      if (n.kind == Node::Kind::op && n.op == "softmax_cross_entropy")
        return &n;
  return nullptr;
}

/// The class count: the last dimension of the loss's logits (0 without).
int64_t classCount(const Function &fn) {
  const Node *loss = lossNode(fn);
  if (!loss || loss->operands.empty())
    return 0;
  const auto &shape =
      fn.tensors[loss->operand(op_table::softmax_cross_entropy::operand::logits)].shape;
  return shape.empty() ? 0 : shape.back();
}

std::string stepRange(int64_t first, int64_t last) {
  return std::to_string(first) + "-" + std::to_string(last);
}

} // namespace

Trainer::Trainer(Executor &executor, Options options, std::vector<int64_t> imageShape,
                 DType imageDType, int64_t classes, double labelSmoothing)
    : executor_(executor), options_(options), imageShape_(std::move(imageShape)),
      imageDType_(imageDType), classes_(classes), labelSmoothing_(labelSmoothing),
      imagePool_(executor, size_t(numel(imageShape_)) * elementSize(imageDType_)),
      deviceImagePool_(executor, size_t(numel(imageShape_)) * elementSize(imageDType_),
                       InputBlockPool::Memory::device) {
  imageSize_ = numel(imageShape_) / imageShape_[0];
  if (options_.ranks)
    group_ = options_.ranks->group();
}

Result<std::unique_ptr<Trainer>> Trainer::create(Executor &executor, Options options) {
  const Program &program = executor.program();
  const Function *train = program.findFunction("train_step");
  if (!train)
    return Error("the artifact has no train_step function");
  Result<std::vector<int64_t>> images = executor.inputShape("train_step", "images");
  Result<std::vector<int64_t>> labels = executor.inputShape("train_step", "labels");
  if (!images || !labels || images->empty() || labels->size() != 1)
    return Error("train_step needs inputs images [N, ...] and labels [N]");
  if ((*images)[0] < 1)
    return Error("the images input has batch size " + std::to_string((*images)[0]));
  if ((*labels)[0] != (*images)[0])
    return Error("train_step's labels " + shapeString(*labels) + " do not match its images " +
                 shapeString(*images));
  int64_t classes = classCount(*train);
  if (classes < 1)
    return Error("cannot find the class count (no softmax_cross_entropy)");
  if (options.window < 1)
    return Error("the window of steps must be at least 1, got " +
                 std::to_string(options.window));
  double smoothing = 0;
  if (const Function *eval = program.findFunction("eval_step"))
    if (const Node *loss = lossNode(*eval))
      smoothing = loss->attributes.value("label_smoothing", 0.0);
  DType imageDType = *executor.inputDType("train_step", "images");
  if (imageDType != DType::u8 && imageDType != DType::f32 && imageDType != DType::f16 &&
      imageDType != DType::bf16)
    return Error("train_step's images are " + std::string(dtypeName(imageDType)) +
                 "; a trainer feeds float images or uint8 pixels");
  return std::unique_ptr<Trainer>(new Trainer(executor, options, std::move(*images), imageDType,
                                              classes, smoothing));
}

//===----------------------------------------------------------------------===//
// Training steps
//===----------------------------------------------------------------------===//

Status Trainer::setNextStep(int64_t step) {
  if (pending() != 0)
    return Error("the step counter cannot change with " + std::to_string(pending()) +
                 " steps queued or in flight");
  if (step < 1 || step > INT32_MAX)
    return Error("step " + std::to_string(step) + " is out of range [1, 2^31)");
  nextStep_ = nextFinished_ = step;
  return Status::success();
}

Result<std::shared_ptr<void>> Trainer::imageBlock() { return imagePool_.acquire(); }

Result<std::shared_ptr<void>> Trainer::deviceImageBlock() { return deviceImagePool_.acquire(); }

Result<int64_t> Trainer::step(Batch batch, float lr) {
  if (int64_t(batch.labels.size()) != this->batch())
    return Error("a step of batch " + std::to_string(this->batch()) + " got " +
                 std::to_string(batch.labels.size()) + " labels");
  if (!batch.images)
    return Error("a step without images");
  if (nextStep_ > INT32_MAX)
    return Error("the step number exceeds the program's 32-bit step input");
  int64_t number = nextStep_++;
  queued_.push_back(Executor::trainInputs(std::move(batch.images),
                                          size_t(this->batch() * imageSize_), batch.labels, lr,
                                          int32_t(number), batch.imagesOnDevice));
  if (int64_t(queued_.size()) >= options_.window)
    RN_RETURN_IF_ERROR(flush());
  return number;
}

namespace {

/// The message for images of the wrong kind: floats for a u8 model, pixels
/// for a float one.
Error wrongImages(DType model, const char *what) {
  if (model == DType::u8)
    return Error(std::string(what) + ": the model takes uint8 pixels (its images input is ui8, "
                                     "normalized on the device), not floats");
  return Error(std::string(what) + ": the model takes " + std::string(dtypeName(model)) +
               " images, normalized on the host, not uint8 pixels");
}

} // namespace

Result<int64_t> Trainer::step(const float *images, const int32_t *labels, float lr) {
  if (imageDType_ == DType::u8)
    return wrongImages(imageDType_, "a step of floats");
  Result<std::shared_ptr<void>> block = imageBlock();
  if (!block)
    return block.error();
  std::memcpy(block->get(), images, size_t(batch() * imageSize_) * sizeof(float));
  return step(Batch{*block, std::vector<int32_t>(labels, labels + batch())}, lr);
}

Result<int64_t> Trainer::step(const uint8_t *pixels, const int32_t *labels, float lr) {
  if (imageDType_ != DType::u8)
    return wrongImages(imageDType_, "a step of pixels");
  Result<std::shared_ptr<void>> block = imageBlock();
  if (!block)
    return block.error();
  std::memcpy(block->get(), pixels, size_t(batch() * imageSize_));
  return step(Batch{*block, std::vector<int32_t>(labels, labels + batch())}, lr);
}

Status Trainer::submitQueued() {
  if (queued_.empty())
    return Status::success();
  int64_t first = nextStep_ - int64_t(queued_.size());
  ScopedSpan span(options_.spans, "submit steps " + stepRange(first, nextStep_ - 1));
  std::vector<StepInputs> steps = std::move(queued_);
  queued_.clear();
  return executor_.submit("train", std::move(steps));
}

void Trainer::collect(std::vector<StepOutputs> &finished) {
  for (StepOutputs &out : finished) {
    auto it = out.find("loss");
    float loss = it != out.end() && !it->second.floats.empty() ? it->second.floats[0] : NAN;
    losses_.push_back({nextFinished_++, loss});
  }
  finished.clear();
}

Status Trainer::flush() {
  RN_RETURN_IF_ERROR(submitQueued());
  ScopedSpan span(options_.spans, "poll");
  std::vector<StepOutputs> finished;
  Status st = executor_.poll(finished);
  collect(finished);
  return st;
}

Status Trainer::drain() {
  RN_RETURN_IF_ERROR(submitQueued());
  ScopedSpan span(options_.spans, "drain");
  std::vector<StepOutputs> finished;
  Status st = executor_.drain(finished);
  collect(finished);
  return st;
}

int64_t Trainer::pending() const { return nextStep_ - nextFinished_; }

std::vector<StepLoss> Trainer::takeLosses() {
  std::vector<StepLoss> taken = std::move(losses_);
  losses_.clear();
  return taken;
}

Status Trainer::runSteps(const std::vector<HostBatch> &batches, const std::vector<float> &lrs) {
  if (pending() != 0)
    return Error("runSteps with " + std::to_string(pending()) +
                 " steps queued or in flight: drain first");
  if (batches.empty())
    return Status::success();
  int64_t first = nextStep_, last = nextStep_ + int64_t(batches.size()) - 1;
  if (last > INT32_MAX)
    return Error("the step number exceeds the program's 32-bit step input");
  ScopedSpan span(options_.spans, "train steps " + stepRange(first, last));
  std::vector<TrainOutputs> outputs;
  RN_RETURN_IF_ERROR(executor_.trainSteps(batches, lrs, int32_t(first), outputs));
  for (const TrainOutputs &out : outputs)
    losses_.push_back({nextFinished_++, out.loss});
  nextStep_ = nextFinished_;
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Evaluation and prediction
//===----------------------------------------------------------------------===//

Status Trainer::checkEvalInput() const {
  Result<std::vector<int64_t>> shape = executor_.inputShape("eval_step", "images");
  if (!shape)
    return Error("the artifact has no eval_step images input: " + shape.error().message());
  if (*shape != imageShape_)
    return Error("eval_step's images input " + shapeString(*shape) +
                 " differs from train_step's " + shapeString(imageShape_));
  Result<DType> dtype = executor_.inputDType("eval_step", "images");
  if (!dtype || *dtype != imageDType_)
    return Error("eval_step's images are " +
                 std::string(dtype ? dtypeName(*dtype) : std::string_view("missing")) +
                 ", train_step's " + std::string(dtypeName(imageDType_)));
  return Status::success();
}

Result<Evaluation> Trainer::evaluate(const DataSource &test, const BatchOptions &options) {
  RN_RETURN_IF_ERROR(drain());
  RN_RETURN_IF_ERROR(checkEvalInput());
  if (test.imageSize() != imageSize_)
    return Error(test.name() + ": images of " + std::to_string(test.imageSize()) +
                 " values, the model takes " + std::to_string(imageSize_));
  const bool pixels = imageDType_ == DType::u8;
  if (pixels && !test.hasPixels())
    return Error(test.name() + ": holds float images, and the model takes uint8 pixels (its "
                               "images input is ui8, normalized on the device)");
  if (options_.ranks)
    if (Status st = options_.ranks->averageBuffers(executor_); !st)
      return st.error().withContext("before the evaluation");
  const int64_t n = batch();
  Evaluation result;
  double lossSum = 0; // over examples
  HostBatch hb;
  if (pixels)
    hb.pixels.resize(size_t(n * imageSize_));
  else
    hb.images.resize(size_t(n * imageSize_));
  hb.labels.resize(size_t(n));
  std::vector<int64_t> indices(static_cast<size_t>(n));
  BatchOptions reading = options;
  reading.draw = BatchDraw{};
  for (int64_t first = int64_t(group_.rank) * n; first < test.count();
       first += n * group_.worldSize) {
    int64_t rows = std::min(n, test.count() - first);
    for (int64_t i = 0; i < n; ++i)
      indices[size_t(i)] = i < rows ? first + i : (i - rows) % test.count();
    RN_RETURN_IF_ERROR(test.fillInputBatch(
        imageDType(), indices.data(), n,
        pixels ? static_cast<void *>(hb.pixels.data()) : static_cast<void *>(hb.images.data()),
        hb.labels.data(), reading));
    EvalOutputs out;
    if (Status st = executor_.evalStep(hb, out); !st)
      return Error("evaluation batch " + std::to_string(first / n + 1) + ": " +
                   st.error().message());
    if (rows == n) {
      lossSum += double(out.loss) * double(n);
      result.correct += out.correct;
      result.evaluated += n;
      continue;
    }
    if (out.logits.size() != size_t(n * classes_))
      break; // the program returns no logits: the partial batch is skipped
    cpu::TensorView logits{out.logits.data(), {rows, classes_}, DType::f32};
    cpu::LabelView labels{hb.labels.data(), {rows}};
    float loss = 0;
    int32_t correct = 0;
    cpu::KernelStatus ls = cpu::softmaxCrossEntropy(logits, labels, labelSmoothing_, loss);
    cpu::KernelStatus cs = cpu::countCorrect(logits, labels, correct);
    if (!ls.ok() || !cs.ok())
      return Error("evaluation of the last " + std::to_string(rows) +
                   " examples: " + (ls.ok() ? cs.error : ls.error));
    lossSum += double(loss) * double(rows);
    result.correct += correct;
    result.evaluated += rows;
  }
  std::vector<double> sums = {lossSum, double(result.correct), double(result.evaluated)};
  if (Status st = sumOverRanks(sums); !st)
    return st.error().withContext("adding the ranks' evaluations");
  lossSum = sums[0];
  result.correct = int64_t(sums[1]);
  result.evaluated = int64_t(sums[2]);
  result.loss = result.evaluated ? lossSum / double(result.evaluated) : 0;
  return result;
}

template <typename Fill>
Result<std::vector<float>> Trainer::predictBatches(int64_t count, Fill fill) {
  RN_RETURN_IF_ERROR(drain());
  RN_RETURN_IF_ERROR(checkEvalInput());
  const int64_t n = batch();
  std::vector<float> logits;
  logits.reserve(size_t(count * classes_));
  HostBatch hb;
  hb.labels.assign(size_t(n), 0); // the loss is not wanted; any valid label
  for (int64_t first = 0; first < count; first += n) {
    int64_t rows = std::min(n, count - first);
    fill(first, rows, hb);
    EvalOutputs out;
    if (Status st = executor_.evalStep(hb, out); !st)
      return Error("prediction batch " + std::to_string(first / n + 1) + ": " +
                   st.error().message());
    if (out.logits.size() != size_t(n * classes_))
      return Error("the program returns no logits from eval_step (got " +
                   std::to_string(out.logits.size()) + " values, expected " +
                   std::to_string(n * classes_) + ")");
    logits.insert(logits.end(), out.logits.begin(), out.logits.begin() + rows * classes_);
  }
  return logits;
}

Result<std::vector<float>> Trainer::predict(const float *images, int64_t count) {
  if (imageDType_ == DType::u8)
    return wrongImages(imageDType_, "prediction of floats");
  // A short last batch is padded with zeros: evaluation normalizes with
  // the running statistics, so rows do not affect each other.
  return predictBatches(count, [&](int64_t first, int64_t rows, HostBatch &hb) {
    hb.images.assign(size_t(batch() * imageSize_), 0.0f);
    std::memcpy(hb.images.data(), images + first * imageSize_,
                size_t(rows * imageSize_) * sizeof(float));
  });
}

Result<std::vector<float>> Trainer::predict(const uint8_t *pixels, int64_t count) {
  if (imageDType_ != DType::u8)
    return wrongImages(imageDType_, "prediction of pixels");
  return predictBatches(count, [&](int64_t first, int64_t rows, HostBatch &hb) {
    hb.pixels.assign(size_t(batch() * imageSize_), 0);
    std::memcpy(hb.pixels.data(), pixels + first * imageSize_, size_t(rows * imageSize_));
  });
}

//===----------------------------------------------------------------------===//
// Input normalization
//===----------------------------------------------------------------------===//

Result<std::pair<std::string, std::string>> Trainer::normalizationState() const {
  if (imageDType_ != DType::u8)
    return Error("the model's images input is " + std::string(dtypeName(imageDType_)) +
                 ": the host normalizes its images, and the device none (compile the model "
                 "with a uint8 images input to normalize on the device)");
  const Function *train = program().findFunction("train_step");
  std::map<uint32_t, std::string> stateOf;
  for (const Binding &b : train->state)
    stateOf[b.tensor] = b.name;
  // The mean and std operands of its normalize_images, or of the stem's
  // pad_channels that rn-pad-conv-channels fused it into.
  for (const Subgraph &sg : train->subgraphs)
    for (const Node &n : sg.nodes) {
      std::optional<std::pair<uint32_t, uint32_t>> operands;
      if (n.kind != Node::Kind::op)
        continue;
      if (n.op == "normalize_images")
        operands = std::make_pair(n.operand(op_table::normalize_images::operand::mean),
                                  n.operand(op_table::normalize_images::operand::std));
      else if (n.op == "pad_channels" &&
               n.layout.operands.has(op_table::pad_channels::operand::mean))
        operands = std::make_pair(n.operand(op_table::pad_channels::operand::mean),
                                  n.operand(op_table::pad_channels::operand::std));
      if (!operands)
        continue;
      auto mean = stateOf.find(operands->first), std = stateOf.find(operands->second);
      if (mean == stateOf.end() || std == stateOf.end())
        return Error("train_step's " + n.op + " normalizes with values that are not state");
      return std::make_pair(mean->second, std->second);
    }
  return Error("train_step has uint8 images but no normalize_images (nor a normalizing "
               "pad_channels) that reads them");
}

Status Trainer::setInputNormalization(const std::vector<float> &mean,
                                      const std::vector<float> &std) {
  Result<std::pair<std::string, std::string>> names = normalizationState();
  if (!names)
    return names.error().withContext("setting the input normalization");
  const int64_t channels = imageShape_.back();
  if (int64_t(mean.size()) != channels || int64_t(std.size()) != channels)
    return Error("setting the input normalization: the model's images have " +
                 std::to_string(channels) + " channels; got " + std::to_string(mean.size()) +
                 " means and " + std::to_string(std.size()) + " stds");
  for (size_t c = 0; c < mean.size(); ++c)
    if (!std::isfinite(mean[c]) || !std::isfinite(std[c]) || !(std[c] > 0))
      return Error("setting the input normalization: channel " + std::to_string(c) +
                   " has mean " + std::to_string(mean[c]) + " and std " +
                   std::to_string(std[c]) + " (finite values, std positive)");
  RN_RETURN_IF_ERROR(writeState(names->first, mean));
  return writeState(names->second, std);
}

Result<ChannelNormalization> Trainer::inputNormalization() {
  Result<std::pair<std::string, std::string>> names = normalizationState();
  if (!names)
    return names.error();
  ChannelNormalization normalization;
  Result<std::vector<float>> mean = readState(names->first);
  if (!mean)
    return mean.error();
  Result<std::vector<float>> std = readState(names->second);
  if (!std)
    return std.error();
  normalization.mean = std::move(*mean);
  normalization.std = std::move(*std);
  return normalization;
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

std::vector<StateInfo> Trainer::state(std::string_view role) const {
  std::vector<StateInfo> entries;
  for (const StateEntry &e : program().state)
    if (role.empty() || e.role == role)
      entries.push_back({e.name, e.role, e.of, e.dtype, e.shape});
  return entries;
}

Result<std::vector<float>> Trainer::readState(std::string_view name) {
  RN_RETURN_IF_ERROR(drain());
  return executor_.readState(name);
}

Status Trainer::writeState(std::string_view name, const std::vector<float> &values) {
  RN_RETURN_IF_ERROR(drain());
  return executor_.writeState(name, values);
}

Result<NamedValues> Trainer::stateDict(std::string_view role) {
  RN_RETURN_IF_ERROR(drain());
  NamedValues dict;
  for (const StateEntry &e : program().state) {
    if (!role.empty() && e.role != role)
      continue;
    Result<std::vector<float>> values = executor_.readState(e.name);
    if (!values)
      return values.error().withContext("state " + e.name);
    dict.emplace_back(e.name, std::move(*values));
  }
  return dict;
}

Status Trainer::loadStateDict(const NamedValues &values) {
  RN_RETURN_IF_ERROR(drain());
  for (const auto &[name, data] : values) {
    const StateEntry *entry = nullptr;
    for (const StateEntry &e : program().state)
      if (e.name == name)
        entry = &e;
    if (!entry)
      return Error("state " + name + ": the program has no such entry");
    if (int64_t(data.size()) != numel(entry->shape))
      return Error("state " + name + ": " + std::to_string(data.size()) + " values, its shape " +
                   shapeString(entry->shape) + " holds " +
                   std::to_string(numel(entry->shape)));
    if (Status st = executor_.writeState(name, data); !st)
      return st.error().withContext("state " + name);
  }
  // State derived from a parameter (its low-precision copy, its EMA) follows
  // the parameter's new values unless given itself: an f16 step must not
  // read the copies of the weights the parameters had before.
  std::map<std::string_view, const std::vector<float> *> given;
  for (const auto &[name, data] : values)
    given[name] = &data;
  for (const StateEntry &e : program().state) {
    auto source = given.find(e.of);
    if (e.init.kind != "derived" || source == given.end() || given.count(e.name))
      continue;
    if (Status st = executor_.writeState(e.name, *source->second); !st) // rounds to e's dtype
      return st.error().withContext("state " + e.name + " (derived from " + e.of + ")");
  }
  return Status::success();
}

Status Trainer::sumOverRanks(std::vector<double> &values) {
  return options_.ranks ? options_.ranks->sum(values) : Status::success();
}

} // namespace rn::train
