//===- rn_native.cpp - runtime/train as the Python module rn._native ------===//
//
// The thin native half of rn.Trainer (python-frontend/rn/trainer.py): one
// rank's Session (executor, trainer, rank links) and the calls that move
// data in and out of it. The Python half checks every argument and raises
// ValueError before anything reaches this module; the checks here repeat
// the ones a wrong call could turn into a bad memory access, so the module
// is safe on its own.
//
// Threads: the GIL is released while batches are copied, steps submitted
// and the device waited for; a mutex per trainer orders calls from several
// Python threads.
//
// Failures: a runtime error (CUDA, cuDNN, a non-finite loss check, a dead
// data-parallel rank) raises TrainerError with the runtime's message and
// marks the trainer failed: every later call that would touch the executor
// raises TrainerError again with that first message, instead of running on
// a device in an unknown state.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/process_group.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/data_source.h"
#include "runtime/train/executor_factory.h"
#include "runtime/train/gpu_backend.h"
#include "runtime/train/lr_schedule.h"
#include "runtime/train/session.h"
#include "runtime/train/trainer.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>


#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>

namespace nb = nanobind;
using namespace rn;
using namespace rn::train;

namespace {

/// A runtime failure; Python sees rn.TrainerError (a RuntimeError).
struct TrainerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using HostArray = nb::ndarray<nb::ro, nb::device::cpu>;
using FloatArray = nb::ndarray<float, nb::numpy, nb::c_contig, nb::device::cpu>;

const char *dtypeString(DType d) {
  switch (d) {
  case DType::f32:
    return "float32";
  case DType::f16:
    return "float16";
  case DType::bf16:
    return "bfloat16";
  case DType::i32:
    return "int32";
  case DType::u8:
    return "uint8";
  default:
    return "other";
  }
}

/// A numpy float32 array that owns `values`.
FloatArray toNumpy(std::vector<float> values, std::vector<size_t> shape) {
  auto *owned = new std::vector<float>(std::move(values));
  nb::capsule owner(owned, [](void *p) noexcept { delete static_cast<std::vector<float> *>(p); });
  return FloatArray(owned->data(), shape.size(), shape.data(), owner);
}

int64_t elementCount(const nb::ndarray<> &a) {
  int64_t n = 1;
  for (size_t i = 0; i < a.ndim(); ++i)
    n *= int64_t(a.shape(i));
  return n;
}

/// `batch` labels of integer dtype `dt` at `base`, `stride` elements apart,
/// as int32, each in [0, classes).
std::vector<int32_t> labelsOf(const void *base, nb::dlpack::dtype dt, int64_t stride,
                              int64_t batch, int64_t classes) {
  if (dt.code != uint8_t(nb::dlpack::dtype_code::Int) &&
      dt.code != uint8_t(nb::dlpack::dtype_code::UInt))
    throw nb::value_error("labels must be of an integer dtype");
  if (dt.bits != 8 && dt.bits != 16 && dt.bits != 32 && dt.bits != 64)
    throw nb::value_error("labels must be of an 8-, 16-, 32- or 64-bit integer dtype");
  std::vector<int32_t> out(static_cast<size_t>(batch));
  const bool isSigned = dt.code == uint8_t(nb::dlpack::dtype_code::Int);
  const int64_t byteStride = stride * (dt.bits / 8);
  for (int64_t i = 0; i < batch; ++i) {
    const char *p = static_cast<const char *>(base) + i * byteStride;
    uint64_t u = 0;
    std::memcpy(&u, p, dt.bits / 8); // little-endian: the low bytes
    int64_t v;
    if (isSigned) {
      const int shift = 64 - dt.bits;
      v = shift ? int64_t(u << shift) >> shift : int64_t(u);
    } else {
      v = u > uint64_t(INT64_MAX) ? -1 : int64_t(u);
    }
    if (v < 0 || v >= classes)
      throw nb::value_error(("label " + std::to_string(v) + " at index " + std::to_string(i) +
                             " is outside [0, " + std::to_string(classes) + ")")
                                .c_str());
    out[size_t(i)] = int32_t(v);
  }
  return out;
}

std::vector<int32_t> labelsOf(const HostArray &labels, int64_t batch, int64_t classes) {
  if (labels.ndim() != 1 || int64_t(labels.shape(0)) != batch)
    throw nb::value_error(("labels must have shape [" + std::to_string(batch) + "]").c_str());
  return labelsOf(labels.data(), labels.dtype(), labels.stride(0), batch, classes);
}

/// A block of host input memory handed to Python (Trainer.input_buffer):
/// its numpy view keeps this object, and so the block, alive; the pool
/// hands the block to nobody else while it lives.
struct HostBlock {
  std::shared_ptr<void> block;
  std::vector<size_t> shape; ///< NHWC
  bool pixels = false;       ///< uint8 (a model that normalizes on the device), else float32
  bool consumed = false;
};

class NativeTrainer {
public:
  NativeTrainer(const std::string &path, const std::string &executor, uint64_t seed,
                bool deterministic, bool allowTf32, const std::string &planCache, int64_t window,
                bool interleave) {
    Result<std::shared_ptr<const Artifact>> artifact = loadArtifactFile(path);
    if (!artifact)
      throw TrainerFailure(artifact.error().message());
    Result<ProcessGroup> group = processGroupFromEnvironment();
    if (!group)
      throw TrainerFailure(group.error().message());
    if (executor != "auto" && executor != "cpu" && executor != "cuda-eager" &&
        executor != "cuda-graph")
      throw nb::value_error(("executor must be auto, cpu, cuda-eager or cuda-graph, got '" +
                             executor + "'")
                                .c_str());
    const std::string kind = resolveExecutorKind(executor);
    Session::Config config;
    config.group = *group;
    // Data-parallel when launched with torchrun's variables, as rn-run.
    config.dataParallel = std::getenv("WORLD_SIZE") != nullptr;
    config.artifactPath = path;
    config.executor.kind = kind;
    config.executor.seed = seed;
    config.executor.interleave = interleave;
    config.executor.deterministic = deterministic;
    config.executor.allowTf32 = allowTf32;
    config.executor.planCacheFile = kind == "cpu" ? "" : planCachePath(planCache);
    config.window = window;
    Result<std::unique_ptr<Session>> session = Error("not opened");
    {
      nb::gil_scoped_release released;
      session = Session::open(*artifact, config);
    }
    if (!session)
      throw TrainerFailure(session.error().message());
    session_ = std::move(*session);
    seed_ = seed;
    if (kind != "cpu") {
      // The session loaded the GPU half; it answers for the inputs' copies.
      Result<GpuBackend *> backend = gpuBackend();
      if (!backend)
        throw TrainerFailure(backend.error().message());
      gpu_ = *backend;
      Result<int> device = gpu_->currentDevice();
      if (!device)
        throw TrainerFailure("cannot read the trainer's CUDA device: " +
                             device.error().message());
      device_ = *device;
    }
  }

