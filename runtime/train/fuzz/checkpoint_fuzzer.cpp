//===- checkpoint_fuzzer.cpp - libFuzzer target for the checkpoint loader -===//
//
// An input is a checkpoint file, read as rn-run --resume reads one:
// readCheckpoint (the safetensors file and its rn.checkpoint metadata),
// then resumableEpoch against the run the metadata describes (so that the
// checks of the epoch, step and steps per epoch are reached), then every
// tensor's bytes as restoreCheckpoint copies them. An input starting with
// '{' is instead the safetensors header itself, up to its first NUL byte,
// and the tensor data after it: the target adds the 8-byte length, so that
// the fuzzer mutates the JSON without keeping the length right. Every input
// must give an Error or a checkpoint whose tensors hold their bytes; never
// a crash, undefined behavior or an allocation out of proportion to the
// file. Build and run: docs/reliability.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/fuzz/fuzz_files.h"
#include "runtime/train/checkpoint.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

// checkpoint.cpp's saving and restoring call three members of the Trainer,
// whose definitions would bring the trainer, its executors and kernels into
// the target. Reading never calls them: these stand in, and trap if called.
namespace rn::train {
std::vector<StateInfo> Trainer::state(std::string_view) const { __builtin_trap(); }
Status Trainer::writeState(std::string_view, const std::vector<float> &) { __builtin_trap(); }
Result<NamedValues> Trainer::stateDict(std::string_view) { __builtin_trap(); }
} // namespace rn::train

using rn::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  std::string file;
  if (!input.empty() && input.front() == '{') {
    const size_t nul = input.find('\0');
    const std::string_view header = input.substr(0, nul);
    rn::fuzz::putLe(file, header.size(), 8);
    file += header;
    if (nul != std::string_view::npos)
      file += input.substr(nul + 1);
  } else {
    file = std::string(input);
  }
  const std::string path = rn::fuzz::writeScratch("run.ckpt", file);
  rn::Result<rn::train::Checkpoint> checkpoint = rn::train::readCheckpoint(path);
  if (!checkpoint)
    return rn::fuzz::report(checkpoint.error().message()), 0;
  const rn::train::Checkpoint &ck = *checkpoint;
  std::string warning;
  rn::Result<int64_t> epoch = rn::train::resumableEpoch(
      ck, ck.meta("model"), std::strtoll(ck.meta("batch").c_str(), nullptr, 10),
      std::strtoll(ck.meta("steps_per_epoch").c_str(), nullptr, 10),
      std::strtoull(ck.meta("seed").c_str(), nullptr, 10) + (size & 1), &warning);
  rn::fuzz::report(epoch ? "ok: epoch " + std::to_string(*epoch) : epoch.error().message());
  for (const rn::SafetensorsEntry &t : ck.file.tensors) {
    check(ck.file.find(t.name) != nullptr);
    std::optional<uint64_t> bytes = rn::byteCount(t.dtype, t.shape);
    check(bytes && *bytes == t.bytes);
    std::string_view held = ck.file.bytesOf(t);
    check(held.size() == t.bytes);
    if (t.dtype == rn::DType::f32) {
      std::vector<float> values(held.size() / sizeof(float));
      if (!values.empty())
        std::memcpy(values.data(), held.data(), held.size());
    }
  }
  return 0;
}
