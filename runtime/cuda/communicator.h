//===- communicator.h - The NCCL communicator of a data-parallel run -*- C++ -*-===//
//
// One NCCL communicator per rank: one process per GPU (runtime/core/
// process_group.h), or one host thread per GPU in a process that drives
// several. NCCL is the only transport and bootstraps itself: across
// processes every rank sets NCCL_COMM_ID to the rendezvous address
// (MASTER_ADDR:MASTER_PORT), ncclGetUniqueId then names that address, and
// rank 0's ncclCommInitRank opens the bootstrap root there; within one
// process the threads share one ncclGetUniqueId. Nothing is exchanged by
// hand.
//
// Failures end, never hang. A collective captured in a CUDA graph spins
// on the GPU while a peer is missing, and NCCL does not notice a dead peer
// by itself, so:
//   - the communicator is created non-blocking and its initialization is
//     polled against the group's deadline (a rank missing at start-up);
//   - waitEvent(), which the executors use for every host wait while a
//     communicator is set, polls the event and NCCL's asynchronous error
//     against the same deadline;
//   - a watchdog thread aborts the communicator and ends the process with
//     an error when no wait has completed for a deadline while one is
//     outstanding (the host may be stuck in a CUDA call that waits on the
//     spinning kernel);
// and on any of these every surviving rank prints which rank it is, what
// it waited for and for how long, then ncclCommAbort frees the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_COMMUNICATOR_H
#define RN_RUNTIME_CUDA_COMMUNICATOR_H

#include "runtime/core/process_group.h"
#include "runtime/core/status.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace rn::cuda {

class Communicator {
public:
  /// The communicator of `group` on the current device (cudaSetDevice
  /// first). Fails with an error naming the rank when a peer does not join
  /// within the group's deadline.
  static Result<std::unique_ptr<Communicator>> create(const ProcessGroup &group);
  /// The same for one rank of a process that drives several GPUs (one
  /// host thread each): every rank's thread passes the `id` that
  /// newUniqueId() made once in the process, instead of the rendezvous.
  static Result<std::unique_ptr<Communicator>> create(const ProcessGroup &group,
                                                       const ncclUniqueId &id);
  /// A fresh NCCL id (its bootstrap root listens in this process).
  static Result<ncclUniqueId> newUniqueId();
  /// Destroys the communicator, or abandons it when aborted; never throws.
  ~Communicator();

  const ProcessGroup &group() const { return group_; }

  struct Buffer {
    const float *send = nullptr;
    float *receive = nullptr; ///< may equal send (in place)
    size_t count = 0;
  };
  /// The element-wise mean over the ranks of each buffer, issued on
  /// `stream` as one NCCL group (capturable: no host synchronization).
  Status allReduceMean(const std::vector<Buffer> &buffers, cudaStream_t stream);

  /// `buffers` with in-place neighbours merged: sorted by address, a buffer
  /// that starts where the previous one ends rounded up to `alignment` (the
  /// arena's: no other slot can start in between) joins it, padding and
  /// all, so that a bucket the memory plan laid out back to back is one
  /// collective. Out-of-place buffers stay as they are; alignment 0 merges
  /// nothing.
  static std::vector<Buffer> coalesce(std::vector<Buffer> buffers, size_t alignment);

  /// The element-wise mean over the ranks of device buffers, now: on the
  /// communicator's own stream, waiting within the deadline. Outside any
  /// capture, with nothing else in flight (e.g. the BN running statistics
  /// before an evaluation).
  Status allReduceMeanNow(const std::vector<Buffer> &buffers);

  /// Element-wise sums over the ranks of `values`, host to host, on the
  /// communicator's own stream, waiting within the deadline. Outside any
  /// capture: for reported losses and accuracies and the start-up checks.
  Status allReduceSumHost(std::vector<double> &values);
  /// Every rank's `value`, in rank order (host to host, like the above).
  Result<std::vector<uint64_t>> allGatherHost(uint64_t value);
  /// Fails on every rank unless every rank passed the same `value`; `what`
  /// names it ("artifact digest").
  Status checkSameOnEveryRank(uint64_t value, std::string_view what);

  /// Blocks until `event` completes, polling NCCL's asynchronous error;
  /// aborts the communicator and fails, naming `what`, at the deadline or
  /// on an NCCL error.
  Status waitEvent(cudaEvent_t event, std::string_view what);

  /// ncclCommAbort, once; the communicator cannot be used afterwards.
  void abort();
  bool aborted() const { return aborted_; }

  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

private:
  Communicator() = default;
  /// Polls ncclCommGetAsyncError until it leaves ncclInProgress or the
  /// deadline passes (then aborts).
  Status settle(std::string_view what);
  /// Aborts and reports NCCL's error `state` ("NCCL failed <when>: ...").
  Status abortOnNcclError(const std::string &when, ncclResult_t state);
  /// Aborts and reports that `what` outlived the deadline (`hint` follows
  /// the time).
  Status abortAtDeadline(std::string_view what, std::string_view hint);
  void watch();

  ProcessGroup group_;
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
  cudaStream_t hostStream_ = nullptr; ///< for the host-to-host collectives
  void *hostScratch_ = nullptr;       ///< their device buffer
  size_t hostScratchBytes_ = 0;
  cudaEvent_t hostDone_ = nullptr;

  // The watchdog: `waitingSince_` is the steady-clock time (ns) at which
  // the current wait began, 0 when none is outstanding.
  std::atomic<int64_t> waitingSince_{0};
  std::string waitingFor_; ///< guarded by mutex_
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread watchdog_;
};

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_COMMUNICATOR_H
