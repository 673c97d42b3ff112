//===- training_reference_test.cpp - Training steps against a reference ---===//
//
// Runs five training steps of the checked-in MLP (Inputs/mlp.rnx) and small
// CNN (Inputs/cnn.rnx: conv3x3+BN+ReLU, max pool, conv3x3+BN+ReLU, flatten,
// linear; Inputs/README.md) through CpuExecutor::trainStep, and the same
// steps through an independent double-precision implementation written
// here with plain loops: forward, mean softmax cross-entropy, backward,
// torch.optim.SGD and PyTorch's batch-norm running statistics. Nothing here
// calls the rn::cpu kernels. After every step the loss and every parameter,
// momentum buffer and batch-norm buffer must agree.
//
// Both start from the executor's state after initialize() (read back with
// readState; the CNN's batch-norm scales and shifts are first set to values
// other than 1 and 0 with writeState), so regenerating the artifacts with
// another seed keeps the test valid. The training options the reference
// implements are checked against the program's nodes first.
//
// Tolerance: relative 1e-4 (kRtol). The worst error seen is 6% of it
// (RN_REFERENCE_VERBOSE=1 prints each ratio); giving the reference a
// learning rate 0.1% larger, no momentum, a biased running variance, or a
// batch-norm dx without gamma or without its xhat term makes the test fail.
// Max-pool ties are not observable here: they happen between zeros after
// the ReLU, whose gradient the ReLU drops anyway.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/cpu/cpu_executor.h"
#include "executor_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace rn {
namespace {

//===----------------------------------------------------------------------===//
// Tolerance and training options
//===----------------------------------------------------------------------===//

/// |executor - reference| <= kAtol + kRtol * |reference|. The executor keeps
/// f32 values (accumulating in double), the reference keeps doubles; five
/// steps leave them a few f32 roundings apart.
constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-6;

/// The optimizer of both artifacts (rn-compile's defaults: SGD, momentum
/// 0.9, no weight decay, no Nesterov), checked against their
/// multi_sgd_update nodes (rn-group-updates merges the per-parameter
/// updates, by the subgraph that reads each parameter next) by
/// expectOpAttributes.
struct SgdConfig {
  double momentum = 0.9;
  double weightDecay = 0.0;
  bool nesterov = false;
};

/// Batch norm of cnn.mlir (PyTorch's defaults).
constexpr double kBnEps = 1e-5;
constexpr double kBnMomentum = 0.1;

//===----------------------------------------------------------------------===//
// Reference tensors
//===----------------------------------------------------------------------===//

/// A row-major 4-D array of doubles: activations [N, H, W, C], conv
/// filters [O, KH, KW, I].
struct Tensor4 {
  std::array<int, 4> dims{};
  std::vector<double> v;

  Tensor4() = default;
  Tensor4(int d0, int d1, int d2, int d3) : dims{d0, d1, d2, d3} {
    v.assign(size_t(d0) * d1 * d2 * d3, 0.0);
  }
  Tensor4(int d0, int d1, int d2, int d3, std::vector<double> values)
      : dims{d0, d1, d2, d3}, v(std::move(values)) {}

  size_t index(int a, int b, int c, int d) const {
    return ((size_t(a) * dims[1] + b) * dims[2] + c) * dims[3] + d;
  }
  double &at(int a, int b, int c, int d) { return v[index(a, b, c, d)]; }
  double at(int a, int b, int c, int d) const { return v[index(a, b, c, d)]; }
};

/// A row-major matrix of doubles: activations [N, features], linear
/// weights [out, in].
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<double> v;

  Matrix() = default;
  Matrix(int r, int c) : rows(r), cols(c), v(size_t(r) * c, 0.0) {}
  Matrix(int r, int c, std::vector<double> values)
      : rows(r), cols(c), v(std::move(values)) {}

  double &at(int r, int c) { return v[size_t(r) * cols + c]; }
  double at(int r, int c) const { return v[size_t(r) * cols + c]; }
};

/// Reference state by the executor's state names: parameters
/// ("conv1.weight"), momentum buffers ("momentum.conv1.weight") and
/// batch-norm buffers ("bn1.running_mean").
using State = std::map<std::string, std::vector<double>>;
/// Gradients by parameter name.
using Grads = std::map<std::string, std::vector<double>>;

