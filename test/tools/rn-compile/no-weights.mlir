// RUN: rn-compile %s -o %t.rnx --quiet --seed 7
// RUN: rn-compile %s -o %t.nw.rnx --quiet --seed 7 --no-weights
// RUN: %python %S/Inputs/dump-artifact.py %t.nw.rnx | FileCheck %s
// RUN: %python -c "import json,struct,sys; f=lambda p: (lambda d: (lambda h: (h, json.loads(h.pop('__metadata__')['rn.program']), len(d)))(json.loads(d[8:8+struct.unpack('<Q', d[:8])[0]])))(open(p,'rb').read()); wh,wp,wn=f(sys.argv[1]); nh,np,nn=f(sys.argv[2]); init=np.pop('init'); print('tensors', len(wh), len(nh)); print('init', json.dumps(init, sort_keys=True)); print('same program' if wp == np else 'programs differ'); print('smaller by', wn - nn)" %t.rnx %t.nw.rnx | FileCheck %s --check-prefix=INIT
// RUN: %if rn-run %{ rn-run %t.rnx --synthetic --steps 2 | grep loss > %t.loss %}
// RUN: %if rn-run %{ rn-run %t.nw.rnx --synthetic --steps 2 | grep loss | diff %t.loss - %}
// RUN: %if rn-run %{ rn-run %t.nw.rnx --synthetic --steps 2 | FileCheck %s --check-prefix=LOSS %}

// With low precision the runtime also derives the f16 copies of the sampled
// parameters.
// RUN: rn-compile %S/../../runtime/Inputs/cbr.mlir -o %t.cbr.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9"
// RUN: rn-compile %S/../../runtime/Inputs/cbr.mlir -o %t.cbr.nw.rnx --quiet --no-weights --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9"
// RUN: %python %S/Inputs/dump-artifact.py %t.cbr.nw.rnx | FileCheck %s --check-prefix=CBR
// RUN: %if rn-run %{ rn-run %t.cbr.rnx --synthetic --steps 2 | grep loss > %t.cbr.loss %}
// RUN: %if rn-run %{ rn-run %t.cbr.nw.rnx --synthetic --steps 2 | grep loss | diff %t.cbr.loss - %}

// Tests that --no-weights writes the program alone: no tensors, and an
// "init" entry with the sampler and the seed, from which the runtime samples
// the parameters at initialize; the program is otherwise the one of the
// artifact with weights, and training from either file gives the same loss
// lines.

// CHECK: format rn-program version 2
// CHECK-NOT: tensor
// CHECK: program rn-program 2 no_weights_mlp
// CHECK: state fc1.weight parameter f32 [16, 4] weights normal
// CHECK: state fc1.bias parameter f32 [16] weights uniform

// INIT: tensors 4 0
// INIT-NEXT: init {"sampler": "mt19937_64-xxh3", "seed": 7}
// INIT-NEXT: same program
// INIT-NEXT: smaller by {{[1-9][0-9]+}}

// LOSS: step 1 loss {{[0-9]+\.[0-9]+}}
// LOSS: step 2 loss {{[0-9]+\.[0-9]+}}

// CBR: format rn-program version 2
// CBR-NOT: tensor
// CBR: state {{.*}} low_precision_weight f16 {{.*}} derived

module attributes {rn.model = "no_weights_mlp"} {
  rn.parameter @fc1.weight : tensor<16x4xf32> = #rn.init<normal, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<16xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x16xf32> = #rn.init<normal, 2.500000e-01>
  rn.parameter @fc2.bias : tensor<3xf32> = #rn.init<zeros>
  func.func @forward(%images: tensor<8x4xf32>, %labels: tensor<8xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<16x4xf32>
    %1 = rn.param @fc1.bias : tensor<16xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
    %3 = rn.relu %2 : tensor<8x16xf32>
    %4 = rn.param @fc2.weight : tensor<3x16xf32>
    %5 = rn.param @fc2.bias : tensor<3xf32>
    %6 = rn.linear %3, %4, %5 : (tensor<8x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    %7 = rn.softmax_cross_entropy %6, %labels label_smoothing 0.000000e+00 : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
    return %7 : tensor<f32>
  }
}
