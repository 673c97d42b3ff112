// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-pad-conv-channels | FileCheck %s
// RUN: rn-opt %s --split-input-file --rn-pad-conv-channels="channel-multiple=0" 2>/dev/null | FileCheck %s --check-prefix=OFF
// RUN: rn-opt %s --split-input-file --rn-pad-conv-channels="channel-multiple=4" 2>/dev/null | FileCheck %s --check-prefix=FOUR
// RUN: rn-opt %s --split-input-file --rn-pad-conv-channels="image-stem-channels=0" 2>/dev/null | FileCheck %s --check-prefix=NOSTEM

// The pipeline: the padded stem's pads run in the first layer's subgraph
// (the batch's, then the filter's), and the schedule verifies.
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-training-pipeline="precision=f16 loss-scaling=dynamic" | FileCheck %s --check-prefix=PIPELINE
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-training-pipeline="precision=f16 pad-conv-channels=0" | FileCheck %s --check-prefix=PIPELINE-OFF

// ResNet-50's 7x7/2 stem is padded to 4 channels (cuDNN's image first-layer
// kernels), the CIFAR models' 3x3/1 stem above to 8.
// RUN: %python -m rn.models resnet50 --batch 2 | rn-opt --rn-training-pipeline="precision=f16 loss-scaling=dynamic" | FileCheck %s --check-prefix=PIPELINE-R50

// With uint8 images: the normalization folds into the stem's pad under f16,
// and stays its own op in the first layer (in f32, or without padding).
// RUN: %python -m rn.models resnet18c --batch 2 --input-dtype uint8 --mean 0.49,0.48,0.45 --std 0.25,0.24,0.26 | rn-opt --rn-training-pipeline="precision=f16 loss-scaling=dynamic" | FileCheck %s --check-prefix=BYTES
// RUN: %python -m rn.models resnet18c --batch 2 --input-dtype uint8 --mean 0.49,0.48,0.45 --std 0.25,0.24,0.26 | rn-opt --rn-training-pipeline="precision=f16 pad-conv-channels=0" | FileCheck %s --check-prefix=BYTES-OFF
// RUN: %python -m rn.models resnet18c --batch 2 --input-dtype uint8 --mean 0.49,0.48,0.45 --std 0.25,0.24,0.26 | rn-opt --rn-training-pipeline | FileCheck %s --check-prefix=BYTES-F32

// Tests the first layer of an f16 step after rn-fuse-cbr: the batch's
// cast folds into the input's pad (f32 to f16 with 5 zero channels), the
// filter gets its own pad, the forward and backward ops read both, and the
// backward keeps the parameter's 3-channel accumulator and result.

func.func @stem(%images: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf16>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                %gw: tensor<4x3x3x3xf16>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %dy: tensor<2x4x4x4xf16>)
    -> (tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>) {
  %x = rn.cast %images : tensor<2x4x4x3xf32> -> tensor<2x4x4x3xf16>
  %y, %c, %mean, %istd = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>)
  %dc, %grads:3 = rn.cbr_backward %dy, %x, %w, %c, %g, %mean, %istd, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf16>) -> (tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>)
  return %y, %grads#0, %grads#1, %grads#2 : tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @stem
// CHECK-SAME:    (%[[IMAGES:[a-z0-9]+]]: tensor<2x4x4x3xf32>, %[[W:[a-z0-9]+]]: tensor<4x3x3x3xf16>, %[[G:[a-z0-9]+]]: tensor<4xf32>, %[[B:[a-z0-9]+]]: tensor<4xf32>, %[[GW:[a-z0-9]+]]: tensor<4x3x3x3xf16>
// CHECK-NOT:     rn.cast
// CHECK-NEXT:    %[[X8:.+]] = rn.pad_channels %[[IMAGES]] : tensor<2x4x4x3xf32> -> tensor<2x4x4x8xf16>
// CHECK-NEXT:    %[[W8:.+]] = rn.pad_channels %[[W]] : tensor<4x3x3x3xf16> -> tensor<4x3x3x8xf16>
// CHECK-NEXT:    %[[Y:.+]], %[[C:.+]], %{{.+}}, %{{.+}} = rn.cbr_forward %[[X8]], %[[W8]], %[[G]], %[[B]] {{.+}} : (tensor<2x4x4x8xf16>, tensor<4x3x3x8xf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf16>,
// CHECK-NEXT:    rn.cbr_backward %{{.+}}, %[[X8]], %[[W8]], %[[C]], {{.+}}, %[[GW]], {{.+}} : (tensor<2x4x4x4xf16>, tensor<2x4x4x8xf16>, tensor<4x3x3x8xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf16>) -> (tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>)

