// RUN: rn-opt %s --split-input-file --rn-plan-memory=workspace-mib=1 | FileCheck %s
// RUN: rn-opt %s --split-input-file --rn-plan-memory="workspace-mib=1 reuse=false" | FileCheck %s --check-prefix=NOREUSE
// RUN: rn-opt %s --split-input-file --rn-plan-memory="workspace-mib=1 alignment=64" | FileCheck %s --check-prefix=ALIGN
// RUN: rn-opt %s --split-input-file --rn-plan-memory | rn-opt --split-input-file -o /dev/null
// RUN: rn-opt %s --split-input-file --rn-plan-memory="summary workspace-mib=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-build-training --rn-plan-memory | rn-opt | FileCheck %s --check-prefix=ZOO

// Tests the region of every role, one slot per state symbol shared by both
// functions, the in-place chains zero -> linear_backward (accumulate) ->
// sgd_update and update_running_stats, scalar inputs and outputs, and the
// activation slots (the BatchNorm output dies at the relu, so the logits
// take its offset).

module attributes {rn.model = "roles"} {
  rn.parameter @bn.weight : tensor<8xf32> = #rn.init<ones>
  rn.parameter @bn.bias : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_var : tensor<8xf32> = #rn.init<ones>
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.state gradient @grad.fc.weight of @fc.weight : tensor<10x8xf32> = #rn.init<zeros>
  rn.state momentum @momentum.fc.weight of @fc.weight : tensor<10x8xf32> = #rn.init<zeros>
  func.func @train_step(%images: tensor<4x8xf32> {rn.input = "images"}, %labels: tensor<4xi32> {rn.input = "labels"},
                        %lr: tensor<f32> {rn.input = "lr"}, %step: tensor<i32> {rn.input = "step"},
                        %gamma: tensor<8xf32> {rn.state = @bn.weight}, %beta: tensor<8xf32> {rn.state = @bn.bias},
                        %mean: tensor<8xf32> {rn.state = @bn.running_mean}, %var: tensor<8xf32> {rn.state = @bn.running_var},
                        %w: tensor<10x8xf32> {rn.state = @fc.weight}, %gw: tensor<10x8xf32> {rn.state = @grad.fc.weight},
                        %mw: tensor<10x8xf32> {rn.state = @momentum.fc.weight})
      -> (tensor<f32> {rn.output = "loss"}, tensor<8xf32> {rn.state = @bn.running_mean}, tensor<8xf32> {rn.state = @bn.running_var},
          tensor<10x8xf32> {rn.state = @fc.weight}, tensor<10x8xf32> {rn.state = @grad.fc.weight}, tensor<10x8xf32> {rn.state = @momentum.fc.weight}) {
    %zero = rn.zero %gw : tensor<10x8xf32>
    %h, %bmean, %binvstd = rn.batch_norm_train %images, %gamma, %beta eps 1.000000e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %r = rn.relu %h : tensor<4x8xf32>
    %logits = rn.linear %r, %w : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    %loss = rn.softmax_cross_entropy %logits, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    %dlogits = rn.softmax_cross_entropy_backward %logits, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<4x10xf32>
    %acc = rn.linear_backward %dlogits, %r, %w, %zero : (tensor<4x10xf32>, tensor<4x8xf32>, tensor<10x8xf32>, tensor<10x8xf32>) -> tensor<10x8xf32>
    %w1, %m1 = rn.sgd_update %w, %acc, %mw lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 : (tensor<10x8xf32>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<f32>) -> (tensor<10x8xf32>, tensor<10x8xf32>)
    %mean1, %var1 = rn.update_running_stats %mean, %var, %bmean, %binvstd eps 1.000000e-05 momentum 1.000000e-01 count 4 : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    return %loss, %mean1, %var1, %w1, %acc, %m1 : tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<10x8xf32>
  }
  func.func @eval_step(%images: tensor<4x8xf32> {rn.input = "images"}, %labels: tensor<4xi32> {rn.input = "labels"},
                       %gamma: tensor<8xf32> {rn.state = @bn.weight}, %beta: tensor<8xf32> {rn.state = @bn.bias},
                       %mean: tensor<8xf32> {rn.state = @bn.running_mean}, %var: tensor<8xf32> {rn.state = @bn.running_var},
                       %w: tensor<10x8xf32> {rn.state = @fc.weight})
      -> (tensor<f32> {rn.output = "loss"}, tensor<i32> {rn.output = "correct"}, tensor<4x10xf32> {rn.output = "logits"}) {
    %h = rn.batch_norm_inference %images, %gamma, %beta, %mean, %var eps 1.000000e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r = rn.relu %h : tensor<4x8xf32>
    %logits = rn.linear %r, %w : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    %loss = rn.softmax_cross_entropy %logits, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    %correct = rn.count_correct %logits, %labels : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<i32>
    return %loss, %correct, %logits : tensor<f32>, tensor<i32>, tensor<4x10xf32>
  }
}

