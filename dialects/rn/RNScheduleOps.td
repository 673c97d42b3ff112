//===- RNScheduleOps.td - Partitioned, planned, scheduled level -*- tablegen -*-===//
//
// The levels after rn-build-training keep the step functions flat and
// annotate their ops:
//
//   rn.subgraph = @NAME            (rn-partition) the subgraph it is captured in
//   rn.slots = [#rn.slot<...>]     (rn-plan-memory) one slot per result;
//                                  function arguments carry rn.slot
//   rn.stream = #rn.stream<comp1>  (rn-assign-streams) representative stream
//   rn.stream_map = {...}          forking ops: result name -> stream
//
// plus module-level declarations (subgraphs, the memory plan, the step
// schedules) and explicit event ops (rn-insert-barriers).
//
//===----------------------------------------------------------------------===//

#ifndef RN_DIALECT_RN_SCHEDULE_OPS_TD
#define RN_DIALECT_RN_SCHEDULE_OPS_TD

include "dialects/rn/RNBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Streams, regions, slots
//===----------------------------------------------------------------------===//

def RN_StreamKindEnum : I32EnumAttr<"StreamKind", "one of the five CUDA streams", [
    I32EnumAttrCase<"trans", 0>, I32EnumAttrCase<"comp1", 1>,
    I32EnumAttrCase<"comp2", 2>, I32EnumAttrCase<"comp3", 3>,
    I32EnumAttrCase<"update", 4>]> {
  let cppNamespace = "::mlir::rn";
  let genSpecializedAttr = 0;
}

def RN_StreamAttr : EnumAttr<RN_Dialect, RN_StreamKindEnum, "stream"> {
  let summary = "a stream: trans (H2D), comp1 (GEMM), comp2 (reductions), comp3 (elementwise, dX), update";
  let assemblyFormat = "`<` $value `>`";
}

def RN_RegionKindEnum : I32EnumAttr<"RegionKind", "a typed region of the device arena", [
    I32EnumAttrCase<"weights", 0>,
    I32EnumAttrCase<"weights_low_precision", 1>,
    I32EnumAttrCase<"gradients", 2>,
    I32EnumAttrCase<"optimizer_state", 3>,
    I32EnumAttrCase<"bn_statistics", 4>,
    I32EnumAttrCase<"ema", 5>,
    I32EnumAttrCase<"inputs_a", 6>,
    I32EnumAttrCase<"inputs_b", 7>,
    I32EnumAttrCase<"scalars", 8>,
    I32EnumAttrCase<"activations", 9>,
    I32EnumAttrCase<"workspace_trans", 10>,
    I32EnumAttrCase<"workspace_comp1", 11>,
    I32EnumAttrCase<"workspace_comp2", 12>,
    I32EnumAttrCase<"workspace_comp3", 13>,
    I32EnumAttrCase<"workspace_update", 14>]> {
  let cppNamespace = "::mlir::rn";
  let genSpecializedAttr = 0;
}

def RN_RegionKindAttr : EnumAttr<RN_Dialect, RN_RegionKindEnum, "region_kind"> {
  let assemblyFormat = "`<` $value `>`";
}

def RN_SlotAttr : AttrDef<RN_Dialect, "Slot"> {
  let mnemonic = "slot";
  let summary = "where a value lives: region, byte offset in the region, bytes";
  let description = [{
    `#rn.slot<activations, 4096, 8192>`. A value in `inputs_a` has the same
    offset in `inputs_b` (A/B double buffering).
  }];
  let parameters = (ins
    EnumParameter<RN_RegionKindEnum>:$region,
    "uint64_t":$offset,
    "uint64_t":$size);
  let assemblyFormat = "`<` $region `,` $offset `,` $size `>`";
}

def RN_ExtentAttr : AttrDef<RN_Dialect, "Extent"> {
  let mnemonic = "extent";
  let summary = "a region's place in the arena: kind, byte offset, bytes";
  let parameters = (ins
    EnumParameter<RN_RegionKindEnum>:$region,
    "uint64_t":$offset,
    "uint64_t":$size);
  let assemblyFormat = "`<` $region `,` $offset `,` $size `>`";
}

//===----------------------------------------------------------------------===//
// Transfer
//===----------------------------------------------------------------------===//