// OFF-LABEL:   func.func @stem
// OFF-NOT:       rn.pad_channels
// OFF:           rn.cast

// FOUR-LABEL:  func.func @stem
// FOUR:          rn.pad_channels %{{.+}} : tensor<2x4x4x3xf32> -> tensor<2x4x4x4xf16>
// FOUR-NEXT:     rn.pad_channels %{{.+}} : tensor<4x3x3x3xf16> -> tensor<4x3x3x4xf16>

// -----

// Tests the stem of a model with uint8 images: their normalization (to f16,
// the compute type) folds into the input's pad, which reads the bytes with
// the mean and std; the filter's pad is as before.

func.func @stem_bytes(%images: tensor<2x4x4x3xui8>, %mean: tensor<3xf32>, %std: tensor<3xf32>, %w: tensor<4x3x3x3xf16>,
                      %gw: tensor<4x3x3x3xf16>, %dy: tensor<2x4x4x4xf16>) -> (tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16>) {
  %x = rn.normalize_images %images, %mean, %std : tensor<2x4x4x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x3xf16>
  %y = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x4x4xf16>
  %dw = rn.conv2d_backward %dy, %x, %w, %gw stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>, tensor<4x3x3x3xf16>) -> tensor<4x3x3x3xf16>
  return %y, %dw : tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16>
}

// CHECK-LABEL: func.func @stem_bytes
// CHECK-SAME:    (%[[IMAGES:[a-z0-9]+]]: tensor<2x4x4x3xui8>, %[[MEAN:[a-z0-9]+]]: tensor<3xf32>, %[[STD:[a-z0-9]+]]: tensor<3xf32>, %[[W:[a-z0-9]+]]: tensor<4x3x3x3xf16>
// CHECK-NOT:     rn.normalize_images
// CHECK-NEXT:    %[[X8:.+]] = rn.pad_channels %[[IMAGES]] normalize %[[MEAN]], %[[STD]] : tensor<2x4x4x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x8xf16>
// CHECK-NEXT:    %[[W8:.+]] = rn.pad_channels %[[W]] : tensor<4x3x3x3xf16> -> tensor<4x3x3x8xf16>
// CHECK-NEXT:    rn.conv2d %[[X8]], %[[W8]] {{.+}} -> tensor<2x4x4x4xf16>
// CHECK-NEXT:    rn.conv2d_backward %{{.+}}, %[[X8]], %[[W8]], {{.+}} -> tensor<4x3x3x3xf16>

// OFF-LABEL:   func.func @stem_bytes
// OFF-NOT:       rn.pad_channels
// OFF:           rn.normalize_images

// -----

// Tests an unfused convolution with its backward and a bf16 input that is
// an argument (no cast to fold): a single input channel becomes 8.

func.func @unfused(%x: tensor<2x4x4x1xbf16>, %w: tensor<4x3x3x1xbf16>, %gw: tensor<4x3x3x1xbf16>, %dy: tensor<2x4x4x4xbf16>)
    -> (tensor<2x4x4x4xbf16>, tensor<4x3x3x1xbf16>) {
  %y = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x1xbf16>, tensor<4x3x3x1xbf16>) -> tensor<2x4x4x4xbf16>
  %dw = rn.conv2d_backward %dy, %x, %w, %gw stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xbf16>, tensor<2x4x4x1xbf16>, tensor<4x3x3x1xbf16>, tensor<4x3x3x1xbf16>) -> tensor<4x3x3x1xbf16>
  return %y, %dw : tensor<2x4x4x4xbf16>, tensor<4x3x3x1xbf16>
}

// CHECK-LABEL: func.func @unfused
// CHECK-SAME:    (%[[X:[a-z0-9]+]]: tensor<2x4x4x1xbf16>, %[[W:[a-z0-9]+]]: tensor<4x3x3x1xbf16>, %[[GW:[a-z0-9]+]]: tensor<4x3x3x1xbf16>, %[[DY:[a-z0-9]+]]: tensor<2x4x4x4xbf16>)
// CHECK-NEXT:    %[[X8:.+]] = rn.pad_channels %[[X]] : tensor<2x4x4x1xbf16> -> tensor<2x4x4x8xbf16>
// CHECK-NEXT:    %[[W8:.+]] = rn.pad_channels %[[W]] : tensor<4x3x3x1xbf16> -> tensor<4x3x3x8xbf16>
// CHECK-NEXT:    rn.conv2d %[[X8]], %[[W8]] {{.+}} : (tensor<2x4x4x8xbf16>, tensor<4x3x3x8xbf16>) -> tensor<2x4x4x4xbf16>
// CHECK-NEXT:    rn.conv2d_backward %[[DY]], %[[X8]], %[[W8]], %[[GW]] {{.+}} : (tensor<2x4x4x4xbf16>, tensor<2x4x4x8xbf16>, tensor<4x3x3x8xbf16>, tensor<4x3x3x1xbf16>) -> tensor<4x3x3x1xbf16>