// CHECK-LABEL: rn.model = "roles"
// CHECK:       rn.memory_plan arena 4200448 alignment 256 regions [
// CHECK-SAME:    #rn.extent<weights, 0, 1024>, #rn.extent<gradients, 1024, 512>,
// CHECK-SAME:    #rn.extent<optimizer_state, 1536, 512>, #rn.extent<bn_statistics, 2048, 512>,
// CHECK-SAME:    #rn.extent<inputs_a, 2560, 768>, #rn.extent<inputs_b, 3328, 768>,
// CHECK-SAME:    #rn.extent<scalars, 4096, 768>, #rn.extent<activations, 4864, 1280>,
// CHECK-SAME:    #rn.extent<workspace_comp1, 6144, 1048576>, #rn.extent<workspace_comp2, 1054720, 1048576>,
// CHECK-SAME:    #rn.extent<workspace_comp3, 2103296, 1048576>, #rn.extent<workspace_update, 3151872, 1048576>]
// CHECK:       func.func @train_step(
// CHECK-SAME:    %[[X:.+]]: tensor<4x8xf32> {rn.input = "images", rn.slot = #rn.slot<inputs_a, 0, 128>},
// CHECK-SAME:    %{{.+}}: tensor<4xi32> {rn.input = "labels", rn.slot = #rn.slot<inputs_a, 256, 16>},
// CHECK-SAME:    %{{.+}}: tensor<f32> {rn.input = "lr", rn.slot = #rn.slot<inputs_a, 512, 4>},
// An input nothing reads (the step number) stays a host buffer: no slot.
// CHECK-SAME:    %{{.+}}: tensor<i32> {rn.input = "step"},
// CHECK-SAME:    %{{.+}}: tensor<8xf32> {rn.slot = #rn.slot<weights, 0, 32>, rn.state = @bn.weight},
// CHECK-SAME:    %{{.+}}: tensor<8xf32> {rn.slot = #rn.slot<weights, 256, 32>, rn.state = @bn.bias},
// CHECK-SAME:    %[[MEAN:.+]]: tensor<8xf32> {rn.slot = #rn.slot<bn_statistics, 0, 32>, rn.state = @bn.running_mean},
// CHECK-SAME:    %{{.+}}: tensor<8xf32> {rn.slot = #rn.slot<bn_statistics, 256, 32>, rn.state = @bn.running_var},
// CHECK-SAME:    %[[W:.+]]: tensor<10x8xf32> {rn.slot = #rn.slot<weights, 512, 320>, rn.state = @fc.weight},
// CHECK-SAME:    %[[GW:.+]]: tensor<10x8xf32> {rn.slot = #rn.slot<gradients, 0, 320>, rn.state = @grad.fc.weight},
// CHECK-SAME:    %[[MW:.+]]: tensor<10x8xf32> {rn.slot = #rn.slot<optimizer_state, 0, 320>, rn.state = @momentum.fc.weight})
// CHECK:       %[[ZERO:.+]] = rn.zero %[[GW]] {rn.slots = [#rn.slot<gradients, 0, 320>]}
// CHECK:       rn.batch_norm_train %[[X]], {{.*}} {rn.slots = [#rn.slot<activations, 0, 128>, #rn.slot<activations, 256, 32>, #rn.slot<activations, 512, 32>]}
// CHECK:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 768, 128>]}
// CHECK:       %[[LOGITS:.+]] = rn.linear {{.*}} {rn.slots = [#rn.slot<activations, 0, 160>]}
// CHECK:       rn.softmax_cross_entropy %[[LOGITS]], {{.*}} {rn.slots = [#rn.slot<scalars, 0, 4>]}
// CHECK:       rn.softmax_cross_entropy_backward {{.*}} {rn.slots = [#rn.slot<activations, 1024, 160>]}
// CHECK:       %[[ACC:.+]] = rn.linear_backward {{.*}}, %[[ZERO]] {rn.slots = [#rn.slot<gradients, 0, 320>]}
// CHECK:       rn.sgd_update %[[W]], %[[ACC]], %[[MW]] {{.*}} {rn.slots = [#rn.slot<weights, 512, 320>, #rn.slot<optimizer_state, 0, 320>]}
// CHECK:       rn.update_running_stats %[[MEAN]], {{.*}} {rn.slots = [#rn.slot<bn_statistics, 0, 32>, #rn.slot<bn_statistics, 256, 32>]}
// The evaluation step shares the state and input slots and the activation
// region; its scalar outputs get their own slots, the logits live to the end.
// CHECK:       func.func @eval_step(
// CHECK-SAME:    tensor<4x8xf32> {rn.input = "images", rn.slot = #rn.slot<inputs_a, 0, 128>}
// CHECK-SAME:    tensor<10x8xf32> {rn.slot = #rn.slot<weights, 512, 320>, rn.state = @fc.weight}
// CHECK:       rn.batch_norm_inference {{.*}} {rn.slots = [#rn.slot<activations, 0, 128>]}
// CHECK:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 256, 128>]}
// CHECK:       rn.linear {{.*}} {rn.slots = [#rn.slot<activations, 0, 160>]}
// CHECK:       rn.softmax_cross_entropy {{.*}} {rn.slots = [#rn.slot<scalars, 256, 4>]}
// CHECK:       rn.count_correct {{.*}} {rn.slots = [#rn.slot<scalars, 512, 4>]}

