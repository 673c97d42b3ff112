//===- RNBase.td - The rn dialect, its enums and attributes -*- tablegen -*-===//
//
// The `rn` dialect describes a neural network to be trained. Activations are
// NHWC tensors, convolution filters are OHWI, linear weights are [out, in].
//
//===----------------------------------------------------------------------===//

#ifndef RN_DIALECT_RN_BASE_TD
#define RN_DIALECT_RN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def RN_Dialect : Dialect {
  let name = "rn";
  let cppNamespace = "::mlir::rn";
  let summary = "Training-step IR for convolutional networks";
  let description = [{
    The `rn` dialect carries a model from its forward definition (the model
    level: parameters, tensor ops and a loss) through the training step, CBR
    fusion, partitioning into subgraphs, memory planning and stream
    scheduling. Activations are NHWC, filters OHWI.

    Model parameters are module-level symbols (`rn.parameter`) read inside the
    forward function with `rn.param`. The module attribute `rn.model` names
    the model.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

class RN_Op<string mnemonic, list<Trait> traits = []>
    : Op<RN_Dialect, mnemonic, traits>;

// The ops an artifact may hold: the runtime has a CPU kernel and a CUDA
// launcher for each (test/runtime/core/op_table_test.cpp checks both), and
// `rn-tblgen -gen-rn-op-table` writes their operands, results and
// attributes into the runtime's op table (runtime/core/op_table.h).
def RN_ArtifactOp : NativeOpTrait<"ArtifactOp"> {
  let cppNamespace = "::mlir::rn";
}

//===----------------------------------------------------------------------===//
// Initializers
//===----------------------------------------------------------------------===//

def RN_InitZeros : I32EnumAttrCase<"zeros", 0>;
def RN_InitOnes : I32EnumAttrCase<"ones", 1>;
def RN_InitUniform : I32EnumAttrCase<"uniform", 2>;
def RN_InitNormal : I32EnumAttrCase<"normal", 3>;
def RN_InitConstant : I32EnumAttrCase<"constant", 4>;
def RN_InitDerived : I32EnumAttrCase<"derived", 5>;
def RN_InitValues : I32EnumAttrCase<"values", 6>;

def RN_InitKind : I32EnumAttr<"InitKind", "parameter initializer distribution",
    [RN_InitZeros, RN_InitOnes, RN_InitUniform, RN_InitNormal,
     RN_InitConstant, RN_InitDerived, RN_InitValues]> {
  let cppNamespace = "::mlir::rn";
  let genSpecializedAttr = 0;
}

def RN_InitAttr : AttrDef<RN_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "how a parameter is initialized";
  let description = [{
    A concrete distribution, computed by the frontend from the framework rule
    it mirrors (for example PyTorch's default Linear weight init is
    `uniform` with bound 1/sqrt(fan_in)):

    ```mlir
    #rn.init<zeros>
    #rn.init<ones>
    #rn.init<uniform, 3.571428731e-02>   // U(-bound, +bound)
    #rn.init<normal, 5.892556509e-02>    // N(0, std^2)
    #rn.init<constant, 6.553600e+04>     // every element equal (loss scale)
    #rn.init<derived>                    // computed from its parameter before
                                         // the first step (low-precision
                                         // copies, EMA weights)
    #rn.init<values, [4.914e-01, 4.822e-01, 4.465e-01]>
                                         // every element given, in order
                                         // (a uint8 model's input mean/std)
    ```
  }];
  let parameters = (ins
    EnumParameter<RN_InitKind>:$kind,
    APFloatParameter<"bound (uniform), std (normal), value (constant); 0 otherwise">:$scale,
    OptionalParameter<"::mlir::DenseF64ArrayAttr",
                      "each element's value (values); null otherwise">:$values);
  let builders = [
    AttrBuilder<(ins "InitKind":$kind, "llvm::APFloat":$scale), [{
      return $_get($_ctxt, kind, scale, ::mlir::DenseF64ArrayAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// The values of a `values` init (empty for the other kinds).
    ::llvm::ArrayRef<double> getElementValues() const {
      return getValues() ? getValues().asArrayRef() : ::llvm::ArrayRef<double>();
    }
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // RN_DIALECT_RN_BASE_TD