  ~NativeTrainer() {
    if (copyStream_)
      gpu_->destroyStream(copyStream_);
    if (session_ && failure_.empty()) {
      // Finish what is in flight before the executor goes; a failure here
      // cannot be reported from a destructor.
      nb::gil_scoped_release released;
      (void)session_->trainer().drain();
      session_->succeeded();
    }
  }

  Trainer &trainer() { return session_->trainer(); }

  std::string executorName() { return std::string(session_->executor().name()); }
  std::string model() { return trainer().program().model; }
  int64_t batch() { return trainer().batch(); }
  std::vector<int64_t> imageShape() { return trainer().imageShape(); }
  /// "uint8" for a model that normalizes on the device, else "float32"
  /// (the host arrays the trainer takes).
  std::string imageDType() { return pixels() ? "uint8" : "float32"; }
  bool pixels() { return trainer().imageDType() == DType::u8; }
  int64_t classes() { return trainer().classes(); }
  int64_t window() { return trainer().window(); }
  uint64_t seed() const { return seed_; }
  int rank() { return trainer().group().rank; }
  int worldSize() { return trainer().group().worldSize; }
  int device() const { return device_; }
  int64_t nextStep() { return trainer().nextStep(); }
  int64_t pending() { return trainer().pending(); }
  std::string failure() const { return failure_; }

  /// (name, role, dtype, shape) of every state entry of `role` (all when
  /// empty), in program order.
  std::vector<std::tuple<std::string, std::string, std::string, std::vector<int64_t>>>
  stateInfo(const std::string &role) {
    std::vector<std::tuple<std::string, std::string, std::string, std::vector<int64_t>>> out;
    for (const StateInfo &e : trainer().state(role))
      out.emplace_back(e.name, e.role, dtypeString(e.dtype), e.shape);
    return out;
  }

