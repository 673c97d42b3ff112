//===- communicator.cpp - The NCCL communicator of a data-parallel run ----===//
//
// See communicator.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/communicator.h"

#include "runtime/cuda/check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rn::cuda {

namespace {

using Clock = std::chrono::steady_clock;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

/// How long the pollers sleep between looks: short next to a step, long
/// next to the CPU time a spin would burn.
constexpr auto kPollInterval = std::chrono::microseconds(50);
/// waitEvent spins (yielding) this long before it sleeps between looks, as
/// cudaEventSynchronize spins by default: most steps end within it, and a
/// sleep's wake-up latency would be added to every step.
constexpr auto kSpinBeforeSleeping = std::chrono::milliseconds(2);

} // namespace

Result<ncclUniqueId> Communicator::newUniqueId() {
  ncclUniqueId id;
  RN_CUDA_TRY(ncclGetUniqueId(&id));
  return id;
}

Result<std::unique_ptr<Communicator>> Communicator::create(const ProcessGroup &group) {
  // NCCL's own bootstrap: with NCCL_COMM_ID set, ncclGetUniqueId names that
  // address on every rank and rank 0's init listens there.
  if (group.distributed() && setenv("NCCL_COMM_ID", group.rendezvous.c_str(), 1) != 0)
    return Error(group.describe() + ": cannot set NCCL_COMM_ID");
  Result<ncclUniqueId> id = newUniqueId();
  if (!id.ok())
    return id.error().withContext(group.describe() + ": NCCL bootstrap at " +
                                  (group.distributed() ? group.rendezvous : "this process"));
  return create(group, *id);
}

Result<std::unique_ptr<Communicator>> Communicator::create(const ProcessGroup &group,
                                                           const ncclUniqueId &id) {
  std::unique_ptr<Communicator> c(new Communicator());
  c->group_ = group;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  if (Status st = RN_CUDA_CHECK(
          ncclCommInitRankConfig(&c->comm_, group.worldSize, id, group.rank, &config));
      !st.ok()) {
    c->abort();
    return st.error().withContext(group.describe() + ": NCCL communicator");
  }
  if (Status st = c->settle("the NCCL communicator's initialization (every rank must start "
                            "within RN_DIST_TIMEOUT_S; is a rank missing?)");
      !st.ok())
    return st.error();

  RN_CUDA_TRY(cudaStreamCreateWithFlags(&c->hostStream_, cudaStreamNonBlocking));
  RN_CUDA_TRY(cudaEventCreateWithFlags(&c->hostDone_, cudaEventDisableTiming));
  c->hostScratchBytes_ = size_t(64) * 1024;
  RN_CUDA_TRY(cudaMalloc(&c->hostScratch_, c->hostScratchBytes_));
  c->watchdog_ = std::thread([raw = c.get()] { raw->watch(); });
  return c;
}

Communicator::~Communicator() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (watchdog_.joinable())
    watchdog_.join();
  // A communicator whose peers may be gone is abandoned, not destroyed:
  // ncclCommDestroy would wait for them.
  if (comm_ && !aborted_)
    (void)ncclCommDestroy(comm_);
  if (hostScratch_)
    (void)cudaFree(hostScratch_);
  if (hostDone_)
    (void)cudaEventDestroy(hostDone_);
  if (hostStream_)
    (void)cudaStreamDestroy(hostStream_);
  (void)cudaGetLastError();
}

void Communicator::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_ || !comm_)
    return;
  aborted_ = true;
  (void)ncclCommAbort(comm_);
}

Status Communicator::abortOnNcclError(const std::string &when, ncclResult_t state) {
  std::string detail = ncclGetLastError(comm_);
  abort();
  return Error(group_.describe() + ": NCCL failed " + when + ": " + describe(state) +
               (detail.empty() ? "" : " (" + detail + ")"));
}

Status Communicator::abortAtDeadline(std::string_view what, std::string_view hint) {
  abort();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", group_.timeoutSeconds);
  return Error(group_.describe() + ": " + std::string(what) + " did not complete within " +
               seconds + " s" + std::string(hint) + "; the NCCL communicator was aborted");
}

