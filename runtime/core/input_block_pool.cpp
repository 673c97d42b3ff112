//===- input_block_pool.cpp - Reused blocks of step input memory ----------===//
//
// See input_block_pool.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/input_block_pool.h"

namespace rn {

Result<std::shared_ptr<void>> InputBlockPool::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  // A block whose only owner is the pool: every step that read it has been
  // collected (the reference count drops when a completed step is freed).
  for (const std::shared_ptr<void> &b : blocks_)
    if (b.use_count() == 1)
      return b;
  Result<std::shared_ptr<void>> block = memory_ == Memory::host
                                            ? executor_.allocateHostInput(bytes_)
                                            : executor_.allocateDeviceInput(bytes_);
  if (!block.ok())
    return block.error().withContext(std::string(memory_ == Memory::host ? "host" : "device") +
                                     " input pool (" + std::to_string(blocks_.size()) +
                                     " blocks in use)");
  blocks_.push_back(*block);
  return *block;
}

size_t InputBlockPool::blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blocks_.size();
}

} // namespace rn