  //===------------------------------------------------------------------===//
  // Steps
  //===------------------------------------------------------------------===//

  HostBlock inputBlock() {
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Result<std::shared_ptr<void>> block = trainer().imageBlock();
    if (!block)
      fail(block.error());
    HostBlock b;
    b.block = std::move(*block);
    for (int64_t d : trainer().imageShape())
      b.shape.push_back(size_t(d));
    b.pixels = pixels();
    return b;
  }

  /// A step from a host array of shape [N, H, W, C] or [N, C, H, W] (per
  /// `channelsFirst`), any strides, float32 (uint8 for a model that
  /// normalizes on the device): copied into a block.
  template <typename T>
  int64_t stepHost(const nb::ndarray<T, nb::ro, nb::device::cpu> &images, bool channelsFirst,
                   const HostArray &labels, float lr) {
    checkImageType<T>();
    const std::vector<int64_t> &shape = trainer().imageShape();
    checkImages(images.ndim(), [&](size_t i) { return int64_t(images.shape(i)); }, channelsFirst);
    std::vector<int32_t> ints = labelsOf(labels, batch(), classes());
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Result<std::shared_ptr<void>> block = trainer().imageBlock();
    if (!block)
      fail(block.error());
    {
      nb::gil_scoped_release released;
      gatherNhwc(images, channelsFirst, shape, static_cast<T *>(block->get()));
    }
    return submit(Trainer::Batch{std::move(*block), std::move(ints)}, lr);
  }

  /// A step from a block of inputBlock() the caller filled.
  int64_t stepBlock(HostBlock &block, const HostArray &labels, float lr) {
    if (block.consumed || !block.block)
      throw nb::value_error("this input buffer was already given to a step; take a new one "
                            "with trainer.input_buffer()");
    std::vector<int32_t> ints = labelsOf(labels, batch(), classes());
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    block.consumed = true;
    return submit(Trainer::Batch{block.block, std::move(ints)}, lr);
  }

  /// The CUDA stream the trainer copies CUDA inputs on: producers make it
  /// wait for their stream (DLPack's `stream` argument of __dlpack__).
  uintptr_t copyStream() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (device_ < 0)
      throw nb::value_error(("the " + executorName() + " executor takes no CUDA tensors").c_str());
    ensureCopyStream();
    return reinterpret_cast<uintptr_t>(copyStream_);
  }

  /// A step from CUDA tensors given as DLPack capsules made for
  /// copyStream(): images NHWC and contiguous (the Python half reorders
  /// NCHW on the producer's device), labels contiguous of any integer
  /// dtype. On the copy stream, which the producer made wait for its work,
  /// the images go device to device into one of the trainer's device
  /// blocks (the step's host-to-device copy then reads that block) and the
  /// labels to the host (the step takes them as host values); both copies
  /// have finished when this returns, so the caller may free or reuse its
  /// tensors at once.
  int64_t stepCuda(nb::ndarray<nb::ro, nb::device::cuda> images,
                   nb::ndarray<nb::ro, nb::device::cuda> labels, float lr) {
    if (device_ < 0)
      throw nb::value_error(("the " + executorName() + " executor takes no CUDA tensors").c_str());
    const std::vector<int64_t> &shape = trainer().imageShape();
    checkImages(images.ndim(), [&](size_t i) { return int64_t(images.shape(i)); }, false);
    if (images.dtype() != (pixels() ? nb::dtype<uint8_t>() : nb::dtype<float>()))
      throw nb::value_error(pixels() ? "CUDA images must be uint8 (the model normalizes them "
                                       "on the device)"
                                     : "CUDA images must be float32");
    if (!contiguous(images))
      throw nb::value_error("CUDA images must be NHWC-contiguous here");
    if (images.device_id() != device_ || labels.device_id() != device_)
      throw nb::value_error(("the trainer runs on cuda:" + std::to_string(device_) +
                             ", the tensors are on cuda:" + std::to_string(images.device_id()) +
                             " and cuda:" + std::to_string(labels.device_id()))
                                .c_str());
    if (labels.ndim() != 1 || int64_t(labels.shape(0)) != batch() || !contiguous(labels))
      throw nb::value_error(("labels must be contiguous with shape [" +
                             std::to_string(batch()) + "]")
                                .c_str());
    const nb::dlpack::dtype dt = labels.dtype();
    if (dt.code != uint8_t(nb::dlpack::dtype_code::Int) &&
        dt.code != uint8_t(nb::dlpack::dtype_code::UInt))
      throw nb::value_error("labels must be of an integer dtype");
    std::vector<char> labelBytes(size_t(batch()) * (dt.bits / 8));
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    ensureCopyStream();
    Result<std::shared_ptr<void>> block = trainer().deviceImageBlock();
    if (!block)
      fail(block.error());
    const size_t imageBytes = size_t(numel(shape)) * elementSize(trainer().imageDType());
    {
      nb::gil_scoped_release released;
      checkCuda(gpu_->copyAsync(block->get(), images.data(), imageBytes,
                                GpuCopy::deviceToDevice, copyStream_),
                "copying the CUDA images");
      checkCuda(gpu_->copyAsync(labelBytes.data(), labels.data(), labelBytes.size(),
                                GpuCopy::deviceToHost, copyStream_),
                "copying the CUDA labels");
      checkCuda(gpu_->synchronize(copyStream_), "waiting for the CUDA input copies");
    }
    std::vector<int32_t> ints = labelsOf(labelBytes.data(), dt, 1, batch(), classes());
    return submit(Trainer::Batch{std::move(*block), std::move(ints), /*imagesOnDevice=*/true}, lr);
  }

