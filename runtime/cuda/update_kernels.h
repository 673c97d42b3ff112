//===- update_kernels.h - Loss scaling and optimizer kernels ----*- C++ -*-===//
//
// The UPDATE-stream ops on the GPU: check_finite, unscale,
// update_loss_scale, one kernel per parameter for sgd_update,
// adamw_update and ema_update (two for lars_update), and one kernel per
// group for multi_sgd_update, multi_adamw_update and the multi-tensor
// elementwise ops (two for multi_lars_update; MultiTensorUpdate). Every
// per-step scalar (learning rate, loss scale, skip flag, AdamW step,
// good-steps counter) is a device tensor read inside the kernel, never on
// the host, so that a step can be captured into a CUDA graph. Scalars: lr
// and scale f32, step and good_steps i32, flags i1 (one byte; f32 and i32
// flags are read too, non-zero meaning set).
//
// Semantics are those of the CPU reference (cpu_update.cpp) with f32
// arithmetic: each stored value is rounded once to its dtype and later
// terms of the same update read the stored value. Outputs may alias the
// state they update (param, momentum buffer, moments, average, grad for
// unscale); a set skip flag leaves in-place state untouched and copies it
// to out-of-place results.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_UPDATE_KERNELS_H
#define RN_RUNTIME_CUDA_UPDATE_KERNELS_H

#include "runtime/core/status.h"
#include "runtime/cuda/device_tensor.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace rn::cuda {

struct SgdOptions {
  double momentum = 0;
  double weightDecay = 0;
  bool nesterov = false;
};

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0;
};

struct LarsOptions {
  double momentum = 0.9;
  double weightDecay = 0;
  double trustCoefficient = 0.001;
  double epsilon = 1e-9;
};

/// foundNonFinite = 1 when any element of any input is Inf or NaN, else 0
/// (written in the flag's dtype). Inputs are f32, f16 or bf16.
Status checkFinite(const std::vector<DeviceTensor> &inputs, const DeviceTensor &foundNonFinite,
                   cudaStream_t stream);

/// result = grad / scale (scale: f32 scalar on the device); result may
/// alias grad.
Status unscale(const DeviceTensor &grad, const DeviceTensor &scale, const DeviceTensor &result,
               cudaStream_t stream);

/// cpu::updateLossScale on device scalars; the results may alias scale and
/// goodSteps.
Status updateLossScale(const DeviceTensor &scale, const DeviceTensor &goodSteps,
                       const DeviceTensor &foundNonFinite, double growth, double backoff,
                       int64_t growthInterval, const DeviceTensor &newScale,
                       const DeviceTensor &newGoodSteps, cudaStream_t stream);

/// torch.optim.SGD (dampening 0). The momentum buffer and its result are
/// given exactly when options.momentum != 0; `skip` may be null.
Status sgdUpdate(const DeviceTensor &param, const DeviceTensor &grad,
                 const DeviceTensor *momentumBuffer, const DeviceTensor &lr,
                 const DeviceTensor *skip, const SgdOptions &options,
                 const DeviceTensor &newParam, const DeviceTensor *newMomentumBuffer,
                 cudaStream_t stream);

/// multi_sgd_update and multi_adamw_update on the GPU: the tensors of the
/// group and their chunks (kChunk elements each; a tensor's last chunk may
/// be shorter) as a table in device memory that this object owns, built
/// once at load; `launch` is then one kernel launch, one block per chunk,
/// whatever the group's size. multi_lars_update is two launches: the
/// per-block partial norms of every tensor (each tensor cut into the blocks
/// lars_update cuts it into, in a table of its own) into the workspace,
/// then one block per chunk that reduces its tensor's partials in a fixed
/// order to the trust ratio and updates the chunk; so its results are those
/// of lars_update, bit for bit, too. Each element is computed by the per-element
/// code of sgdUpdate (adamwUpdate), so the results are those of the
/// per-parameter kernels, bit for bit. A tensor whose pointers are all
/// 16-byte aligned is read and written in packs of 16 bytes. lr, step and
/// skip_if are not in the table: they are read from the launch's operands
/// (lr and step live in inputs_a, which the B variant moves). Tensors run
/// concurrently (a block per chunk): a result may alias the operand it
/// updates (in place), never another tensor's.
class MultiTensorUpdate {
public:
  /// Elements per chunk (a multiple of every pack width).
  static constexpr int64_t kChunk = 16384;

