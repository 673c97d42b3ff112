//===- gpu_backend.cpp - Loading librn_cuda.so ----------------------------===//

#include "runtime/train/gpu_backend.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

#ifndef RN_BUILT_WITH_CUDA
#define RN_BUILT_WITH_CUDA 0
#endif

namespace rn::train {

bool builtWithCuda() { return RN_BUILT_WITH_CUDA != 0; }

std::string nvidiaWheelFor(const std::string &loaderMessage) {
  // NVIDIA's CUDA 13 wheels, as PyTorch's cu130 wheels depend on them.
  static const struct {
    const char *library;
    const char *wheel;
  } wheels[] = {
      {"libcudnn", "nvidia-cudnn-cu13"},      {"libcublasLt", "nvidia-cublas"},
      {"libcublas", "nvidia-cublas"},         {"libnccl", "nvidia-nccl-cu13"},
      {"libcudart", "nvidia-cuda-runtime"},   {"libnvrtc", "nvidia-cuda-nvrtc"},
      {"libcupti", "nvidia-cuda-cupti"},      {"libnvJitLink", "nvidia-nvjitlink"},
  };
  // dlerror() names the library that failed first: "<name>: cannot open ...".
  const std::string missing = loaderMessage.substr(0, loaderMessage.find(':'));
  for (const auto &w : wheels)
    if (missing.rfind(w.library, 0) == 0)
      return w.wheel;
  return "";
}

namespace {

/// The folder of the library this code is in (librn_runtime.so), where
/// librn_cuda.so is built and installed.
std::string ownFolder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&nvidiaWheelFor), &info) || !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Result<GpuBackend *> load() {
  if (!builtWithCuda())
    return Error("this build of RN has no GPU executors (it was built without CUDA: "
                 "RN_ENABLE_CUDA, or the CPU wheel); the cpu executor trains here");
  std::string path;
  if (const char *env = std::getenv("RN_CUDA_LIBRARY"); env && *env)
    path = env;
  else
    path = ownFolder() + "/librn_cuda.so";
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const std::string why = dlerror();
    const std::string wheel = nvidiaWheelFor(why);
    if (!wheel.empty())
      return Error("the GPU executors need " + why.substr(0, why.find(':')) +
                   ", which comes with the pip wheel " + wheel + " (pip install " + wheel +
                   "; PyTorch's CUDA 13 wheels install it) and was not found: " + why);
    if (why.find("libcuda.so") != std::string::npos)
      return Error("the GPU executors need the NVIDIA driver (libcuda.so.1), which was not "
                   "found: " + why);
    return Error("cannot load the GPU executors (" + path + "): " + why);
  }
  using Entry = GpuBackend *(*)(int, const char **);
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "rn_gpu_backend"));
  if (!entry)
    return Error(path + " has no rn_gpu_backend entry: not RN's GPU library");
  const char *why = nullptr;
  GpuBackend *backend = entry(kGpuBackendAbi, &why);
  if (!backend)
    return Error(path + " is from another build of RN: " + (why ? why : "refused"));
  // Never unloaded: its kernels and handles live as long as the process.
  return backend;
}

} // namespace

Result<GpuBackend *> gpuBackend() {
  static std::once_flag once;
  static Result<GpuBackend *> loaded = Error("not loaded");
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}

} // namespace rn::train