// Without reuse every activation of every function has its own slot.
// NOREUSE-LABEL: rn.model = "roles"
// NOREUSE:       #rn.extent<activations, 4864, 2304>
// NOREUSE:       rn.batch_norm_train {{.*}} {rn.slots = [#rn.slot<activations, 0, 128>, #rn.slot<activations, 256, 32>, #rn.slot<activations, 512, 32>]}
// NOREUSE:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 768, 128>]}
// NOREUSE:       rn.linear {{.*}} {rn.slots = [#rn.slot<activations, 1024, 160>]}
// NOREUSE:       rn.softmax_cross_entropy_backward {{.*}} {rn.slots = [#rn.slot<activations, 1280, 160>]}
// NOREUSE:       rn.batch_norm_inference {{.*}} {rn.slots = [#rn.slot<activations, 1536, 128>]}

// SUMMARY:      remark: memory plan: arena 4200448 bytes, alignment 256, activation reuse on
// SUMMARY-NEXT:   weights at 0: 1024 bytes
// SUMMARY:        activations at 4864: 1280 bytes
// SUMMARY:        @train_step: 23 device values in 17 buffers, activations 1280 bytes (1536 without reuse)
// SUMMARY-NEXT:   @eval_step: 12 device values in 12 buffers, activations 512 bytes (768 without reuse)
// SUMMARY-NEXT:   activations: 1280 bytes, 2304 without reuse

// -----