// -----

// Tests the convolutions left as they are, without a remark: f32 (no
// tensor-core kernels to gain) and channels already a multiple of 8.

func.func @kept(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %x16: tensor<2x4x4x16xf16>, %w16: tensor<4x3x3x16xf16>)
    -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf16>) {
  %y = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
  %y16 = rn.conv2d %x16, %w16 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x16xf16>, tensor<4x3x3x16xf16>) -> tensor<2x4x4x4xf16>
  return %y, %y16 : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf16>
}

// CHECK-LABEL: func.func @kept
// CHECK-NOT:     rn.pad_channels

// -----

// Tests that an interior layer, whose input gets a gradient, is left as it
// is without a remark.

func.func @input_grad(%x: tensor<2x4x4x3xf16>, %w: tensor<4x3x3x3xf16>, %gw: tensor<4x3x3x3xf16>, %dy: tensor<2x4x4x4xf16>)
    -> (tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>) {
  %y = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x4x4xf16>
  %dx, %dw = rn.conv2d_backward %dy, %x, %w, %gw stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>, tensor<4x3x3x3xf16>) -> (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>)
  return %y, %dx, %dw : tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>
}

// CHECK-LABEL: func.func @input_grad
// CHECK-NOT:     rn.pad_channels

// -----

// Tests the stems left unpadded with a remark: an input another op reads,
// and a grouped convolution.

func.func @shared_input(%x: tensor<2x4x4x3xf16>, %w: tensor<4x3x3x3xf16>) -> (tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>) {
  // expected-remark @below {{input channels left unpadded: its input is also read by rn.relu}}
  %y = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x4x4xf16>
  %r = rn.relu %x : tensor<2x4x4x3xf16>
  return %y, %r : tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>
}

// CHECK-LABEL: func.func @shared_input
// CHECK-NOT:     rn.pad_channels


// -----

