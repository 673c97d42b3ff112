// RUN: rn-tblgen -gen-rn-op-attrs %tblgen_includes %s | FileCheck %s
// RUN: rn-tblgen -gen-rn-op-kinds %tblgen_includes %s | FileCheck %s --check-prefix=KINDS
// RUN: rn-tblgen -gen-rn-op-table %tblgen_includes %s | FileCheck %s --check-prefix=TABLE
// RUN: not rn-tblgen -gen-rn-op-attrs -DBAD_DEFAULT %tblgen_includes %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// The runtime's readers of every attribute kind rn-tblgen knows, with the
// ODS defaults and OptionalAttr; the real dialect has no enum, string or
// defaulted attribute on an artifact op yet (rn.gelu's enum comes with it).

include "dialects/rn/RNBase.td"

def Form : I32EnumAttr<"Form", "how the made-up op computes", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>,
    I32EnumAttrCase<"default_", 2, "default">]> {
  let cppNamespace = "::mlir::rn";
}

// Ops sort by name: OpKind and the table follow.
def Zeta : RN_Op<"zeta", [RN_ArtifactOp]> {
  let arguments = (ins OptionalAttr<F64Attr>:$scale, DefaultValuedAttr<I64Attr, "3">:$n,
      DefaultValuedAttr<BoolAttr, "true">:$on, Form:$form,
      DefaultValuedAttr<Form, "::mlir::rn::Form::tanh">:$mode, OptionalAttr<Form>:$maybe,
      StrAttr:$label, DefaultValuedStrAttr<StrAttr, "x">:$tag,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 2}">:$pair, UnitAttr:$flag, F64Attr:$delete);
}
def Alpha : RN_Op<"alpha", [RN_ArtifactOp]> {
  let arguments = (ins F32Tensor:$input);
  let results = (outs F32Tensor:$result);
}
// Not an artifact op: no kind, no readers.
def Other : RN_Op<"other", []> {
  let arguments = (ins F64Attr:$x);
}
#ifdef BAD_DEFAULT
def Bad : RN_Op<"bad", [RN_ArtifactOp]> {
  let arguments = (ins DefaultValuedAttr<F64Attr, "computeIt()">:$x);
}
#endif

// CHECK:      enum class Form : int64_t {
// CHECK-NEXT:   none = 0,
// CHECK-NEXT:   tanh = 1,
// CHECK-NEXT:   default_ = 2,
// CHECK-NEXT: };
// CHECK:        {"default", Form::default_},
// CHECK-NOT:  namespace alpha
// CHECK-NOT:  namespace other
// CHECK:      namespace zeta {
// CHECK-NEXT: struct attrs {
// CHECK-NEXT:   static std::optional<double> scale(const Node &node) {
// CHECK-NEXT:     return detail::real(node, "scale");
// CHECK:        static int64_t n(const Node &node, int64_t absent = 3) {
// CHECK:        static bool on(const Node &node, bool absent = true) {
// CHECK:        static Form form(const Node &node, Form absent = Form::none) {
// CHECK-NEXT:     return detail::enumeration(node, "form", kFormCases).value_or(absent);
// CHECK:        static Form mode(const Node &node, Form absent = Form::tanh) {
// CHECK:        static std::optional<Form> maybe(const Node &node) {
// CHECK:        static std::string_view label(const Node &node, std::string_view absent = "") {
// CHECK:        static std::string_view tag(const Node &node, std::string_view absent = "x") {
// CHECK:        static std::vector<int64_t> pair(const Node &node) {
// CHECK-NEXT:     return detail::integers(node, "pair").value_or(std::vector<int64_t>{1, 2});
// CHECK:        static bool flag(const Node &node) {
// CHECK-NEXT:     return detail::boolean(node, "flag").value_or(false);
// CHECK:        static double delete_(const Node &node, double absent = 0) {
// CHECK-NEXT:     return detail::real(node, "delete").value_or(absent);
// CHECK:      } // namespace zeta

// KINDS:      enum class OpKind : uint16_t {
// KINDS-NEXT:   alpha,
// KINDS-NEXT:   zeta,
// KINDS-NEXT: };
// KINDS:      inline constexpr size_t kNumOpKinds = 2;

// TABLE:      {"form", AttrKind::enumeration, true},
// TABLE-NEXT: {"mode", AttrKind::enumeration, false},
// TABLE:      {OpKind::alpha, "alpha", kAlphaOperands, 1, kAlphaResults, 1, nullptr, 0},
// TABLE-NEXT: {OpKind::zeta, "zeta", nullptr, 0, nullptr, 0, kZetaAttributes, 11},

// BAD: error: rn-tblgen: cannot read the default `computeIt()` of attribute 'x' of rn.bad as a real
