// RUN: rn-opt %s --rn-build-training --rn-partition --rn-assign-streams --rn-insert-barriers --rn-print-schedule -o /dev/null 2>&1 | FileCheck %s
// RUN: rn-opt %s --rn-build-training --rn-partition --rn-assign-streams --rn-insert-barriers --rn-print-schedule=format=dot -o /dev/null 2>&1 | FileCheck %s --check-prefix=DOT
// RUN: not rn-opt %s --rn-print-schedule=format=svg -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORMAT

// Tests the readable dump: per step function, each subgraph with its
// primary stream and variants, per stream the ops in order with the events
// they wait for and record, then the step schedules.
// CHECK:      @train_step
// CHECK-NEXT:   subgraph TRANSFER  primary trans  variants A/B
// CHECK-NEXT:     trans:
// CHECK:            rn.host_to_device -> %0
// CHECK:        subgraph DEEP_FWD_BWD  primary comp1  variants A/B
// CHECK-NEXT:     comp1:
// CHECK-NEXT:       record #[[FORK:[0-9]+]] (fork)
// CHECK:          comp3:
// CHECK-NEXT:       wait   #[[FORK]] (fork)
// CHECK-NEXT:       rn.relu -> %{{[0-9]+}}
// CHECK:            rn.linear_backward -> %{{.+}}  [input_grad on comp3, weight_grad on comp1]
// CHECK:      @eval_step
// CHECK:      schedule train_even: [host waits for TRANSFER(a)] TRANSFER(b) ZERO_GRAD FIRST_LAYER_FWD(a) DEEP_FWD_BWD(a) FIRST_LAYER_BWD(a) OPTIMIZER(a)

// Tests the Graphviz output: a cluster per subgraph, ops coloured by stream,
// event edges dashed.
// DOT:      digraph schedule {
// DOT:        subgraph cluster_train_step_DEEP_FWD_BWD {
// DOT-NEXT:     label="DEEP_FWD_BWD (comp1)";
// DOT-NEXT:     n{{[0-9]+}} [label="relu", fillcolor=orange];
// DOT:        n{{[0-9]+}} -> n{{[0-9]+}} [style=dashed, label="#{{[0-9]+}}"];

// FORMAT: error: unknown schedule format 'svg'; expected text or dot

module attributes {rn.model = "tiny"} {
  rn.parameter @fc1.weight : tensor<8x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<8xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<8x4xf32>
    %1 = rn.param @fc1.bias : tensor<8xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %3 = rn.relu %2 : tensor<2x8xf32>
    %4 = rn.param @fc2.weight : tensor<3x8xf32>
    %5 = rn.linear %3, %4 : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
    %6 = rn.softmax_cross_entropy %5, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %6 : tensor<f32>
  }
}