//===----------------------------------------------------------------------===//
// Reference layers (forward and backward)
//===----------------------------------------------------------------------===//

/// conv2d, 3x3 filter, stride 1, zero padding 1, no bias:
/// out[n,y,x,o] = sum_{kh,kw,i} in[n, y+kh-1, x+kw-1, i] * w[o,kh,kw,i].
Tensor4 conv3x3(const Tensor4 &in, const Tensor4 &w) {
  const int N = in.dims[0], H = in.dims[1], W = in.dims[2], I = in.dims[3];
  const int O = w.dims[0];
  Tensor4 out(N, H, W, O);
  for (int n = 0; n < N; ++n)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int o = 0; o < O; ++o) {
          double s = 0;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              int iy = y + kh - 1, ix = x + kw - 1;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                continue;
              for (int i = 0; i < I; ++i)
                s += in.at(n, iy, ix, i) * w.at(o, kh, kw, i);
            }
          out.at(n, y, x, o) = s;
        }
  return out;
}

struct ConvGrads {
  Tensor4 dIn; ///< empty unless asked for
  Tensor4 dW;
};

/// Gradients of conv3x3 given dOut:
/// dW[o,kh,kw,i] = sum_{n,y,x} dOut[n,y,x,o] * in[n, y+kh-1, x+kw-1, i],
/// dIn[n, y+kh-1, x+kw-1, i] += dOut[n,y,x,o] * w[o,kh,kw,i].
ConvGrads conv3x3Backward(const Tensor4 &in, const Tensor4 &w, const Tensor4 &dOut,
                          bool wantInputGrad) {
  const int N = in.dims[0], H = in.dims[1], W = in.dims[2], I = in.dims[3];
  const int O = w.dims[0];
  ConvGrads g;
  g.dW = Tensor4(O, 3, 3, I);
  if (wantInputGrad)
    g.dIn = Tensor4(N, H, W, I);
  for (int n = 0; n < N; ++n)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int o = 0; o < O; ++o) {
          double d = dOut.at(n, y, x, o);
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              int iy = y + kh - 1, ix = x + kw - 1;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                continue;
              for (int i = 0; i < I; ++i) {
                g.dW.at(o, kh, kw, i) += d * in.at(n, iy, ix, i);
                if (wantInputGrad)
                  g.dIn.at(n, iy, ix, i) += d * w.at(o, kh, kw, i);
              }
            }
        }
  return g;
}

/// Training-mode batch norm and what its backward pass needs.
struct BatchNormResult {
  Tensor4 out;
  Tensor4 xhat;
  std::vector<double> mean; ///< batch mean per channel
  std::vector<double> var;  ///< biased batch variance per channel
};

/// Per channel c over the M = N*H*W positions: mean = sum x / M,
/// var = sum (x - mean)^2 / M, xhat = (x - mean) / sqrt(var + eps),
/// out = gamma * xhat + beta.
BatchNormResult batchNormTrain(const Tensor4 &x, const std::vector<double> &gamma,
                               const std::vector<double> &beta, double eps) {
  const int C = x.dims[3];
  const size_t M = x.v.size() / size_t(C);
  BatchNormResult r;
  r.out = Tensor4(x.dims[0], x.dims[1], x.dims[2], C);
  r.xhat = r.out;
  r.mean.assign(size_t(C), 0.0);
  r.var.assign(size_t(C), 0.0);
  for (size_t k = 0; k < x.v.size(); ++k)
    r.mean[k % size_t(C)] += x.v[k] / double(M);
  for (size_t k = 0; k < x.v.size(); ++k) {
    double d = x.v[k] - r.mean[k % size_t(C)];
    r.var[k % size_t(C)] += d * d / double(M);
  }
  for (size_t k = 0; k < x.v.size(); ++k) {
    size_t c = k % size_t(C);
    r.xhat.v[k] = (x.v[k] - r.mean[c]) / std::sqrt(r.var[c] + eps);
    r.out.v[k] = gamma[c] * r.xhat.v[k] + beta[c];
  }
  return r;
}