  /// multi_sgd_update: `operands` params[n], grads[n], [momentum_buffers[n]]
  /// (exactly when options.momentum != 0), lr, [skip_if]; `results` new
  /// params[n], [new momentum buffers[n]]. Every tensor has the params'
  /// dtype; the copy of the table is synchronized on `stream`.
  static Result<std::unique_ptr<MultiTensorUpdate>> sgd(const std::vector<DeviceTensor> &operands,
                                                        const std::vector<DeviceTensor> &results,
                                                        const SgdOptions &options,
                                                        cudaStream_t stream);
  /// multi_lars_update: `operands` params[n], grads[n], momentum_buffers[n],
  /// lr, [skip_if]; `results` new params[n], new momentum buffers[n]. Its
  /// launch needs workspaceBytes() of workspace (the partial norms).
  static Result<std::unique_ptr<MultiTensorUpdate>> lars(const std::vector<DeviceTensor> &operands,
                                                         const std::vector<DeviceTensor> &results,
                                                         const LarsOptions &options,
                                                         cudaStream_t stream);
  /// multi_adamw_update: `operands` params[n], grads[n], exp_avgs[n],
  /// exp_avg_sqs[n], lr, step, [skip_if]; `results` new params[n], new
  /// exp_avgs[n], new exp_avg_sqs[n].
  static Result<std::unique_ptr<MultiTensorUpdate>>
  adamw(const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
        const AdamWOptions &options, cudaStream_t stream);
  /// multi_unscale: `operands` grads[n], scale; `results` the n unscaled
  /// grads (each rn.unscale's formula).
  static Result<std::unique_ptr<MultiTensorUpdate>>
  unscale(const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
          cudaStream_t stream);
  /// multi_zero: `operands` the n accumulators, `results` their zeroed
  /// values (in place, or any tensors of their types).
  static Result<std::unique_ptr<MultiTensorUpdate>>
  zero(const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
       cudaStream_t stream);
  /// multi_cast: `operands` n tensors of one float type, `results` their
  /// values in another (each rn.cast's rounding).
  static Result<std::unique_ptr<MultiTensorUpdate>>
  cast(const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
       cudaStream_t stream);
  /// multi_ema_update: `operands` averages[n], params[n]; `results` the n
  /// new averages (each rn.ema_update's formula).
  static Result<std::unique_ptr<MultiTensorUpdate>>
  ema(const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
      double decay, cudaStream_t stream);
  ~MultiTensorUpdate();
  MultiTensorUpdate(const MultiTensorUpdate &) = delete;
  MultiTensorUpdate &operator=(const MultiTensorUpdate &) = delete;

  /// One kernel launch on `stream` (multi_lars_update: two). `operands`
  /// and `results` must have the addresses the table was built from
  /// (compared; lr, step and skip_if aside); `workspace` must hold
  /// workspaceBytes().
  Status launch(const std::vector<DeviceTensor> &operands,
                const std::vector<DeviceTensor> &results, cudaStream_t stream,
                void *workspace = nullptr, size_t workspaceBytes = 0) const;

  size_t tensors() const { return tensors_; }
  size_t chunks() const { return chunks_; }
  /// The workspace a launch writes: multi_lars_update's partial norms (16
  /// bytes per norm block), 0 for the other ops.
  size_t workspaceBytes() const { return workspaceBytes_; }

private:
  enum class Kind { sgd, adamw, lars, unscale, zero, cast, ema };
  MultiTensorUpdate() = default;
  /// multi_unscale, multi_zero, multi_cast, multi_ema_update: `inputs`
  /// lists of operands and one result per tensor, then `scalars` operands;
  /// `layout` says so in errors.
  static Result<std::unique_ptr<MultiTensorUpdate>>
  elementwise(Kind kind, const std::vector<DeviceTensor> &operands,
              const std::vector<DeviceTensor> &results, size_t inputs, size_t scalars,
              const char *layout, cudaStream_t stream);
  /// Checks the group (`inputs` operand and `outputs` result lists of
  /// `count` tensors, then the scalars from operand `lr`) and uploads the
  /// table.
  Status build(const std::vector<DeviceTensor> &operands,
               const std::vector<DeviceTensor> &results, size_t count, size_t inputs,
               size_t outputs, size_t lr, cudaStream_t stream);
  Status checkScalars(const std::vector<DeviceTensor> &operands) const;
  const char *opName() const;
  /// lr (and step; unscale: scale; zero, cast, ema: none) before skip_if.
  size_t scalarCount() const;

  Kind kind_ = Kind::sgd;
  SgdOptions sgd_;
  AdamWOptions adamw_;
  LarsOptions lars_;
  DType dtype_ = DType::f32;
  DType resultDtype_ = DType::f32; ///< multi_cast: the results' dtype
  double emaDecay_ = 0;            ///< multi_ema_update
  size_t tensors_ = 0, chunks_ = 0;
  size_t lr_ = 0;     ///< operand index of lr (multi_unscale: of the scale)
  bool skip_ = false; ///< a skip_if operand follows the scalars
  /// Operand and result addresses the table holds, in node order.
  std::vector<const void *> addresses_;
  /// The device table: the tensors, then the chunks (multi_lars_update:
  /// then each tensor's partials in the workspace, then the norm blocks).
  void *device_ = nullptr;
  size_t chunkOffset_ = 0;
  size_t normOffset_ = 0, normBlockOffset_ = 0, normBlocks_ = 0;
  size_t workspaceBytes_ = 0;
};

/// torch.optim.AdamW; `step` (i32, >= 1) gives the bias correction.
Status adamwUpdate(const DeviceTensor &param, const DeviceTensor &grad,
                   const DeviceTensor &expAvg, const DeviceTensor &expAvgSq,
                   const DeviceTensor &lr, const DeviceTensor &step, const DeviceTensor *skip,
                   const AdamWOptions &options, const DeviceTensor &newParam,
                   const DeviceTensor &newExpAvg, const DeviceTensor &newExpAvgSq,
                   cudaStream_t stream);

/// Workspace bytes larsUpdate needs for a parameter of `numel` elements
/// (the per-block partial norms; at most 8 KiB).
size_t larsWorkspaceBytes(int64_t numel);

/// LARS: the norms of param and grad by a fixed two-stage reduction in the
/// workspace, then the update.
Status larsUpdate(const DeviceTensor &param, const DeviceTensor &grad,
                  const DeviceTensor &momentumBuffer, const DeviceTensor &lr,
                  const DeviceTensor *skip, const LarsOptions &options,
                  const DeviceTensor &newParam, const DeviceTensor &newMomentumBuffer,
                  cudaStream_t stream, void *workspace, size_t workspaceBytes);

/// average = decay * average + (1 - decay) * param; may run in place.
Status emaUpdate(const DeviceTensor &average, const DeviceTensor &param, double decay,
                 const DeviceTensor &newAverage, cudaStream_t stream);

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_UPDATE_KERNELS_H