Status Communicator::settle(std::string_view what) {
  auto deadline = Clock::now() + std::chrono::duration<double>(group_.timeoutSeconds);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t query = ncclCommGetAsyncError(comm_, &state);
    if (query != ncclSuccess)
      state = query;
    if (state == ncclSuccess)
      return Status::success();
    if (state != ncclInProgress)
      return abortOnNcclError("during " + std::string(what), state);
    if (Clock::now() > deadline)
      return abortAtDeadline(what, "");
    std::this_thread::sleep_for(kPollInterval);
  }
}

Status Communicator::waitEvent(cudaEvent_t event, std::string_view what) {
  if (aborted_)
    return Error(group_.describe() + ": the NCCL communicator was aborted");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waitingFor_ = what;
  }
  waitingSince_ = nowNs();
  const auto begin = Clock::now();
  auto deadline = begin + std::chrono::duration<double>(group_.timeoutSeconds);
  Status result = Status::success();
  for (;;) {
    cudaError_t q = cudaEventQuery(event);
    if (q == cudaSuccess)
      break;
    if (q != cudaErrorNotReady) {
      result = RN_CUDA_CHECK(q);
      abort();
      break;
    }
    ncclResult_t state = ncclSuccess;
    (void)ncclCommGetAsyncError(comm_, &state);
    if (state != ncclSuccess && state != ncclInProgress) {
      result = abortOnNcclError("while waiting for " + std::string(what), state);
      break;
    }
    if (Clock::now() > deadline) {
      result = abortAtDeadline(what, " (a peer rank died or hung?)");
      break;
    }
    if (Clock::now() - begin < kSpinBeforeSleeping)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(kPollInterval);
  }
  waitingSince_ = 0;
  return result;
}

void Communicator::watch() {
  // Twice the deadline: the waits themselves report at the deadline; this
  // catches a host stuck anywhere else (e.g. in a CUDA call behind a
  // spinning collective).
  const auto limit = std::chrono::duration<double>(2 * group_.timeoutSeconds);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    stop_.wait_for(lock, std::chrono::milliseconds(200));
    int64_t since = waitingSince_.load();
    if (stopping_ || since == 0)
      continue;
    double waited = double(nowNs() - since) * 1e-9;
    if (waited < limit.count())
      continue;
    std::fprintf(stderr,
                 "rn-run: error: %s: watchdog: waiting for %s for %.1f s (a peer rank died or "
                 "hung?); aborting the NCCL communicator and exiting\n",
                 group_.describe().c_str(), waitingFor_.c_str(), waited);
    std::fflush(stderr);
    if (!aborted_ && comm_) {
      aborted_ = true;
      (void)ncclCommAbort(comm_);
    }
    std::_Exit(1);
  }
}

Status Communicator::allReduceMean(const std::vector<Buffer> &buffers, cudaStream_t stream) {
  if (aborted_)
    return Error(group_.describe() + ": the NCCL communicator was aborted");
  RN_CUDA_TRY(ncclGroupStart());
  for (const Buffer &b : buffers) {
    Status st = RN_CUDA_CHECK(
        ncclAllReduce(b.send, b.receive, b.count, ncclFloat32, ncclAvg, comm_, stream));
    if (!st.ok()) {
      (void)ncclGroupEnd();
      return st.error().withContext(group_.describe());
    }
  }
  if (Status st = RN_CUDA_CHECK(ncclGroupEnd()); !st.ok())
    return st.error().withContext(group_.describe());
  // A non-blocking communicator may still be enqueuing: the group's calls
  // are issued once its state leaves ncclInProgress.
  return settle("enqueuing an all-reduce");
}

