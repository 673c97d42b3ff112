//===- rn-compile.cpp - Model -> runnable training artifact ---------------===//
//
// Runs rn-training-pipeline on a model and writes the training artifact
// (docs/artifact.md). The compiler is a library, librn_compiler.so
// (compiler/): the pipeline driver and the artifact writer live there, so
// that Python's rn.compile runs the same code in-process.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"

int main(int argc, char **argv) { return rn::compiler::compileToolMain(argc, argv); }
