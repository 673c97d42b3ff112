//===- Passes.td - RN compiler passes ----------------------*- tablegen -*-===//

#ifndef RN_PASSES_PASSES_TD
#define RN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildTraining : Pass<"rn-build-training", "::mlir::ModuleOp"> {
  let summary = "Derive the training step and the evaluation step from the forward model";
  let description = [{
    Turns the model level (parameters, `@forward(images, labels) -> loss`)
    into two functions whose every piece of state is an explicit argument or
    result bound to a symbol with `rn.state`:

    - `@train_step(images, labels, lr, step, state...) -> (loss, new state...)`:
      zero-grad, the forward pass in training mode (batch statistics,
      dropout masks), one backward op per forward op with gradient
      accumulation where a value fans out, mixed-precision casts, loss
      scaling, one optimizer update per parameter, BatchNorm running
      statistics, low-precision weight casts and EMA.
    - `@eval_step(images, labels, params...) -> (loss, correct, logits)`:
      inference mode (running statistics, no dropout).

    State besides the parameters is declared with `rn.state` (gradients,
    optimizer moments, low-precision copies, EMA, loss scale). The learning
    rate and step count are runtime inputs: the host computes the schedule.
    The options are recorded in the module attribute `rn.training`.

    Before:
    ```mlir
    rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.5e-01>
    func.func @forward(%x: tensor<4x8xf32>, %y: tensor<4xi32>) -> tensor<f32> {
      %w = rn.param @fc.weight : tensor<10x8xf32>
      %logits = rn.linear %x, %w : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
      %loss = rn.softmax_cross_entropy %logits, %y label_smoothing 0.0 : ...
      return %loss : tensor<f32>
    }
    ```
    After (`optimizer=sgd momentum=0.9`):
    ```mlir
    rn.state gradient @grad.fc.weight of @fc.weight : tensor<10x8xf32> = #rn.init<zeros>
    rn.state momentum @momentum.fc.weight of @fc.weight : tensor<10x8xf32> = #rn.init<zeros>
    func.func @train_step(%x {rn.input = "images"}, %y {rn.input = "labels"},
        %lr {rn.input = "lr"}, %step {rn.input = "step"},
        %w {rn.state = @fc.weight}, %g {rn.state = @grad.fc.weight},
        %m {rn.state = @momentum.fc.weight}) -> (loss, w', g', m') {
      %g0 = rn.zero %g
      %logits = rn.linear %x, %w
      %loss = rn.softmax_cross_entropy %logits, %y
      %dlogits = rn.softmax_cross_entropy_backward %logits, %y
      %g1 = rn.linear_backward %dlogits, %x, %w, %g0     // first layer: no dX
      %w1, %m1 = rn.sgd_update %w, %g1, %m lr %lr momentum 0.9 ...
      return %loss, %w1, %g1, %m1
    }
    func.func @eval_step(%x, %y, %w) -> (loss, correct, logits)
    ```
  }];
  let options = [
    Option<"forwardFunction", "forward", "std::string", "\"forward\"",
           "name of the forward function">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, adamw or lars">,
    Option<"momentum", "momentum", "double", "0.9",
           "SGD/LARS momentum (0 disables the momentum buffer for SGD)">,
    Option<"nesterov", "nesterov", "bool", "false", "Nesterov momentum (SGD)">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "L2 weight decay (SGD, LARS) or decoupled decay (AdamW)">,
    Option<"noDecayBnBias", "no-decay-bn-bias", "bool", "false",
           "exclude BatchNorm parameters and biases from weight decay">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"adamEpsilon", "adam-eps", "double", "1e-8", "AdamW epsilon">,
    Option<"larsTrust", "lars-trust", "double", "0.001",
           "LARS trust coefficient">,
    Option<"larsEpsilon", "lars-eps", "double", "1e-9", "LARS epsilon">,
    Option<"precision", "precision", "std::string", "\"f32\"",
           "compute precision: f32, or f16/bf16 mixed precision with f32 "
           "master weights">,
    Option<"lossScaling", "loss-scaling", "std::string", "\"none\"",
           "none, static or dynamic">,
    Option<"lossScale", "loss-scale", "double", "65536.0",
           "the static loss scale, or the initial dynamic one">,
    Option<"growthInterval", "growth-interval", "int64_t", "2000",
           "dynamic scaling: clean steps before the scale grows">,
    Option<"growthFactor", "growth-factor", "double", "2.0",
           "dynamic scaling: growth factor">,
    Option<"backoffFactor", "backoff-factor", "double", "0.5",
           "dynamic scaling: factor applied on overflow">,
    Option<"emaDecay", "ema-decay", "double", "0.0",
           "keep an exponential moving average of the weights (0: off)">,
  ];
  let statistics = [
    Statistic<"numBackwardOps", "num-backward-ops",
              "backward ops generated">,
    Statistic<"numOptimizerUpdates", "num-optimizer-updates",
              "per-parameter optimizer updates generated">,
    Statistic<"numStateTensors", "num-state-tensors",
              "rn.state declarations added">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect", "::mlir::func::FuncDialect"];
}

#endif // RN_PASSES_PASSES_TD