// Tests reuse by liveness: %a is dead once %b is computed, so %c takes its
// offset; reuse=false gives every value its own slot; alignment=64 packs the
// 12-byte values 64 bytes apart.

module attributes {rn.model = "reuse"} {
  func.func @eval_step(%x: tensor<3xf32> {rn.input = "images"}) -> (tensor<3xf32> {rn.output = "logits"}) {
    %a = rn.relu %x : tensor<3xf32>
    %b = rn.relu %a : tensor<3xf32>
    %c = rn.relu %b : tensor<3xf32>
    %d = rn.relu %c : tensor<3xf32>
    return %d : tensor<3xf32>
  }
}

// CHECK-LABEL: rn.model = "reuse"
// CHECK:       #rn.extent<activations, 512, 512>
// CHECK:       %[[A:.+]] = rn.relu %{{.+}} {rn.slots = [#rn.slot<activations, 0, 12>]}
// CHECK:       %[[B:.+]] = rn.relu %[[A]] {rn.slots = [#rn.slot<activations, 256, 12>]}
// CHECK:       %[[C:.+]] = rn.relu %[[B]] {rn.slots = [#rn.slot<activations, 0, 12>]}
// CHECK:       rn.relu %[[C]] {rn.slots = [#rn.slot<activations, 256, 12>]}

// NOREUSE-LABEL: rn.model = "reuse"
// NOREUSE:       #rn.extent<activations, 512, 1024>
// NOREUSE:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 0, 12>]}
// NOREUSE:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 256, 12>]}
// NOREUSE:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 512, 12>]}
// NOREUSE:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 768, 12>]}

// ALIGN-LABEL: rn.model = "reuse"
// ALIGN:       rn.memory_plan arena {{[0-9]+}} alignment 64 regions [#rn.extent<inputs_a, 0, 64>, #rn.extent<inputs_b, 64, 64>, #rn.extent<activations, 128, 128>,
// ALIGN:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 0, 12>]}
// ALIGN:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 64, 12>]}
// ALIGN:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 0, 12>]}
// ALIGN:       rn.relu {{.*}} {rn.slots = [#rn.slot<activations, 64, 12>]}

// -----

// Tests A/B input buffers: one slot per input name, as large as the largest
// batch of any function (eval's 16 images here); inputs_b mirrors inputs_a.

module attributes {rn.model = "inputs"} {
  func.func @train_step(%images: tensor<4x8xf32> {rn.input = "images"}, %labels: tensor<4xi32> {rn.input = "labels"}) -> (tensor<i32> {rn.output = "correct"}) {
    %c = rn.count_correct %images, %labels : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<i32>
    return %c : tensor<i32>
  }
  func.func @eval_step(%images: tensor<16x8xf32> {rn.input = "images"}, %labels: tensor<16xi32> {rn.input = "labels"}) -> (tensor<i32> {rn.output = "correct"}) {
    %c = rn.count_correct %images, %labels : (tensor<16x8xf32>, tensor<16xi32>) -> tensor<i32>
    return %c : tensor<i32>
  }
}

// CHECK-LABEL: rn.model = "inputs"
// CHECK:       rn.memory_plan arena {{[0-9]+}} alignment 256 regions [#rn.extent<inputs_a, 0, 768>, #rn.extent<inputs_b, 768, 768>, #rn.extent<scalars, 1536, 512>,
// CHECK:       func.func @train_step(%{{.+}}: tensor<4x8xf32> {rn.input = "images", rn.slot = #rn.slot<inputs_a, 0, 128>}, %{{.+}}: tensor<4xi32> {rn.input = "labels", rn.slot = #rn.slot<inputs_a, 512, 16>})
// CHECK:       func.func @eval_step(%{{.+}}: tensor<16x8xf32> {rn.input = "images", rn.slot = #rn.slot<inputs_a, 0, 512>}, %{{.+}}: tensor<16xi32> {rn.input = "labels", rn.slot = #rn.slot<inputs_a, 512, 64>})

// -----

