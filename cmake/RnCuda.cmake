# Finds what the CUDA runtime half needs and defines rn_runtime_cuda.
#
#   RN_ENABLE_CUDA       AUTO (default: on when everything is found: nvcc,
#                        cudart, cuBLASLt, NVRTC, CUPTI, cuDNN and its frontend,
#                        NCCL, CUTLASS's headers), ON
#                        (fail when something is missing) or OFF
#   RN_CUDNN_FRONTEND_INCLUDE_DIR   folder with cudnn_frontend.h; found from
#                        the nvidia-cudnn-frontend wheel (pip) by default
#   RN_CUTLASS_INCLUDE_DIR   folder with cutlass/cutlass.h; found from the
#                        nvidia-cutlass wheel (pip) by default
#
# Sets RN_HAVE_CUDA (ON/OFF) for the rest of the build.

set(RN_ENABLE_CUDA AUTO CACHE STRING "Build the CUDA runtime (AUTO, ON, OFF)")
set_property(CACHE RN_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)
set(RN_HAVE_CUDA OFF)

function(rn_cuda_missing what)
  if(RN_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "RN_ENABLE_CUDA=ON but ${what}")
  endif()
  message(STATUS "CUDA runtime off: ${what}")
endfunction()

if(NOT RN_ENABLE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    rn_cuda_missing("no CUDA compiler (nvcc) was found")
    return()
  endif()
  find_package(CUDAToolkit)
  find_library(RN_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  find_path(RN_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  # NCCL (communicator.cpp: data-parallel runs); on the GPU machine
  # libnccl.so.2 comes from the PyTorch venv (scripts/gpu-env.sh).
  find_library(RN_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  find_path(RN_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  # Header folders of pip wheels, asked of the configuring interpreter,
  # then of python3 on PATH (a wheel built for another Python need not have
  # the headers installed); kept in the cache, so that a later configure for
  # another Python finds them too. rn_find_wheel_headers(VAR DISTRIBUTION
  # HEADER LEVELS DOC): VAR is the folder LEVELS folders above the wheel's
  # file whose path ends in HEADER.
  find_program(RN_PATH_PYTHON3 python3)
  function(rn_find_wheel_headers var distribution header levels doc)
    if(${var})
      return()
    endif()
    foreach(python ${Python3_EXECUTABLE} ${RN_PATH_PYTHON3})
      execute_process(
        COMMAND ${python} -c
          "import importlib.metadata as m, pathlib; d = m.distribution('${distribution}'); print(next(pathlib.Path(d.locate_file(f)).parents[${levels}] for f in d.files if str(f).endswith('${header}')))"
        OUTPUT_VARIABLE found OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(found)
        set(${var} ${found} CACHE PATH "${doc}")
        return()
      endif()
    endforeach()
  endfunction()
  # pip puts the frontend's headers into <site-packages>/include; the
  # nvidia-cutlass wheel keeps CUTLASS's under cutlass_library/source
  # (include/ and tools/util/include/).
  rn_find_wheel_headers(RN_CUDNN_FRONTEND_INCLUDE_DIR nvidia-cudnn-frontend
    /cudnn_frontend.h 0 "folder with cudnn_frontend.h")
  rn_find_wheel_headers(RN_CUTLASS_INCLUDE_DIR nvidia-cutlass
    include/cutlass/cutlass.h 1 "folder with cutlass/cutlass.h")
  if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublasLt OR NOT TARGET CUDA::nvrtc)
    rn_cuda_missing("the CUDA toolkit (cudart, cuBLASLt, NVRTC) was not found")
    return()
  endif()
  # CUPTI (cupti_trace.cpp, rn-run --trace): libcupti.so.13 of the toolkit;
  # on the GPU machine it is found through LD_LIBRARY_PATH (docs/gpu-tests.md).
  if(NOT TARGET CUDA::cupti)
    rn_cuda_missing("CUPTI (libcupti, cupti.h) was not found in the CUDA toolkit")
    return()
  endif()
  if(NOT RN_CUDNN_LIBRARY OR NOT RN_CUDNN_INCLUDE_DIR)
    rn_cuda_missing("cuDNN (libcudnn.so, cudnn.h) was not found")
    return()
  endif()
  if(NOT RN_NCCL_LIBRARY OR NOT RN_NCCL_INCLUDE_DIR)
    rn_cuda_missing("NCCL (libnccl.so, nccl.h) was not found")
    return()
  endif()
  if(NOT RN_CUDNN_FRONTEND_INCLUDE_DIR OR NOT EXISTS "${RN_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend.h")
    rn_cuda_missing("the cuDNN frontend headers were not found (pip install nvidia-cudnn-frontend)")
    return()
  endif()

  if(NOT RN_CUTLASS_INCLUDE_DIR OR NOT EXISTS "${RN_CUTLASS_INCLUDE_DIR}/cutlass/cutlass.h")
    rn_cuda_missing("the CUTLASS headers were not found (pip install --no-deps nvidia-cutlass)")
    return()
  endif()
  get_filename_component(RN_CUTLASS_UTIL_INCLUDE_DIR "${RN_CUTLASS_INCLUDE_DIR}/../tools/util/include" ABSOLUTE)

  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  set(CMAKE_CUDA_ARCHITECTURES 90)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
  set(RN_HAVE_CUDA ON)
  set(RN_HAVE_CUDA ON PARENT_SCOPE)
  message(STATUS "CUDA runtime on: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, sm_90 (CUTLASS sm_90a), cuDNN ${RN_CUDNN_LIBRARY}, frontend ${RN_CUDNN_FRONTEND_INCLUDE_DIR}, CUTLASS ${RN_CUTLASS_INCLUDE_DIR}")

  # librn_cuda.so: the GPU executors, loaded by librn_runtime.so on the
  # first request for a GPU (runtime/train/gpu_backend.h). In the wheel it
  # finds NVIDIA's libraries in the nvidia-* pip wheels that PyTorch
  # installs, through RPATHs relative to site-packages/rn/lib.
  file(GLOB RN_RUNTIME_CUDA_SOURCES CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/cuda/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/cuda/*.cu)
  add_library(rn_runtime_cuda SHARED ${RN_RUNTIME_CUDA_SOURCES})
  set(RN_NVIDIA_WHEEL_RPATH "$ORIGIN")
  foreach(wheel_dir cu13 cudnn nccl)
    list(APPEND RN_NVIDIA_WHEEL_RPATH "$ORIGIN/../../nvidia/${wheel_dir}/lib")
  endforeach()
  set_target_properties(rn_runtime_cuda PROPERTIES
    OUTPUT_NAME rn_cuda
    INSTALL_RPATH "${RN_NVIDIA_WHEEL_RPATH}"
    CUDA_RUNTIME_LIBRARY Shared)
  target_include_directories(rn_runtime_cuda PUBLIC ${PROJECT_SOURCE_DIR} ${RN_CUDNN_INCLUDE_DIR}
    ${RN_NCCL_INCLUDE_DIR})
  # The frontend's headers are included by conv.cpp only (host C++, g++).
  target_include_directories(rn_runtime_cuda SYSTEM PRIVATE ${RN_CUDNN_FRONTEND_INCLUDE_DIR})
  target_link_libraries(rn_runtime_cuda PUBLIC rn_runtime CUDA::cudart CUDA::cublasLt
    ${RN_CUDNN_LIBRARY} ${RN_NCCL_LIBRARY} CUDA::cupti PRIVATE CUDA::nvrtc)
  target_link_options(rn_runtime_cuda PRIVATE -Wl,--as-needed)
  # -fvisibility-inlines-hidden: the cuDNN frontend is header-only, and
  # PyTorch in the same process carries its own (other) version of it.
  target_compile_options(rn_runtime_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -fvisibility-inlines-hidden>
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
  target_compile_definitions(rn_runtime_cuda PUBLIC RN_HAVE_CUDA=1)

  # CUTLASS's Hopper kernels (runtime/cuda/cutlass): a few translation units
  # of explicit instantiations, built for sm_90a only (warpgroup MMA and
  # TMA need the architecture-specific target) and linked into
  # librn_cuda.so.
  file(GLOB RN_RUNTIME_CUTLASS_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cuda/cutlass/*.cu)
  add_library(rn_runtime_cutlass OBJECT ${RN_RUNTIME_CUTLASS_SOURCES})
  set_target_properties(rn_runtime_cutlass PROPERTIES
    CUDA_ARCHITECTURES OFF POSITION_INDEPENDENT_CODE ON CUDA_RUNTIME_LIBRARY Shared)
  target_compile_options(rn_runtime_cutlass PRIVATE
    --generate-code=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -lineinfo)
  target_include_directories(rn_runtime_cutlass PRIVATE ${PROJECT_SOURCE_DIR})
  target_include_directories(rn_runtime_cutlass SYSTEM PRIVATE ${RN_CUTLASS_INCLUDE_DIR}
    ${RN_CUTLASS_UTIL_INCLUDE_DIR})
  target_sources(rn_runtime_cuda PRIVATE $<TARGET_OBJECTS:rn_runtime_cutlass>)
endif()
