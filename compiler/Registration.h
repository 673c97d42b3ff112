//===- Registration.h - The compiler's passes, registered once --*- C++ -*-===//

#ifndef RN_COMPILER_REGISTRATION_H
#define RN_COMPILER_REGISTRATION_H

namespace rn::compiler {

/// Registers RN's passes and rn-training-pipeline, once per process: the
/// tools and every rn.compile call of a Python session share MLIR's pass
/// registry, which refuses a second registration.
void registerCompilerPasses();

} // namespace rn::compiler

#endif // RN_COMPILER_REGISTRATION_H