struct BatchNormGrads {
  Tensor4 dx;
  std::vector<double> dGamma, dBeta;
};

/// Gradients of batchNormTrain given dOut, per channel over M positions:
/// dBeta = sum dOut, dGamma = sum dOut * xhat,
/// dx = gamma / sqrt(var + eps) * (dOut - dBeta / M - xhat * dGamma / M).
BatchNormGrads batchNormBackward(const BatchNormResult &f, const Tensor4 &dOut,
                                 const std::vector<double> &gamma, double eps) {
  const int C = dOut.dims[3];
  const size_t M = dOut.v.size() / size_t(C);
  BatchNormGrads g;
  g.dGamma.assign(size_t(C), 0.0);
  g.dBeta.assign(size_t(C), 0.0);
  for (size_t k = 0; k < dOut.v.size(); ++k) {
    g.dBeta[k % size_t(C)] += dOut.v[k];
    g.dGamma[k % size_t(C)] += dOut.v[k] * f.xhat.v[k];
  }
  g.dx = Tensor4(dOut.dims[0], dOut.dims[1], dOut.dims[2], C);
  for (size_t k = 0; k < dOut.v.size(); ++k) {
    size_t c = k % size_t(C);
    g.dx.v[k] = gamma[c] / std::sqrt(f.var[c] + eps) *
                (dOut.v[k] - g.dBeta[c] / double(M) - f.xhat.v[k] * g.dGamma[c] / double(M));
  }
  return g;
}

/// PyTorch's running statistics with momentum m over `count` positions:
/// running_mean = (1-m) running_mean + m mean,
/// running_var = (1-m) running_var + m var * count / (count - 1).
void updateRunningStats(const BatchNormResult &f, size_t count, double momentum,
                        std::vector<double> &runningMean, std::vector<double> &runningVar) {
  for (size_t c = 0; c < f.mean.size(); ++c) {
    runningMean[c] = (1 - momentum) * runningMean[c] + momentum * f.mean[c];
    runningVar[c] = (1 - momentum) * runningVar[c] +
                    momentum * f.var[c] * double(count) / double(count - 1);
  }
}

/// out = max(x, 0), elementwise.
std::vector<double> relu(const std::vector<double> &x) {
  std::vector<double> out(x.size());
  for (size_t k = 0; k < x.size(); ++k)
    out[k] = x[k] > 0 ? x[k] : 0.0;
  return out;
}

/// dx = dOut where out > 0, else 0 (out is relu's result).
std::vector<double> reluBackward(const std::vector<double> &out, const std::vector<double> &dOut) {
  std::vector<double> dx(out.size());
  for (size_t k = 0; k < out.size(); ++k)
    dx[k] = out[k] > 0 ? dOut[k] : 0.0;
  return dx;
}

/// 2x2 max pooling, stride 2, and where each maximum came from.
struct MaxPoolResult {
  Tensor4 out;
  std::vector<size_t> argmax; ///< per output element: the input element's flat index
};

/// out[n,y,x,c] = max over in[n, 2y+dy, 2x+dx, c], dy, dx in {0, 1}; ties
/// go to the first maximum in row-major window order (as in PyTorch).
MaxPoolResult maxPool2x2(const Tensor4 &in) {
  const int N = in.dims[0], H = in.dims[1] / 2, W = in.dims[2] / 2, C = in.dims[3];
  MaxPoolResult r;
  r.out = Tensor4(N, H, W, C);
  r.argmax.assign(r.out.v.size(), 0);
  for (int n = 0; n < N; ++n)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c) {
          size_t best = in.index(n, 2 * y, 2 * x, c);
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) {
              size_t k = in.index(n, 2 * y + dy, 2 * x + dx, c);
              if (in.v[k] > in.v[best])
                best = k;
            }
          size_t o = r.out.index(n, y, x, c);
          r.out.v[o] = in.v[best];
          r.argmax[o] = best;
        }
  return r;
}

