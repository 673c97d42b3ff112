// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-bucket-all-reduce="bucket-bytes=0"

// Tests that a bucket holds some bytes.
// expected-error@+1 {{rn-bucket-all-reduce: bucket-bytes must be positive, got 0}}
module {
  func.func @train_step(%g: tensor<4xf32>) -> tensor<4xf32> {
    return %g : tensor<4xf32>
  }
}