  void flush() {
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Status st;
    {
      nb::gil_scoped_release released;
      st = trainer().flush();
    }
    if (!st)
      fail(st.error());
  }

  void drain() {
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    drainLocked();
  }

  /// Blocks until step `step`'s loss is collected: polls while later steps
  /// keep it going, drains when it is the newest (the schedule holds the
  /// newest step until its successor arrives).
  void waitFor(int64_t step) {
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Status st;
    {
      nb::gil_scoped_release released;
      st = trainer().flush();
      while (st && collectedThrough() < step) {
        if (step >= trainer().nextStep() - 1) {
          st = trainer().drain();
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        st = trainer().flush();
      }
    }
    if (!st)
      fail(st.error());
  }

  /// Losses collected and not taken yet: (step, loss), oldest first.
  std::vector<std::pair<int64_t, float>> takeLosses() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<int64_t, float>> out;
    for (const StepLoss &l : trainer().takeLosses())
      out.emplace_back(l.step, l.loss);
    return out;
  }

  void setNextStep(int64_t step) {
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    drainLocked();
    if (Status st = trainer().setNextStep(step); !st)
      throw nb::value_error(st.error().message().c_str());
  }

  //===------------------------------------------------------------------===//
  // Evaluation and prediction (images NHWC, C-contiguous float32)
  //===------------------------------------------------------------------===//

