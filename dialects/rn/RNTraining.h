//===- RNTraining.h - What ops need to describe their training --*- C++ -*-===//
//
// The C++ side of the training interfaces of RNInterfaces.td: the builder
// state a gradient rule or a training form sees (implemented by
// rn-build-training), the operand roles, and the traits RN_OnStream and
// RN_RandomInTraining. Included by RNOps.h before the generated interfaces.
//
//===----------------------------------------------------------------------===//

#ifndef RN_DIALECTS_RN_RNTRAINING_H
#define RN_DIALECTS_RN_RNTRAINING_H

#include "dialects/rn/RNDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OpDefinition.h"

#include <cstdint>
#include <utility>

namespace mlir::rn {

class BatchNormTrainOp;

/// What an operand of a model-level op is to training.
enum class OperandRole {
  activation,       ///< a computed value: differentiated through
  weight,           ///< a filter or weight matrix: trainable, decayed
  bias,             ///< a conv/linear bias: trainable, decay optional
  normParameter,    ///< a normalization's scale or shift: f32, decay optional
  runningStatistic, ///< a normalization's running mean or variance: a buffer
};

/// The backward pass under construction, as a gradient rule sees it.
class GradientEmitter {
public:
  virtual ~GradientEmitter();
  /// The gradient of `result` (a forward value), or null if the loss does
  /// not depend on it.
  virtual Value getResultGradient(Value result) = 0;
  /// Whether `value` needs a gradient (it depends on a trainable parameter).
  virtual bool requiresGradient(Value value) = 0;
  /// Adds `gradient` to `value`'s; nothing if `value` needs none.
  virtual void accumulate(Location loc, Value value, Value gradient) = 0;
  /// The current gradient accumulator of the parameter read as `weight`.
  virtual Value getAccumulator(Value weight) = 0;
  /// `newValue`, returned by a backward op that adds into the accumulator,
  /// is the parameter's accumulator from now on.
  virtual void setAccumulator(Value weight, Value newValue) = 0;
};

/// The training step under construction, as a training form sees it.
class TrainingFormContext {
public:
  virtual ~TrainingFormContext();
  /// The training step's value for a value of the forward function.
  virtual Value lookup(Value forwardValue) = 0;
  /// Maps a result of the forward op to its training form's.
  virtual void map(Value forwardValue, Value trainingValue) = 0;
  /// The step counter (an i32 scalar), which random masks are keyed by.
  virtual Value getStep() = 0;
  /// The next random stream of the step: {index, count} of
  /// Note [Random streams] (runtime/cpu/cpu_kernels.h). Only
  /// RN_RandomInTraining ops take one.
  virtual std::pair<int64_t, int64_t> takeRandomStream() = 0;
  /// The running statistics `train` updates after the optimizer: the
  /// forward function's rn.param values of the mean and the variance.
  virtual void addRunningStatistics(BatchNormTrainOp train, Value runningMean,
                                    Value runningVar, double momentum) = 0;
};

/// ODS RN_OnStream<"kind">: the op's stream under the built-in policy
/// (StreamClassOpInterface::getDefaultStream).
template <StreamKind kind>
struct OnStream {
  template <typename ConcreteType>
  class Impl : public OpTrait::TraitBase<ConcreteType, Impl> {
  public:
    static StreamKind getDefaultStream() { return kind; }
  };
};

/// ODS RN_RandomInTraining: the op's training form draws random numbers.
template <typename ConcreteType>
class RandomInTraining
    : public OpTrait::TraitBase<ConcreteType, RandomInTraining> {};

} // namespace mlir::rn

#endif // RN_DIALECTS_RN_RNTRAINING_H
