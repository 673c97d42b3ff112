//===- input_block_pool.h - Reused blocks of step input memory --*- C++ -*-===//
//
// A data loader writes each batch straight into a block of host input
// memory (Executor::allocateHostInput: page-locked on a GPU), and the step
// copies it to the device from there (HostValue::pinned), so a batch is
// never copied on the host after it is prepared. A batch that is already on
// the GPU (a CUDA tensor) is copied device to device into a device block
// (Executor::allocateDeviceInput) instead. Allocating either is slow, so
// blocks are allocated once and reused: a step holds its block until it
// completed, and acquire() hands out a block only the pool still holds.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_INPUT_BLOCK_POOL_H
#define RN_RUNTIME_CORE_INPUT_BLOCK_POOL_H

#include "runtime/core/executor.h"
#include "runtime/core/status.h"

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace rn {

class InputBlockPool {
public:
  enum class Memory { host, device };

  /// Blocks of `bytes` of `memory` from `executor`, which must outlive the
  /// pool.
  InputBlockPool(Executor &executor, size_t bytes, Memory memory = Memory::host)
      : executor_(executor), bytes_(bytes), memory_(memory) {}

  /// A block no step or caller holds any more, or a new one when every
  /// block is in use. Thread-safe.
  Result<std::shared_ptr<void>> acquire();

  /// Blocks allocated so far.
  size_t blocks() const;
  size_t blockBytes() const { return bytes_; }
  Memory memory() const { return memory_; }

private:
  Executor &executor_;
  size_t bytes_;
  Memory memory_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<void>> blocks_;
};

} // namespace rn

#endif // RN_RUNTIME_CORE_INPUT_BLOCK_POOL_H