  template <typename T>
  std::tuple<double, int64_t, int64_t>
  evaluate(const nb::ndarray<T, nb::ro, nb::c_contig, nb::device::cpu> &images,
           const nb::ndarray<int32_t, nb::ro, nb::c_contig, nb::device::cpu> &labels) {
    checkImageType<T>();
    const int64_t count = int64_t(labels.shape(0));
    if (images.ndim() != 4 || int64_t(images.shape(0)) != count)
      throw nb::value_error("evaluate: images and labels differ in count");
    checkImages(images.ndim(), [&](size_t i) { return i == 0 ? batch() : int64_t(images.shape(i)); },
                false);
    std::vector<int32_t> ints(labels.data(), labels.data() + count);
    for (int64_t i = 0; i < count; ++i)
      if (ints[size_t(i)] < 0 || ints[size_t(i)] >= classes())
        throw nb::value_error(("label " + std::to_string(ints[size_t(i)]) + " at index " +
                               std::to_string(i) + " is outside [0, " +
                               std::to_string(classes()) + ")")
                                  .c_str());
    std::vector<int64_t> exampleShape(trainer().imageShape().begin() + 1,
                                      trainer().imageShape().end());
    std::vector<T> values(images.data(), images.data() + elementCount(nb::ndarray<>(images)));
    using Source = std::conditional_t<std::is_same_v<T, uint8_t>, MemoryPixelSource,
                                      MemoryDataSource>;
    Result<Source> source =
        Source::create("the evaluated arrays", exampleShape, std::move(values), std::move(ints));
    if (!source)
      throw nb::value_error(source.error().message().c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Result<Evaluation> result = Error("not run");
    {
      nb::gil_scoped_release released;
      result = trainer().evaluate(*source);
    }
    if (!result)
      fail(result.error());
    return {result->loss, result->correct, result->evaluated};
  }

  template <typename T>
  FloatArray predict(const nb::ndarray<T, nb::ro, nb::c_contig, nb::device::cpu> &images) {
    checkImageType<T>();
    const int64_t count = images.ndim() ? int64_t(images.shape(0)) : 0;
    checkImages(images.ndim(), [&](size_t i) { return i == 0 ? batch() : int64_t(images.shape(i)); },
                false);
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Result<std::vector<float>> logits = Error("not run");
    {
      nb::gil_scoped_release released;
      logits = trainer().predict(images.data(), count);
    }
    if (!logits)
      fail(logits.error());
    return toNumpy(std::move(*logits), {size_t(count), size_t(classes())});
  }

  //===------------------------------------------------------------------===//
  // State and checkpoints
  //===------------------------------------------------------------------===//

  /// Sets the mean and std a model with uint8 images normalizes with.
  void setInputNormalization(const std::vector<float> &mean, const std::vector<float> &std) {
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Status st;
    {
      nb::gil_scoped_release released;
      st = trainer().setInputNormalization(mean, std);
    }
    if (!st)
      throw nb::value_error(st.error().message().c_str());
  }

  /// (mean, std) a model with uint8 images normalizes with now.
  std::pair<std::vector<float>, std::vector<float>> inputNormalization() {
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Result<ChannelNormalization> normalization = Error("not read");
    {
      nb::gil_scoped_release released;
      normalization = trainer().inputNormalization();
    }
    if (!normalization)
      throw nb::value_error(normalization.error().message().c_str());
    return {normalization->mean, normalization->std};
  }

  /// (name, values as float32 in the entry's shape) of every entry of `role`.
  std::vector<std::pair<std::string, FloatArray>> stateDict(const std::string &role) {
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Result<NamedValues> values = Error("not run");
    {
      nb::gil_scoped_release released;
      values = trainer().stateDict(role);
    }
    if (!values)
      fail(values.error());
    std::vector<std::pair<std::string, FloatArray>> out;
    for (auto &[name, data] : *values) {
      std::vector<size_t> shape;
      for (const StateInfo &e : trainer().state())
        if (e.name == name)
          for (int64_t d : e.shape)
            shape.push_back(size_t(d));
      out.emplace_back(name, toNumpy(std::move(data), shape));
    }
    return out;
  }

  void loadStateDict(
      const std::vector<std::pair<std::string,
                                  nb::ndarray<float, nb::ro, nb::c_contig, nb::device::cpu>>>
          &entries) {
    NamedValues values;
    for (const auto &[name, array] : entries)
      values.emplace_back(name, std::vector<float>(array.data(),
                                                   array.data() + elementCount(nb::ndarray<>(array))));
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Status st;
    {
      nb::gil_scoped_release released;
      st = trainer().loadStateDict(values);
    }
    if (!st)
      throw nb::value_error(st.error().message().c_str());
  }

  void save(const std::string &path, const std::map<std::string, std::string> &metadata) {
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    if (Status st = checkWritable(path); !st)
      throw nb::value_error(st.error().message().c_str());
    Status st;
    {
      nb::gil_scoped_release released;
      st = saveCheckpoint(trainer(), path, metadata);
    }
    if (!st)
      fail(st.error());
  }

  /// Restores every state entry from the checkpoint at `path` and returns
  /// its metadata (the caller sets the step counter from it).
  std::map<std::string, std::string> load(const std::string &path) {
    Result<Checkpoint> checkpoint = readCheckpoint(path);
    if (!checkpoint)
      throw nb::value_error(checkpoint.error().message().c_str());
    const std::string model = checkpoint->meta("model");
    if (model != trainer().program().model)
      throw nb::value_error((path + ": a checkpoint of model '" + model + "', the artifact is '" +
                             trainer().program().model + "'")
                                .c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    checkUsable();
    Status st;
    {
      nb::gil_scoped_release released;
      st = trainer().drain();
      if (st)
        st = restoreCheckpoint(trainer(), *checkpoint);
    }
    if (!st)
      throw nb::value_error(st.error().message().c_str());
    return checkpoint->file.metadata;
  }

private:
  /// Raises the sticky failure, if any.
  void checkUsable() const {
    if (!failure_.empty())
      throw TrainerFailure("the trainer failed earlier and takes no more work: " + failure_);
  }
  /// Marks the trainer failed and raises.
  [[noreturn]] void fail(const Error &error) {
    failure_ = error.message();
    throw TrainerFailure(failure_);
  }

  void ensureCopyStream() {
    if (copyStream_)
      return;
    Result<void *> stream = gpu_->createStream();
    if (!stream)
      fail(Error("creating the input copy stream: " + stream.error().message()));
    copyStream_ = *stream;
  }
  void checkCuda(const Status &st, const char *what) {
    if (!st)
      fail(Error(std::string(what) + ": " + st.error().message()));
  }
  template <typename A> static bool contiguous(const A &a) {
    int64_t expected = 1;
    for (size_t i = a.ndim(); i-- > 0;) {
      if (a.shape(i) != 1 && a.stride(i) != expected)
        return false;
      expected *= int64_t(a.shape(i));
    }
    return true;
  }

  /// Arrays of T are the model's kind of images: uint8 for a model that
  /// normalizes on the device, float32 otherwise.
  template <typename T> void checkImageType() {
    if (std::is_same_v<T, uint8_t> != pixels())
      throw nb::value_error(pixels() ? "images must be uint8: the model normalizes them on the "
                                       "device"
                                     : "images must be float32: the model takes normalized "
                                       "images");
  }

  /// Images of `ndim` dimensions with dimension i of size dim(i) against
  /// train_step's NHWC shape, read as NCHW when `channelsFirst`.
  template <typename Dim> void checkImages(size_t ndim, Dim dim, bool channelsFirst) {
    const std::vector<int64_t> &shape = trainer().imageShape();
    if (ndim != shape.size())
      throw nb::value_error(("images must have " + std::to_string(shape.size()) +
                             " dimensions, got " + std::to_string(ndim))
                                .c_str());
    std::vector<int64_t> given(ndim);
    for (size_t i = 0; i < ndim; ++i)
      given[i] = dim(i);
    if (channelsFirst && ndim == 4)
      given = {given[0], given[2], given[3], given[1]};
    if (given != shape)
      throw nb::value_error(("images (as NHWC) " + shapeString(given) + " do not match the " +
                             "artifact's " + shapeString(shape))
                                .c_str());
  }

  /// Copies `images` (NHWC, or NCHW when `channelsFirst`; any strides) into
  /// `out`, NHWC and dense.
  template <typename T>
  static void gatherNhwc(const nb::ndarray<T, nb::ro, nb::device::cpu> &images,
                         bool channelsFirst, const std::vector<int64_t> &shape, T *out) {
    const T *src = images.data();
    const size_t nd = shape.size();
    // The source's element stride of each NHWC dimension.
    std::vector<int64_t> strides(nd);
    for (size_t i = 0; i < nd; ++i)
      strides[i] = images.stride(i);
    if (channelsFirst && nd == 4)
      strides = {strides[0], strides[2], strides[3], strides[1]};
    bool dense = true;
    int64_t expected = 1;
    for (size_t i = nd; i-- > 0;) {
      if (shape[i] != 1 && strides[i] != expected)
        dense = false;
      expected *= shape[i];
    }
    if (dense) {
      std::memcpy(out, src, size_t(numel(shape)) * sizeof(T));
      return;
    }
    if (nd == 4) {
      // Image by image, channel by channel, with no index arithmetic per
      // element: one image's source and destination stay in the cache, and
      // an NCHW batch (the usual numpy and torch layout) costs about a copy.
      const int64_t n = shape[0], h = shape[1], w = shape[2], c = shape[3];
      for (int64_t i = 0; i < n; ++i) {
        T *image = out + i * h * w * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          const T *plane = src + i * strides[0] + ch * strides[3];
          for (int64_t y = 0; y < h; ++y) {
            const T *row = plane + y * strides[1];
            T *dst = image + (y * w) * c + ch;
            for (int64_t x = 0; x < w; ++x)
              dst[x * c] = row[x * strides[2]];
          }
        }
      }
      return;
    }
    // Row by row over all but the last dimension.
    const int64_t inner = shape[nd - 1], innerStride = strides[nd - 1];
    const int64_t rows = numel(shape) / inner;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t rest = r, offset = 0;
      for (size_t i = nd - 1; i-- > 0;) {
        offset += (rest % shape[i]) * strides[i];
        rest /= shape[i];
      }
      const T *row = src + offset;
      T *dst = out + r * inner;
      for (int64_t k = 0; k < inner; ++k)
        dst[k] = row[k * innerStride];
    }
  }