// Tests f16 mixed precision with dynamic loss scaling: the f32 cast of the
// f16 gradient is born in the master gradient's slot (@grad_f32.w, because
// its in-place unscale is returned bound to it), the new f16 weights are
// born in @f16.w's slot once the old ones are dead, and the EMA, the loss
// scale and its step count are updated in place.

module attributes {rn.model = "mixed"} {
  rn.parameter @w : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.state gradient @grad.w of @w : tensor<10x8xf16> = #rn.init<zeros>
  rn.state master_gradient @grad_f32.w of @w : tensor<10x8xf32> = #rn.init<zeros>
  rn.state low_precision_weight @f16.w of @w : tensor<10x8xf16> = #rn.init<derived>
  rn.state momentum @momentum.w of @w : tensor<10x8xf32> = #rn.init<zeros>
  rn.state ema @ema.w of @w : tensor<10x8xf32> = #rn.init<derived>
  rn.state loss_scale @loss_scale : tensor<f32> = #rn.init<constant, 6.553600e+04>
  rn.state loss_scale_good_steps @loss_scale.good_steps : tensor<i32> = #rn.init<zeros>
  func.func @train_step(%images: tensor<4x8xf32> {rn.input = "images"}, %labels: tensor<4xi32> {rn.input = "labels"},
                        %lr: tensor<f32> {rn.input = "lr"}, %step: tensor<i32> {rn.input = "step"},
                        %w: tensor<10x8xf32> {rn.state = @w}, %g16: tensor<10x8xf16> {rn.state = @grad.w},
                        %g32: tensor<10x8xf32> {rn.state = @grad_f32.w}, %w16: tensor<10x8xf16> {rn.state = @f16.w},
                        %m: tensor<10x8xf32> {rn.state = @momentum.w}, %ema: tensor<10x8xf32> {rn.state = @ema.w},
                        %scale: tensor<f32> {rn.state = @loss_scale}, %good: tensor<i32> {rn.state = @loss_scale.good_steps})
      -> (tensor<f32> {rn.output = "loss"}, tensor<10x8xf32> {rn.state = @w}, tensor<10x8xf16> {rn.state = @grad.w},
          tensor<10x8xf32> {rn.state = @grad_f32.w}, tensor<10x8xf16> {rn.state = @f16.w}, tensor<10x8xf32> {rn.state = @momentum.w},
          tensor<10x8xf32> {rn.state = @ema.w}, tensor<f32> {rn.state = @loss_scale}, tensor<i32> {rn.state = @loss_scale.good_steps}) {
    %zero = rn.zero %g16 : tensor<10x8xf16>
    %x16 = rn.cast %images : tensor<4x8xf32> -> tensor<4x8xf16>
    %logits = rn.linear %x16, %w16 : (tensor<4x8xf16>, tensor<10x8xf16>) -> tensor<4x10xf16>
    %loss = rn.softmax_cross_entropy %logits, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf16>, tensor<4xi32>) -> tensor<f32>
    %dlogits = rn.softmax_cross_entropy_backward %logits, %labels scale %scale label_smoothing 0.000000e+00 : (tensor<4x10xf16>, tensor<4xi32>, tensor<f32>) -> tensor<4x10xf16>
    %acc = rn.linear_backward %dlogits, %x16, %w16, %zero : (tensor<4x10xf16>, tensor<4x8xf16>, tensor<10x8xf16>, tensor<10x8xf16>) -> tensor<10x8xf16>
    %master = rn.cast %acc : tensor<10x8xf16> -> tensor<10x8xf32>
    %bad = rn.check_finite %master : tensor<10x8xf32> -> tensor<i1>
    %unscaled = rn.unscale %master, %scale : (tensor<10x8xf32>, tensor<f32>) -> tensor<10x8xf32>
    %w1, %m1 = rn.sgd_update %w, %unscaled, %m lr %lr skip_if %bad momentum 9.000000e-01 weight_decay 0.000000e+00 : (tensor<10x8xf32>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<10x8xf32>, tensor<10x8xf32>)
    %w16new = rn.cast %w1 : tensor<10x8xf32> -> tensor<10x8xf16>
    %ema1 = rn.ema_update %ema, %w1 decay 9.990000e-01 : tensor<10x8xf32>
    %scale1, %good1 = rn.update_loss_scale %scale, %good, %bad growth 2.000000e+00 backoff 5.000000e-01 interval 2000 : (tensor<f32>, tensor<i32>, tensor<i1>) -> (tensor<f32>, tensor<i32>)
    return %loss, %w1, %acc, %unscaled, %w16new, %m1, %ema1, %scale1, %good1 : tensor<f32>, tensor<10x8xf32>, tensor<10x8xf16>, tensor<10x8xf32>, tensor<10x8xf16>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<f32>, tensor<i32>
  }
}