func.func @grouped(%x: tensor<2x4x4x6xf16>, %w: tensor<4x3x3x3xf16>) -> tensor<2x4x4x4xf16> {
  // expected-remark @below {{input channels left unpadded: it has 2 groups}}
  %y = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 2 : (tensor<2x4x4x6xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x4x4xf16>
  return %y : tensor<2x4x4x4xf16>
}

// PIPELINE-LABEL: func.func @train_step
// PIPELINE:       %[[X8:.+]] = rn.pad_channels %{{.+}} {{.+}}rn.subgraph = @FIRST_LAYER_FWD} : tensor<2x32x32x3xf32> -> tensor<2x32x32x8xf16>
// PIPELINE:       %[[W8:.+]] = rn.pad_channels %{{.+}} {{.+}}rn.subgraph = @FIRST_LAYER_FWD} : tensor<64x3x3x3xf16> -> tensor<64x3x3x8xf16>
// PIPELINE:       rn.cbr_forward %[[X8]], %[[W8]], {{.+}}rn.subgraph = @FIRST_LAYER_FWD}
// PIPELINE:       rn.cbr_backward %{{.+}}, %[[X8]], %[[W8]], {{.+}}rn.subgraph = @FIRST_LAYER_BWD}
// PIPELINE-SAME:    -> (tensor<2x32x32x64xf16>, tensor<64x3x3x3xf16>, tensor<64xf32>, tensor<64xf32>)
// PIPELINE-LABEL: func.func @eval_step
// PIPELINE:       rn.pad_channels {{.+}}rn.subgraph = @EVAL_INFERENCE} : tensor<2x32x32x3xf32> -> tensor<2x32x32x8xf16>

// PIPELINE-OFF-LABEL: func.func @train_step
// PIPELINE-OFF-NOT:   rn.pad_channels
// PIPELINE-OFF:       rn.cast %{{.+}} {{.+}}rn.subgraph = @FIRST_LAYER_FWD} : tensor<2x32x32x3xf32> -> tensor<2x32x32x3xf16>

// BYTES-LABEL: func.func @train_step
// BYTES-SAME:    (%[[B:.+]]: tensor<2x32x32x3xui8> {rn.input = "images"}
// BYTES-NOT:     rn.normalize_images
// BYTES:         %[[X8:.+]] = rn.pad_channels %{{.+}} normalize %{{.+}}, %{{.+}} {{.+}}rn.subgraph = @FIRST_LAYER_FWD} : tensor<2x32x32x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x32x32x8xf16>
// BYTES:         rn.cbr_forward %[[X8]], {{.+}}rn.subgraph = @FIRST_LAYER_FWD}
// BYTES:         rn.cbr_backward %{{.+}}, %[[X8]], {{.+}}rn.subgraph = @FIRST_LAYER_BWD}
// BYTES-LABEL:   func.func @eval_step
// BYTES-NOT:     rn.normalize_images
// BYTES:         rn.pad_channels %{{.+}} normalize {{.+}}rn.subgraph = @EVAL_INFERENCE} : tensor<2x32x32x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x32x32x8xf16>

// BYTES-OFF-LABEL: func.func @train_step
// BYTES-OFF-NOT:   rn.pad_channels
// BYTES-OFF:       %[[X:.+]] = rn.normalize_images {{.+}}rn.subgraph = @FIRST_LAYER_FWD} : tensor<2x32x32x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x32x32x3xf16>
// BYTES-OFF:       rn.cbr_forward %[[X]], {{.+}}rn.subgraph = @FIRST_LAYER_FWD}

// BYTES-F32-LABEL: func.func @train_step
// BYTES-F32-NOT:   rn.pad_channels
// BYTES-F32:       %[[X:.+]] = rn.normalize_images {{.+}}rn.subgraph = @FIRST_LAYER_FWD} : tensor<2x32x32x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x32x32x3xf32>
// BYTES-F32:       rn.cbr_forward %[[X]], {{.+}}rn.subgraph = @FIRST_LAYER_FWD}
// BYTES-F32:       rn.cbr_backward %{{.+}}, %[[X]], {{.+}}rn.subgraph = @FIRST_LAYER_BWD}

// -----

// Tests an ImageNet-style stem (7x7, stride 2, 3 channels): padded to
// exactly 4 channels (image-stem-channels), not to a multiple of 8; with
// image-stem-channels=0 the channel-multiple rule pads it to 8.

func.func @imagenet_stem(%images: tensor<2x16x16x3xf32>, %w: tensor<8x7x7x3xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                         %gw: tensor<8x7x7x3xf16>, %gg: tensor<8xf32>, %gb: tensor<8xf32>, %dy: tensor<2x8x8x8xf16>)
    -> (tensor<2x8x8x8xf16>, tensor<8x7x7x3xf16>) {
  %x = rn.cast %images : tensor<2x16x16x3xf32> -> tensor<2x16x16x3xf16>
  %y, %c, %mean, %istd = rn.cbr_forward %x, %w, %g, %b stride [2, 2] pad [3, 3] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x16x16x3xf16>, tensor<8x7x7x3xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc, %grads:3 = rn.cbr_backward %dy, %x, %w, %c, %g, %mean, %istd, %gw, %gg, %gb relu %y stride [2, 2] pad [3, 3] dilation [1, 1] groups 1 : (tensor<2x8x8x8xf16>, tensor<2x16x16x3xf16>, tensor<8x7x7x3xf16>, tensor<2x8x8x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x7x7x3xf16>, tensor<8xf32>, tensor<8xf32>, tensor<2x8x8x8xf16>) -> (tensor<2x8x8x8xf16>, tensor<8x7x7x3xf16>, tensor<8xf32>, tensor<8xf32>)
  return %y, %grads#0 : tensor<2x8x8x8xf16>, tensor<8x7x7x3xf16>
}

// CHECK-LABEL: func.func @imagenet_stem
// CHECK-NEXT:    %[[X4:.+]] = rn.pad_channels %{{.+}} : tensor<2x16x16x3xf32> -> tensor<2x16x16x4xf16>
// CHECK-NEXT:    %[[W4:.+]] = rn.pad_channels %{{.+}} : tensor<8x7x7x3xf16> -> tensor<8x7x7x4xf16>
// CHECK-NEXT:    rn.cbr_forward %[[X4]], %[[W4]], {{.+}} : (tensor<2x16x16x4xf16>, tensor<8x7x7x4xf16>, {{.+}}
// CHECK-NEXT:    rn.cbr_backward %{{.+}}, %[[X4]], %[[W4]], {{.+}} -> (tensor<2x8x8x8xf16>, tensor<8x7x7x3xf16>, tensor<8xf32>, tensor<8xf32>)

// NOSTEM-LABEL: func.func @imagenet_stem
// NOSTEM:         rn.pad_channels %{{.+}} : tensor<2x16x16x3xf32> -> tensor<2x16x16x8xf16>

// PIPELINE-R50:  rn.pad_channels %{{.+}} : tensor<2x224x224x3xf32> -> tensor<2x224x224x4xf16>
// PIPELINE-R50:  rn.pad_channels %{{.+}} : tensor<64x7x7x3xf16> -> tensor<64x7x7x4xf16>
