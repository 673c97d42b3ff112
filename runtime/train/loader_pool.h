//===- loader_pool.h - Threads that read and decode a batch ------*- C++ -*-===//
//
// A fixed set of worker threads for the data loader: run(n, fn) calls
// fn(i) for every i in [0, n) spread over the workers and the calling
// thread, and returns when all are done. Examples are independent (each
// draws its augmentation from its own key), so a batch does not depend on
// the number of threads. One run at a time: concurrent callers queue.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_LOADER_POOL_H
#define RN_RUNTIME_TRAIN_LOADER_POOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rn::train {

class LoaderPool {
public:
  /// `threads` >= 1 counts the caller: threads - 1 workers are started.
  explicit LoaderPool(int threads);
  ~LoaderPool();
  LoaderPool(const LoaderPool &) = delete;
  LoaderPool &operator=(const LoaderPool &) = delete;

  int threads() const { return int(workers_.size()) + 1; }
  /// fn(i) for i in [0, n), in parallel; fn must not throw.
  void run(int64_t n, const std::function<void(int64_t)> &fn);

private:
  void work();
  /// Takes indices of the current job until none is left.
  void drain();

  std::vector<std::thread> workers_;
  std::mutex runMutex_; ///< one job at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)> *job_ = nullptr;
  int64_t jobSize_ = 0;
  uint64_t generation_ = 0; ///< bumped per job, so a worker joins each once
  std::atomic<int64_t> next_{0};
  int64_t busy_ = 0; ///< workers inside the current job
  bool stopping_ = false;
};

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_LOADER_POOL_H
