# Links LLVM and MLIR statically into RN's compiler (included after
# find_package(MLIR)).
#
# Debian's LLVMConfig.cmake sets LLVM_LINK_LLVM_DYLIB, so every MLIR target
# it exports names the `LLVM` dylib target (MLIRSupport's
# INTERFACE_LINK_LIBRARIES is just "LLVM") and add_llvm_executable links
# libLLVM.so.22.1 (with libz3, libxml2 and libicu behind it). The wheel
# cannot carry that (45 MB gzipped) and a user's machine has no LLVM, so the
# `LLVM` entry is replaced by the static component archives Debian also
# ships, and our own add_llvm_*/add_mlir_* targets are told to link
# components instead of the dylib. The archives are position-independent
# (LLVM_ENABLE_PIC), so they go into librn_compiler.so, which hides their
# symbols (--exclude-libs) and exports only RN's compiler API.

# The components MLIR's IR, parser, passes and mlir-opt driver need
# (remarks: MLIRRemarkStreamer, which MLIROptLib links).
set(RN_LLVM_COMPONENTS support demangle remarks)
llvm_map_components_to_libnames(RN_LLVM_STATIC_LIBS ${RN_LLVM_COMPONENTS})

set(LLVM_LINK_LLVM_DYLIB OFF)

# LLVMSupport names libz3.so for its optional SMT solver, which nothing of
# ours calls; linked with --as-needed it would still be a risk of a NEEDED
# entry the wheel cannot satisfy.
if(TARGET LLVMSupport)
  get_target_property(rn_support_libs LLVMSupport INTERFACE_LINK_LIBRARIES)
  if(rn_support_libs)
    list(FILTER rn_support_libs EXCLUDE REGEX "libz3")
    set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES "${rn_support_libs}")
  endif()
endif()

foreach(rn_target IN LISTS MLIR_EXPORTED_TARGETS)
  if(NOT TARGET ${rn_target})
    continue()
  endif()
  get_target_property(rn_type ${rn_target} TYPE)
  if(NOT rn_type MATCHES "LIBRARY")
    continue()
  endif()
  get_target_property(rn_libs ${rn_target} INTERFACE_LINK_LIBRARIES)
  if(NOT rn_libs OR NOT "LLVM" IN_LIST rn_libs)
    continue()
  endif()
  set(rn_mapped)
  foreach(rn_lib IN LISTS rn_libs)
    if(rn_lib STREQUAL "LLVM")
      list(APPEND rn_mapped ${RN_LLVM_STATIC_LIBS})
    else()
      list(APPEND rn_mapped ${rn_lib})
    endif()
  endforeach()
  set_target_properties(${rn_target} PROPERTIES INTERFACE_LINK_LIBRARIES "${rn_mapped}")
endforeach()
message(STATUS "LLVM/MLIR linked statically (LLVM components: ${RN_LLVM_COMPONENTS})")