// CHECK-LABEL: rn.model = "mixed"
// CHECK:       rn.memory_plan arena {{[0-9]+}} alignment 256 regions [
// CHECK-SAME:    #rn.extent<weights, 0, 512>, #rn.extent<weights_low_precision, 512, 256>,
// CHECK-SAME:    #rn.extent<gradients, 768, 768>, #rn.extent<optimizer_state, 1536, 512>, #rn.extent<ema, 2048, 512>,
// CHECK-SAME:    #rn.extent<inputs_a, 2560, 768>, #rn.extent<inputs_b, 3328, 768>, #rn.extent<scalars, 4096, 768>,
// CHECK:       func.func @train_step(
// CHECK-SAME:    tensor<f32> {rn.input = "lr", rn.slot = #rn.slot<inputs_a, 512, 4>}
// CHECK-SAME:    %[[G16:[^:]+]]: tensor<10x8xf16> {rn.slot = #rn.slot<gradients, 0, 160>, rn.state = @grad.w}
// CHECK-SAME:    %[[G32:[^:]+]]: tensor<10x8xf32> {rn.slot = #rn.slot<gradients, 256, 320>, rn.state = @grad_f32.w}
// CHECK-SAME:    tensor<10x8xf16> {rn.slot = #rn.slot<weights_low_precision, 0, 160>, rn.state = @f16.w}
// CHECK-SAME:    %[[EMA:[^:]+]]: tensor<10x8xf32> {rn.slot = #rn.slot<ema, 0, 320>, rn.state = @ema.w}
// CHECK-SAME:    %[[SCALE:[^:]+]]: tensor<f32> {rn.slot = #rn.slot<scalars, 0, 4>, rn.state = @loss_scale}
// CHECK-SAME:    tensor<i32> {rn.slot = #rn.slot<scalars, 256, 4>, rn.state = @loss_scale.good_steps}
// CHECK:       %[[ZERO:.+]] = rn.zero %[[G16]] {rn.slots = [#rn.slot<gradients, 0, 160>]}
// CHECK:       rn.cast %{{.+}} {rn.slots = [#rn.slot<activations, 0, 64>]} : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK:       %[[ACC:.+]] = rn.linear_backward {{.*}}, %[[ZERO]] {rn.slots = [#rn.slot<gradients, 0, 160>]}
// CHECK:       %[[MASTER:.+]] = rn.cast %[[ACC]] {rn.slots = [#rn.slot<gradients, 256, 320>]} : tensor<10x8xf16> -> tensor<10x8xf32>
// CHECK:       rn.check_finite %[[MASTER]] {rn.slots = [#rn.slot<activations, 0, 1>]}
// CHECK:       rn.unscale %[[MASTER]], %[[SCALE]] {rn.slots = [#rn.slot<gradients, 256, 320>]}
// CHECK:       %[[NEW:.+]], %{{.+}} = rn.sgd_update
// CHECK:       rn.cast %[[NEW]] {rn.slots = [#rn.slot<weights_low_precision, 0, 160>]}
// CHECK:       rn.ema_update %[[EMA]], %[[NEW]] {{.*}} {rn.slots = [#rn.slot<ema, 0, 320>]}
// CHECK:       rn.update_loss_scale %[[SCALE]], {{.*}} {rn.slots = [#rn.slot<scalars, 0, 4>, #rn.slot<scalars, 256, 4>]}