/// dIn[argmax[k]] += dOut[k]; zero elsewhere.
Tensor4 maxPool2x2Backward(const MaxPoolResult &f, const Tensor4 &dOut,
                           const std::array<int, 4> &inDims) {
  Tensor4 dIn(inDims[0], inDims[1], inDims[2], inDims[3]);
  for (size_t k = 0; k < dOut.v.size(); ++k)
    dIn.v[f.argmax[k]] += dOut.v[k];
  return dIn;
}

/// out[n,o] = b[o] + sum_i x[n,i] * w[o,i].
Matrix linear(const Matrix &x, const Matrix &w, const std::vector<double> &b) {
  Matrix out(x.rows, w.rows);
  for (int n = 0; n < x.rows; ++n)
    for (int o = 0; o < w.rows; ++o) {
      double s = b[size_t(o)];
      for (int i = 0; i < x.cols; ++i)
        s += x.at(n, i) * w.at(o, i);
      out.at(n, o) = s;
    }
  return out;
}

struct LinearGrads {
  Matrix dx, dW;
  std::vector<double> db;
};

/// Gradients of linear given dOut: dW[o,i] = sum_n dOut[n,o] x[n,i],
/// db[o] = sum_n dOut[n,o], dx[n,i] = sum_o dOut[n,o] w[o,i].
LinearGrads linearBackward(const Matrix &x, const Matrix &w, const Matrix &dOut) {
  LinearGrads g{Matrix(x.rows, x.cols), Matrix(w.rows, w.cols),
                std::vector<double>(size_t(w.rows), 0.0)};
  for (int n = 0; n < x.rows; ++n)
    for (int o = 0; o < w.rows; ++o) {
      double d = dOut.at(n, o);
      g.db[size_t(o)] += d;
      for (int i = 0; i < x.cols; ++i) {
        g.dW.at(o, i) += d * x.at(n, i);
        g.dx.at(n, i) += d * w.at(o, i);
      }
    }
  return g;
}

struct LossResult {
  double loss = 0;
  Matrix dLogits;
};

/// Mean softmax cross-entropy over the N rows:
/// loss = 1/N sum_n (logsumexp(z_n) - z_n[label_n]),
/// dLogits[n,c] = (softmax(z_n)[c] - [c == label_n]) / N.
LossResult softmaxCrossEntropy(const Matrix &z, const std::vector<int32_t> &labels) {
  LossResult r{0.0, Matrix(z.rows, z.cols)};
  const double N = z.rows;
  for (int n = 0; n < z.rows; ++n) {
    double mx = z.at(n, 0);
    for (int c = 1; c < z.cols; ++c)
      mx = std::max(mx, z.at(n, c));
    double sum = 0;
    for (int c = 0; c < z.cols; ++c)
      sum += std::exp(z.at(n, c) - mx);
    double lse = mx + std::log(sum);
    int label = labels[size_t(n)];
    r.loss += (lse - z.at(n, label)) / N;
    for (int c = 0; c < z.cols; ++c)
      r.dLogits.at(n, c) = (std::exp(z.at(n, c) - lse) - (c == label ? 1.0 : 0.0)) / N;
  }
  return r;
}

/// torch.optim.SGD.step for every parameter in `grads` (dampening 0):
/// d = g + wd * p; buf = d on the first step, momentum * buf + d after;
/// d = nesterov ? d + momentum * buf : buf; p -= lr * d. The buffers live
/// in `state` as "momentum.<name>".
void sgdStep(State &state, const Grads &grads, double lr, bool firstStep,
             const SgdConfig &sgd) {
  for (const auto &[name, g] : grads) {
    std::vector<double> &p = state.at(name);
    std::vector<double> &buf = state.at("momentum." + name);
    ASSERT_EQ(p.size(), g.size()) << name;
    for (size_t k = 0; k < p.size(); ++k) {
      double d = g[k] + sgd.weightDecay * p[k];
      buf[k] = firstStep ? d : sgd.momentum * buf[k] + d;
      double step = sgd.nesterov ? d + sgd.momentum * buf[k] : buf[k];
      p[k] -= lr * step;
    }
  }
}

//===----------------------------------------------------------------------===//
// Reference models (one training step each)
//===----------------------------------------------------------------------===//