std::vector<Communicator::Buffer> Communicator::coalesce(std::vector<Buffer> buffers,
                                                         size_t alignment) {
  if (alignment == 0 || buffers.size() < 2)
    return buffers;
  std::vector<Buffer> merged, apart;
  std::vector<Buffer> inPlace;
  for (const Buffer &b : buffers)
    (b.send == b.receive ? inPlace : apart).push_back(b);
  std::sort(inPlace.begin(), inPlace.end(),
            [](const Buffer &a, const Buffer &b) { return a.send < b.send; });
  for (const Buffer &b : inPlace) {
    if (!merged.empty()) {
      Buffer &last = merged.back();
      uintptr_t end = uintptr_t(last.send + last.count);
      uintptr_t next = (end + alignment - 1) / alignment * alignment;
      if (uintptr_t(b.send) == next && (next - end) % sizeof(float) == 0) {
        last.count += (next - end) / sizeof(float) + b.count;
        continue;
      }
    }
    merged.push_back(b);
  }
  merged.insert(merged.end(), apart.begin(), apart.end());
  return merged;
}

Status Communicator::allReduceMeanNow(const std::vector<Buffer> &buffers) {
  RN_RETURN_IF_ERROR(allReduceMean(buffers, hostStream_));
  RN_CUDA_TRY(cudaEventRecord(hostDone_, hostStream_));
  return waitEvent(hostDone_, "an all-reduce between steps");
}

Status Communicator::allReduceSumHost(std::vector<double> &values) {
  size_t bytes = values.size() * sizeof(double);
  if (bytes > hostScratchBytes_)
    return Error(group_.describe() + ": " + std::to_string(values.size()) +
                 " values exceed the host collective's buffer");
  RN_CUDA_TRY(cudaMemcpyAsync(hostScratch_, values.data(), bytes, cudaMemcpyHostToDevice,
                              hostStream_));
  RN_CUDA_TRY(ncclAllReduce(hostScratch_, hostScratch_, values.size(), ncclFloat64, ncclSum,
                            comm_, hostStream_));
  RN_RETURN_IF_ERROR(settle("enqueuing a host all-reduce"));
  RN_CUDA_TRY(cudaMemcpyAsync(values.data(), hostScratch_, bytes, cudaMemcpyDeviceToHost,
                              hostStream_));
  RN_CUDA_TRY(cudaEventRecord(hostDone_, hostStream_));
  return waitEvent(hostDone_, "a host all-reduce");
}

Result<std::vector<uint64_t>> Communicator::allGatherHost(uint64_t value) {
  size_t n = size_t(group_.worldSize);
  if ((n + 1) * sizeof(uint64_t) > hostScratchBytes_)
    return Error(group_.describe() + ": too many ranks for the host all-gather's buffer");
  auto *device = static_cast<uint64_t *>(hostScratch_);
  RN_CUDA_TRY(cudaMemcpyAsync(device + n, &value, sizeof value, cudaMemcpyHostToDevice,
                              hostStream_));
  RN_CUDA_TRY(ncclAllGather(device + n, device, 1, ncclUint64, comm_, hostStream_));
  if (Status st = settle("enqueuing a host all-gather"); !st.ok())
    return st.error();
  std::vector<uint64_t> all(n);
  RN_CUDA_TRY(cudaMemcpyAsync(all.data(), device, n * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                              hostStream_));
  RN_CUDA_TRY(cudaEventRecord(hostDone_, hostStream_));
  if (Status st = waitEvent(hostDone_, "a host all-gather"); !st.ok())
    return st.error();
  return all;
}

Status Communicator::checkSameOnEveryRank(uint64_t value, std::string_view what) {
  Result<std::vector<uint64_t>> all = allGatherHost(value);
  if (!all.ok())
    return all.error().withContext(std::string("comparing the ") + std::string(what));
  for (size_t r = 0; r < all->size(); ++r)
    if ((*all)[r] != value) {
      char line[160];
      std::snprintf(line, sizeof line, ": the %.*s differs: %016llx here, %016llx on rank %zu",
                    int(what.size()), what.data(), (unsigned long long)value,
                    (unsigned long long)(*all)[r], r);
      return Error(group_.describe() + line);
    }
  return Status::success();
}

} // namespace rn::cuda
