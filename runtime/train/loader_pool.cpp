//===- loader_pool.cpp - Threads that read and decode a batch -------------===//
//
// See loader_pool.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/loader_pool.h"

namespace rn::train {

LoaderPool::LoaderPool(int threads) {
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] { work(); });
}

LoaderPool::~LoaderPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

void LoaderPool::drain() {
  for (int64_t i = next_.fetch_add(1); i < jobSize_; i = next_.fetch_add(1))
    (*job_)(i);
}

void LoaderPool::work() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || (job_ && generation_ != seen); });
      if (stopping_)
        return;
      seen = generation_;
      ++busy_;
    }
    drain();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
    done_.notify_all();
  }
}

void LoaderPool::run(int64_t n, const std::function<void(int64_t)> &fn) {
  if (workers_.empty() || n <= 1) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::lock_guard<std::mutex> one(runMutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    jobSize_ = n;
    next_.store(0);
    ++generation_;
  }
  wake_.notify_all();
  drain();
  // Every index is taken; wait for the workers still inside this job, then
  // retire it so that a late waker does not join.
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0; });
  job_ = nullptr;
}

} // namespace rn::train