/// mlp.mlir: fc1 (4 -> 8), ReLU, fc2 (8 -> 3), mean cross-entropy, batch 4.
/// One step: forward, backward, SGD on every parameter. Returns the loss.
double mlpReferenceStep(State &s, const HostBatch &batch, double lr, bool firstStep,
                        const SgdConfig &sgd) {
  const int N = 4, I = 4, H = 8, C = 3;
  Matrix x(N, I, std::vector<double>(batch.images.begin(), batch.images.end()));
  Matrix w1(H, I, s.at("fc1.weight")), w2(C, H, s.at("fc2.weight"));
  const std::vector<double> &b1 = s.at("fc1.bias"), &b2 = s.at("fc2.bias");

  Matrix h(N, H, relu(linear(x, w1, b1).v));
  LossResult loss = softmaxCrossEntropy(linear(h, w2, b2), batch.labels);

  LinearGrads g2 = linearBackward(h, w2, loss.dLogits);
  Matrix dz(N, H, reluBackward(h.v, g2.dx.v));
  LinearGrads g1 = linearBackward(x, w1, dz);

  sgdStep(s,
          {{"fc1.weight", g1.dW.v}, {"fc1.bias", g1.db},
           {"fc2.weight", g2.dW.v}, {"fc2.bias", g2.db}},
          lr, firstStep, sgd);
  return loss.loss;
}

/// cnn.mlir, batch 4, 8x8x1 images: conv1 (3x3, 1 -> 4) + bn1 + ReLU,
/// max pool 2x2, conv2 (3x3, 4 -> 6) + bn2 + ReLU, flatten (NHWC order,
/// 96 features), fc (96 -> 3), mean cross-entropy. One step: forward with
/// batch statistics, backward, SGD on every parameter, running statistics.
/// Returns the loss.
double cnnReferenceStep(State &s, const HostBatch &batch, double lr, bool firstStep,
                        const SgdConfig &sgd) {
  const int N = 4, HW = 8, C1 = 4, C2 = 6, classes = 3;
  Tensor4 x(N, HW, HW, 1, std::vector<double>(batch.images.begin(), batch.images.end()));
  Tensor4 w1(C1, 3, 3, 1, s.at("conv1.weight"));
  Tensor4 w2(C2, 3, 3, C1, s.at("conv2.weight"));
  Matrix wf(classes, C2 * (HW / 2) * (HW / 2), s.at("fc.weight"));
  const std::vector<double> &g1 = s.at("bn1.weight"), &be1 = s.at("bn1.bias");
  const std::vector<double> &g2 = s.at("bn2.weight"), &be2 = s.at("bn2.bias");

  // Forward.
  Tensor4 a1 = conv3x3(x, w1);
  BatchNormResult bn1 = batchNormTrain(a1, g1, be1, kBnEps);
  Tensor4 r1(N, HW, HW, C1, relu(bn1.out.v));
  MaxPoolResult p1 = maxPool2x2(r1);
  Tensor4 a2 = conv3x3(p1.out, w2);
  BatchNormResult bn2 = batchNormTrain(a2, g2, be2, kBnEps);
  Tensor4 r2(N, HW / 2, HW / 2, C2, relu(bn2.out.v));
  Matrix flat(N, int(r2.v.size()) / N, r2.v); // NHWC order: (h, w, c) features
  LossResult loss = softmaxCrossEntropy(linear(flat, wf, s.at("fc.bias")), batch.labels);

  // Backward.
  LinearGrads gf = linearBackward(flat, wf, loss.dLogits);
  Tensor4 dz2(N, HW / 2, HW / 2, C2, reluBackward(r2.v, gf.dx.v));
  BatchNormGrads gbn2 = batchNormBackward(bn2, dz2, g2, kBnEps);
  ConvGrads gc2 = conv3x3Backward(p1.out, w2, gbn2.dx, /*wantInputGrad=*/true);
  Tensor4 dr1 = maxPool2x2Backward(p1, gc2.dIn, r1.dims);
  Tensor4 dz1(N, HW, HW, C1, reluBackward(r1.v, dr1.v));
  BatchNormGrads gbn1 = batchNormBackward(bn1, dz1, g1, kBnEps);
  ConvGrads gc1 = conv3x3Backward(x, w1, gbn1.dx, /*wantInputGrad=*/false);

  // Running statistics from this step's batch, then the update.
  updateRunningStats(bn1, a1.v.size() / C1, kBnMomentum, s.at("bn1.running_mean"),
                     s.at("bn1.running_var"));
  updateRunningStats(bn2, a2.v.size() / C2, kBnMomentum, s.at("bn2.running_mean"),
                     s.at("bn2.running_var"));
  sgdStep(s,
          {{"conv1.weight", gc1.dW.v}, {"bn1.weight", gbn1.dGamma}, {"bn1.bias", gbn1.dBeta},
           {"conv2.weight", gc2.dW.v}, {"bn2.weight", gbn2.dGamma}, {"bn2.bias", gbn2.dBeta},
           {"fc.weight", gf.dW.v}, {"fc.bias", gf.db}},
          lr, firstStep, sgd);
  return loss.loss;
}