  int64_t submit(Trainer::Batch batch, float lr) {
    Result<int64_t> number = Error("not run");
    {
      nb::gil_scoped_release released;
      number = trainer().step(std::move(batch), lr);
    }
    if (!number)
      fail(number.error());
    return *number;
  }

  void drainLocked() {
    Status st;
    {
      nb::gil_scoped_release released;
      st = trainer().drain();
    }
    if (!st)
      fail(st.error());
  }

  /// The newest step whose loss was collected.
  int64_t collectedThrough() { return trainer().nextStep() - 1 - trainer().pending(); }

  std::unique_ptr<Session> session_;
  std::mutex mutex_;
  std::string failure_;
  uint64_t seed_ = 0;
  int device_ = -1; ///< the CUDA device of a GPU executor
  GpuBackend *gpu_ = nullptr;  ///< the GPU half, for a GPU executor
  void *copyStream_ = nullptr; ///< cudaStream_t
};

} // namespace

NB_MODULE(_native, m) {
  m.doc() = "runtime/train bound to Python (the native half of rn.Trainer)";
  // TrainerFailure raises the class set_error_type gave (rn.TrainerError,
  // which lives in the pure-Python package so that it can be caught without
  // the extension), else RuntimeError.
  static PyObject *trainerErrorType = PyExc_RuntimeError;
  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const TrainerFailure &e) {
      PyErr_SetString(trainerErrorType, e.what());
    }
  });
  m.def(
      "set_error_type",
      [](nb::handle type) {
        if (!PyType_Check(type.ptr()) ||
            !PyType_IsSubtype(reinterpret_cast<PyTypeObject *>(type.ptr()),
                              reinterpret_cast<PyTypeObject *>(PyExc_RuntimeError)))
          throw nb::type_error("set_error_type needs a subclass of RuntimeError");
        Py_INCREF(type.ptr());
        trainerErrorType = type.ptr();
      },
      nb::arg("type"), "The exception class runtime failures raise.");

  m.def("built_with_cuda", &builtWithCuda, "Whether this runtime has the GPU executors.");
  m.def(
      "inject_cuda_failure_after",
      [](uint64_t calls) {
        // Counted from now (RN_CUDA_FAIL_CALL counts from the process's
        // start, which a cold plan cache moves).
        Result<GpuBackend *> backend = gpuBackend();
        if (!backend)
          throw nb::value_error(backend.error().message().c_str());
        (*backend)->injectFailureAfter(calls);
      },
      nb::arg("calls"),
      "Tests only: the checked CUDA/cuDNN/cuBLAS call `calls` from now fails as if the library "
      "had failed (1: the next one).");
  m.def(
      "gpu_available",
      []() -> std::optional<std::string> {
        Status st = gpuAvailable();
        if (st)
          return std::nullopt;
        return st.error().message();
      },
      "None when a CUDA device answers, else why not.");
  m.def(
      "shuffled_order",
      [](int64_t count, uint64_t seed, int64_t epoch) {
        if (count < 0)
          throw nb::value_error("count must be non-negative");
        std::vector<int64_t> order = shuffledOrder(count, seed, epoch);
        auto *owned = new std::vector<int64_t>(std::move(order));
        nb::capsule owner(owned,
                          [](void *p) noexcept { delete static_cast<std::vector<int64_t> *>(p); });
        size_t shape[1] = {owned->size()};
        return nb::ndarray<int64_t, nb::numpy>(owned->data(), 1, shape, owner);
      },
      nb::arg("count"), nb::arg("seed"), nb::arg("epoch"),
      "rn-run's permutation of epoch `epoch` (0-based) of `count` examples.");

  m.def(
      "warmup_cosine_lr",
      [](double peak, int64_t warmupSteps, int64_t totalSteps, int64_t step) {
        return WarmupCosineLr(peak, warmupSteps, totalSteps).lr(step);
      },
      nb::arg("peak"), nb::arg("warmup_steps"), nb::arg("total_steps"), nb::arg("step"),
      "rn-run's schedule (runtime/train/lr_schedule.h): rn.cosine_lr.");

  nb::class_<HostBlock>(m, "HostBlock")
      .def_prop_ro(
          "array",
          [](nb::handle self) -> nb::object {
            HostBlock &b = nb::cast<HostBlock &>(self);
            if (b.pixels)
              return nb::cast(nb::ndarray<uint8_t, nb::numpy>(b.block.get(), b.shape.size(),
                                                              b.shape.data(), self));
            return nb::cast(
                nb::ndarray<float, nb::numpy>(b.block.get(), b.shape.size(), b.shape.data(), self));
          },
          nb::rv_policy::reference_internal)
      .def_ro("consumed", &HostBlock::consumed);

  nb::class_<NativeTrainer>(m, "NativeTrainer")
      .def(nb::init<const std::string &, const std::string &, uint64_t, bool, bool,
                    const std::string &, int64_t, bool>(),
           nb::arg("path"), nb::arg("executor"), nb::arg("seed"), nb::arg("deterministic"),
           nb::arg("allow_tf32"), nb::arg("plan_cache"), nb::arg("window"),
           nb::arg("interleave"))
      .def_prop_ro("executor", &NativeTrainer::executorName)
      .def_prop_ro("model", &NativeTrainer::model)
      .def_prop_ro("batch", &NativeTrainer::batch)
      .def_prop_ro("image_shape", &NativeTrainer::imageShape)
      .def_prop_ro("image_dtype", &NativeTrainer::imageDType)
      .def_prop_ro("classes", &NativeTrainer::classes)
      .def_prop_ro("window", &NativeTrainer::window)
      .def_prop_ro("seed", &NativeTrainer::seed)
      .def_prop_ro("rank", &NativeTrainer::rank)
      .def_prop_ro("world_size", &NativeTrainer::worldSize)
      .def_prop_ro("device", &NativeTrainer::device)
      .def_prop_ro("next_step", &NativeTrainer::nextStep)
      .def_prop_ro("pending", &NativeTrainer::pending)
      .def_prop_ro("failure", &NativeTrainer::failure)
      .def("state_info", &NativeTrainer::stateInfo, nb::arg("role"))
      .def("input_block", &NativeTrainer::inputBlock)
      .def("step_host", &NativeTrainer::stepHost<float>, nb::arg("images"),
           nb::arg("channels_first"), nb::arg("labels"), nb::arg("lr"))
      .def("step_host_pixels", &NativeTrainer::stepHost<uint8_t>, nb::arg("images"),
           nb::arg("channels_first"), nb::arg("labels"), nb::arg("lr"))
      .def("step_block", &NativeTrainer::stepBlock, nb::arg("block"), nb::arg("labels"),
           nb::arg("lr"))
      .def("copy_stream", &NativeTrainer::copyStream)
      .def("step_cuda", &NativeTrainer::stepCuda, nb::arg("images"), nb::arg("labels"),
           nb::arg("lr"))
      .def("flush", &NativeTrainer::flush)
      .def("drain", &NativeTrainer::drain)
      .def("wait_for", &NativeTrainer::waitFor, nb::arg("step"))
      .def("take_losses", &NativeTrainer::takeLosses)
      .def("set_next_step", &NativeTrainer::setNextStep, nb::arg("step"))
      .def("evaluate", &NativeTrainer::evaluate<float>, nb::arg("images"), nb::arg("labels"))
      .def("evaluate_pixels", &NativeTrainer::evaluate<uint8_t>, nb::arg("images"),
           nb::arg("labels"))
      .def("predict", &NativeTrainer::predict<float>, nb::arg("images"))
      .def("predict_pixels", &NativeTrainer::predict<uint8_t>, nb::arg("images"))
      .def("set_input_normalization", &NativeTrainer::setInputNormalization, nb::arg("mean"),
           nb::arg("std"))
      .def("input_normalization", &NativeTrainer::inputNormalization)
      .def("state_dict", &NativeTrainer::stateDict, nb::arg("role"))
      .def("load_state_dict", &NativeTrainer::loadStateDict, nb::arg("entries"))
      .def("save", &NativeTrainer::save, nb::arg("path"), nb::arg("metadata"))
      .def("load", &NativeTrainer::load, nb::arg("path"));
}