def RN_HostToDeviceOp : RN_Op<"host_to_device", [
    RN_OnStream<"trans">, RN_ArtifactOp, SameOperandsAndResultType]> {
  let summary = "copies a per-step input from pinned host memory to the device";
  let description = [{
    The TRANSFER subgraph: the operand is the host staging buffer (a step
    function argument), the result the device copy in `inputs_a`/`inputs_b`
    (batches) or `scalars` (lr, step).
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Subgraphs and step schedules
//===----------------------------------------------------------------------===//

def RN_InputBufferEnum : I32EnumAttr<"InputBuffer", "input double buffer", [
    I32EnumAttrCase<"a", 0>, I32EnumAttrCase<"b", 1>]> {
  let cppNamespace = "::mlir::rn";
}

def RN_SubgraphOp : RN_Op<"subgraph", [
    Symbol, HasParent<"::mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "declares a subgraph captured as one CUDA graph";
  let description = [{
    The ops of `function` whose `rn.subgraph` names this symbol, in function
    order, form the subgraph; `primary` is the stream its capture begins and
    ends on. `double_buffered` subgraphs read the input buffers and exist in
    an A and a B variant (a CUDA graph bakes in pointers).

    ```mlir
    rn.subgraph @FIRST_LAYER_FWD in @train_step on #rn.stream<comp1> double_buffered
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    FlatSymbolRefAttr:$function,
    RN_StreamAttr:$primary,
    UnitAttr:$double_buffered);
  let assemblyFormat = [{
    $sym_name `in` $function `on` qualified($primary)
    (`double_buffered` $double_buffered^)? attr-dict
  }];
}

def RN_StepScheduleOp : RN_Op<"step_schedule", [
    Symbol, HasParent<"::mlir::ModuleOp">, NoTerminator, SingleBlock,
    NoRegionArguments]> {
  let summary = "what the host launches for one step, in order";
  let description = [{
    Launches in host order; each launch replays one subgraph (variant) on its
    primary stream. Ordering between streams comes from the events inside
    the subgraphs; `rn.host_wait` blocks the host until a launch finished.

    ```mlir
    rn.step_schedule @train_normal {
      rn.launch @TRANSFER variant b
      rn.launch @FIRST_LAYER_FWD variant a
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
}

def RN_LaunchOp : RN_Op<"launch", [
    HasParent<"StepScheduleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "launches a subgraph (its A or B variant if double-buffered)";
  let arguments = (ins
    FlatSymbolRefAttr:$subgraph,
    OptionalAttr<RN_InputBufferEnum>:$variant);
  let assemblyFormat = "$subgraph (`variant` $variant^)? attr-dict";
}

def RN_HostWaitOp : RN_Op<"host_wait", [
    HasParent<"StepScheduleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "blocks the host until the last launch of a subgraph finished";
  let arguments = (ins
    FlatSymbolRefAttr:$subgraph,
    OptionalAttr<RN_InputBufferEnum>:$variant);
  let assemblyFormat = "$subgraph (`variant` $variant^)? attr-dict";
}

//===----------------------------------------------------------------------===//
// Memory plan
//===----------------------------------------------------------------------===//

def RN_MemoryPlanOp : RN_Op<"memory_plan", [HasParent<"::mlir::ModuleOp">]> {
  let summary = "the device arena: every region's offset and size";
  let description = [{
    ```mlir
    rn.memory_plan arena 1048576 alignment 256 regions [#rn.extent<weights, 0, 4096>, ...]
    ```
    Regions are disjoint, aligned and inside the arena.
  }];
  let arguments = (ins
    I64Attr:$arena_bytes,
    I64Attr:$alignment,
    TypedArrayAttrBase<RN_ExtentAttr, "region extents">:$regions);
  let assemblyFormat = [{
    `arena` $arena_bytes `alignment` $alignment `regions` $regions attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Events
//===----------------------------------------------------------------------===//

def RN_EventKindEnum : I32EnumAttr<"EventKind", "why an event exists", [
    I32EnumAttrCase<"internal", 0>,  // between streams inside one subgraph
    I32EnumAttrCase<"fork", 1>,      // subgraph entry: primary -> secondary
    I32EnumAttrCase<"join", 2>,      // subgraph exit: secondary -> primary
    I32EnumAttrCase<"external", 3>]> { // between subgraphs
  let cppNamespace = "::mlir::rn";
}

def RN_EventRecordOp : RN_Op<"event_record"> {
  let summary = "records event `event` on `stream` after the work before it";
  let arguments = (ins
    RN_EventKindEnum:$kind,
    I64Attr:$event,
    RN_StreamAttr:$stream);
  let assemblyFormat = "$kind $event `on` qualified($stream) attr-dict";
  let hasVerifier = 1;
}

def RN_EventWaitOp : RN_Op<"event_wait"> {
  let summary = "makes `stream` wait for a record of `event`";
  let description = [{
    Waits for the most recent record of `event` issued before it. Between
    two double-buffered subgraphs the record exists once per input variant
    and `distance` says which: the record of this step (0), of the previous
    step (1, the other variant) or of the step before (2, the same variant);
    a single-variant subgraph waits on the latest record of each variant.
  }];
  let arguments = (ins
    RN_EventKindEnum:$kind,
    I64Attr:$event,
    RN_StreamAttr:$stream,
    DefaultValuedAttr<I64Attr, "0">:$distance);
  let assemblyFormat = [{
    $kind $event `on` qualified($stream) (`distance` $distance^)? attr-dict
  }];
  let hasVerifier = 1;
}

#endif // RN_DIALECT_RN_SCHEDULE_OPS_TD