//===----------------------------------------------------------------------===//
// Executor side and comparison
//===----------------------------------------------------------------------===//

using test_inputs::inputPath;
using test_inputs::load;
using test_inputs::makeExecutor;


/// `count` batches of `batchSize` rows: `features` images values uniform in
/// [-1, 1] per row and uniform labels in [0, classes), from a fixed seed.
std::vector<HostBatch> fixedBatches(int count, int batchSize, int features, int classes) {
  std::mt19937 rng(20240607);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<HostBatch> batches(static_cast<size_t>(count));
  for (HostBatch &b : batches) {
    for (int k = 0; k < batchSize * features; ++k)
      b.images.push_back(value(rng));
    for (int k = 0; k < batchSize; ++k)
      b.labels.push_back(int32_t(rng() % uint32_t(classes)));
  }
  return batches;
}

/// Expects every train_step node running `op` to have the numeric
/// attributes `expected` and no (or a false) `nesterov`; returns how many
/// such nodes there are.
int expectOpAttributes(const Program &program, const std::string &op,
                       const std::map<std::string, double> &expected) {
  int count = 0;
  for (const Function &f : program.functions) {
    if (f.name != "train_step")
      continue;
    for (const Subgraph &sg : f.subgraphs)
      for (const Node &n : sg.nodes) {
        if (n.kind != Node::Kind::op || n.op != op)
          continue;
        ++count;
        for (const auto &[key, value] : expected) {
          if (!n.attributes.contains(key)) {
            ADD_FAILURE() << op << " has no " << key;
            continue;
          }
          EXPECT_DOUBLE_EQ(n.attributes[key].get<double>(), value) << op << " " << key;
        }
        EXPECT_FALSE(n.attributes.value("nesterov", false)) << op;
      }
  }
  return count;
}

/// The executor's parameters, momentum buffers and buffers (every state
/// entry except the gradient accumulators) as a reference State.
State readState(const CpuExecutor &ex) {
  State s;
  for (const StateEntry &e : ex.program().state) {
    if (e.role == "gradient")
      continue;
    Result<std::vector<float>> v = ex.readState(e.name);
    if (!v.ok()) {
      ADD_FAILURE() << v.error().message();
      continue;
    }
    s[e.name] = std::vector<double>(v->begin(), v->end());
  }
  return s;
}

/// Expects |actual - expected| <= kAtol + kRtol * |expected| elementwise and
/// reports the worst element. With RN_REFERENCE_VERBOSE set, prints the
/// worst error / tolerance ratio.
void expectMatches(const std::string &what, const std::vector<double> &actual,
                   const std::vector<double> &expected) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double worst = 0;
  size_t worstIndex = 0;
  for (size_t k = 0; k < actual.size(); ++k) {
    double ratio = std::fabs(actual[k] - expected[k]) / (kAtol + kRtol * std::fabs(expected[k]));
    if (!(ratio <= worst)) { // also catches NaN
      worst = ratio;
      worstIndex = k;
    }
  }
  if (std::getenv("RN_REFERENCE_VERBOSE"))
    std::printf("%-40s worst error / tolerance %.4f\n", what.c_str(), worst);
  EXPECT_LE(worst, 1.0) << what << "[" << worstIndex << "]: executor " << actual[worstIndex]
                        << ", reference " << expected[worstIndex];
}