// -----

// Tests the partitioned form: rn.input arguments read only by
// rn.host_to_device are host staging buffers (no slot); their device copies
// take the input slots. Subgraph attributes and event ops are ignored.

module attributes {rn.model = "staging"} {
  rn.parameter @w : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.subgraph @TRANSFER in @eval_step on #rn.stream<trans>
  rn.subgraph @FORWARD in @eval_step on #rn.stream<comp1> double_buffered
  func.func @eval_step(%images: tensor<4x8xf32> {rn.input = "images"}, %labels: tensor<4xi32> {rn.input = "labels"},
                       %w: tensor<10x8xf32> {rn.state = @w})
      -> (tensor<f32> {rn.output = "loss"}, tensor<i32> {rn.output = "correct"}, tensor<4x10xf32> {rn.output = "logits"}) {
    %x = rn.host_to_device %images {rn.subgraph = @TRANSFER} : tensor<4x8xf32>
    %y = rn.host_to_device %labels {rn.subgraph = @TRANSFER} : tensor<4xi32>
    rn.event_record external 0 on #rn.stream<trans>
    rn.event_wait external 0 on #rn.stream<comp1>
    %logits = rn.linear %x, %w {rn.subgraph = @FORWARD} : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    %loss = rn.softmax_cross_entropy %logits, %y label_smoothing 0.000000e+00 {rn.subgraph = @FORWARD} : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    %correct = rn.count_correct %logits, %y {rn.subgraph = @FORWARD} : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<i32>
    return %loss, %correct, %logits : tensor<f32>, tensor<i32>, tensor<4x10xf32>
  }
}

// CHECK-LABEL: rn.model = "staging"
// CHECK:       rn.memory_plan arena {{[0-9]+}} alignment 256 regions [#rn.extent<weights, 0, 512>, #rn.extent<inputs_a, 512, 512>, #rn.extent<inputs_b, 1024, 512>, #rn.extent<scalars, 1536, 512>, #rn.extent<activations, 2048, 256>,
// CHECK:       func.func @eval_step(%[[IMAGES:.+]]: tensor<4x8xf32> {rn.input = "images"}, %[[LABELS:.+]]: tensor<4xi32> {rn.input = "labels"}, %{{.+}}: tensor<10x8xf32> {rn.slot = #rn.slot<weights, 0, 320>, rn.state = @w})
// CHECK:       rn.host_to_device %[[IMAGES]] {rn.slots = [#rn.slot<inputs_a, 0, 128>], rn.subgraph = @TRANSFER}
// CHECK:       rn.host_to_device %[[LABELS]] {rn.slots = [#rn.slot<inputs_a, 256, 16>], rn.subgraph = @TRANSFER}
// CHECK-NEXT:  rn.event_record external 0 on #rn.stream<trans>{{$}}
// CHECK-NEXT:  rn.event_wait external 0 on #rn.stream<comp1>{{$}}
// CHECK-NEXT:  rn.linear {{.*}} {rn.slots = [#rn.slot<activations, 0, 160>], rn.subgraph = @FORWARD}