using ReferenceStep = std::function<double(State &, const HostBatch &, double lr,
                                           bool firstStep, const SgdConfig &)>;

/// Trains the executor and the reference side by side from the executor's
/// current state; after each step compares the loss and every state entry
/// but the gradient accumulators.
void trainAndCompare(CpuExecutor &ex, const std::vector<HostBatch> &batches, float lr,
                     const ReferenceStep &referenceStep) {
  State reference = readState(ex);
  const SgdConfig sgd;
  for (size_t step = 0; step < batches.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step + 1));
    TrainOutputs out;
    Status st = ex.trainStep(batches[step], lr, int32_t(step + 1), out);
    ASSERT_TRUE(st.ok()) << st.error().message();
    double loss = referenceStep(reference, batches[step], double(lr), step == 0, sgd);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    expectMatches("loss", {double(out.loss)}, {loss});
    State actual = readState(ex);
    ASSERT_EQ(actual.size(), reference.size());
    for (const auto &[name, values] : actual) {
      ASSERT_TRUE(reference.count(name)) << "no reference for state " << name;
      expectMatches(name, values, reference.at(name));
    }
  }
}

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

TEST(TrainingReference, MlpFiveSteps) {
  Artifact a = load("mlp.rnx");
  auto ex = makeExecutor(a);
  ASSERT_TRUE(ex);
  ASSERT_EQ(*ex->inputShape("train_step", "images"), (std::vector<int64_t>{4, 4}));
  const SgdConfig sgd;
  // Two groups: fc1 (read by FIRST_LAYER_FWD) and fc2, weight and bias each.
  EXPECT_EQ(expectOpAttributes(a.program, "multi_sgd_update",
                               {{"momentum", sgd.momentum}, {"weight_decay", sgd.weightDecay}}),
            2);
  EXPECT_EQ(expectOpAttributes(a.program, "sgd_update", {}), 0);
  trainAndCompare(*ex, fixedBatches(5, 4, 4, 3), 0.1f, mlpReferenceStep);
}

TEST(TrainingReference, CnnFiveSteps) {
  Artifact a = load("cnn.rnx");
  auto ex = makeExecutor(a);
  ASSERT_TRUE(ex);
  ASSERT_EQ(*ex->inputShape("train_step", "images"), (std::vector<int64_t>{4, 8, 8, 1}));
  const SgdConfig sgd;
  // Two groups: conv1 and bn1 (read by FIRST_LAYER_FWD, the fused CBR),
  // and the other five parameters.
  EXPECT_EQ(expectOpAttributes(a.program, "multi_sgd_update",
                               {{"momentum", sgd.momentum}, {"weight_decay", sgd.weightDecay}}),
            2);
  EXPECT_EQ(expectOpAttributes(a.program, "sgd_update", {}), 0);
  EXPECT_EQ(expectOpAttributes(a.program, "update_running_stats",
                               {{"momentum", kBnMomentum}, {"epsilon", kBnEps}}),
            2);
  EXPECT_EQ(expectOpAttributes(a.program, "cbr_forward", {{"epsilon", kBnEps}}), 2);
  // Batch norm starts at gamma 1, beta 0; other values make a pass that
  // ignores gamma or beta visible from the first step.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const char *bn : {"bn1", "bn2"}) {
    std::vector<float> gamma = *ex->readState(std::string(bn) + ".weight");
    std::vector<float> beta(gamma.size());
    for (size_t c = 0; c < gamma.size(); ++c) {
      gamma[c] = 1.0f + 0.5f * u(rng);
      beta[c] = 0.2f * u(rng);
    }
    ASSERT_TRUE(ex->writeState(std::string(bn) + ".weight", gamma).ok());
    ASSERT_TRUE(ex->writeState(std::string(bn) + ".bias", beta).ok());
  }
  trainAndCompare(*ex, fixedBatches(5, 4, 8 * 8, 3), 0.1f, cnnReferenceStep);
}

} // namespace
} // namespace rn