// A zoo model: ResNet-18 (CIFAR) at batch 2, f32, SGD with momentum. The
// output re-verifies: every slot holds its value.
// ZOO:       rn.memory_plan arena 346097920 alignment 256 regions [
// ZOO-SAME:    #rn.extent<weights, 0, 44696064>, #rn.extent<gradients, 44696064, 44696064>,
// ZOO-SAME:    #rn.extent<optimizer_state, 89392128, 44696064>, #rn.extent<bn_statistics, 134088192, 38400>,
// ZOO-SAME:    #rn.extent<inputs_a, 134126592, 25088>, #rn.extent<inputs_b, 134151680, 25088>,
// ZOO-SAME:    #rn.extent<scalars, 134176768, 768>, #rn.extent<activations, 134177536, 9545216>,
// ZOO-SAME:    #rn.extent<workspace_comp1, 143722752, 67108864>
// ZOO:       func.func @train_step(%{{.+}}: tensor<2x32x32x3xf32> {rn.input = "images", rn.slot = #rn.slot<inputs_a, 0, 24576>}
// ZOO:       rn.zero %{{.+}} {rn.slots = [#rn.slot<gradients, 0, 6912>]} : tensor<64x3x3x3xf32>
// ZOO:       rn.sgd_update {{.*}} {rn.slots = [#rn.slot<weights, 0, 6912>, #rn.slot<optimizer_state, 0, 6912>]}
// ZOO:       func.func @eval_step(%{{.+}}: tensor<2x32x32x3xf32> {rn.input = "images", rn.slot = #rn.slot<inputs_a, 0, 24576>}

// -----

// Tests conv2d_backward with an input-gradient addend (`plus`, after the
// accumulators among the operands): the filter and bias gradients update
// their accumulators' state slots, and the input gradient, the size of an
// activation, gets an activation slot of its own.

module attributes {rn.model = "addend"} {
  rn.parameter @c.weight : tensor<8x1x1x8xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.parameter @c.bias : tensor<8xf32> = #rn.init<zeros>
  rn.state gradient @grad.c.weight of @c.weight : tensor<8x1x1x8xf32> = #rn.init<zeros>
  rn.state gradient @grad.c.bias of @c.bias : tensor<8xf32> = #rn.init<zeros>
  func.func @train_step(%x: tensor<2x4x4x8xf32> {rn.input = "images"}, %labels: tensor<2xi32> {rn.input = "labels"},
                        %w: tensor<8x1x1x8xf32> {rn.state = @c.weight}, %b: tensor<8xf32> {rn.state = @c.bias},
                        %gw: tensor<8x1x1x8xf32> {rn.state = @grad.c.weight}, %gb: tensor<8xf32> {rn.state = @grad.c.bias})
      -> (tensor<f32> {rn.output = "loss"}, tensor<8x1x1x8xf32> {rn.state = @grad.c.weight}, tensor<8xf32> {rn.state = @grad.c.bias}) {
    %y = rn.conv2d %x, %w, %b stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<8x1x1x8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
    %dx, %dw, %db = rn.conv2d_backward %y, %x, %w, %gw, %gb stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 plus %y : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x1x1x8xf32>, tensor<8x1x1x8xf32>, tensor<8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8x1x1x8xf32>, tensor<8xf32>)
    %flat = rn.flatten %dx : tensor<2x4x4x8xf32> -> tensor<2x128xf32>
    %loss = rn.softmax_cross_entropy %flat, %labels label_smoothing 0.000000e+00 : (tensor<2x128xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss, %dw, %db : tensor<f32>, tensor<8x1x1x8xf32>, tensor<8xf32>
  }
}

// CHECK-LABEL: rn.model = "addend"
// CHECK:       func.func @train_step(
// CHECK-SAME:    %[[GW:[a-z0-9]+]]: tensor<8x1x1x8xf32> {rn.slot = #rn.slot<gradients, [[GW_OFFSET:[0-9]+]], 256>, rn.state = @grad.c.weight}
// CHECK-SAME:    %[[GB:[a-z0-9]+]]: tensor<8xf32> {rn.slot = #rn.slot<gradients, [[GB_OFFSET:[0-9]+]], 32>, rn.state = @grad.c.bias}
// CHECK:         rn.conv2d_backward {{.+}} plus {{.+}} {rn.slots = [#rn.slot<activations, {{[0-9]+}}, 1024>, #rn.slot<gradients, [[GW_OFFSET]], 256>, #rn.slot<gradients, [[GB_OFFSET]], 32>]}
