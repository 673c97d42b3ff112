//===- rn-tblgen.cpp - RN's TableGen backends ------------------------------===//
//
// -gen-rn-op-table: the compiler -> runtime op contract, from the ODS of the
// ops marked RN_ArtifactOp (the ops an artifact may hold), as an MLIR-free
// C++ header for the runtime: each op's name, its operands and results by
// ODS name with their arity (one, optional, variadic) and its attributes
// with their kind and whether a node must carry them.
// -gen-rn-op-indices: per op, constants that name the operand and result
// indices in ODS order, so that runtime code says
// `cbr_backward::operand::relu_output`, not "the eleventh" (op_indices.h,
// which op_table.h includes).
//
// The runtime-only builds have no TableGen: the headers are checked in
// (runtime/core/op_table.h, op_indices.h) and the compiler build
// regenerates them and fails when they differ (cmake/CheckGenerated.cmake).
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Record.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace mlir;
using mlir::tblgen::NamedAttribute;
using mlir::tblgen::NamedTypeConstraint;
using mlir::tblgen::Operator;

namespace {

constexpr llvm::StringLiteral kArtifactTrait = "::mlir::rn::ArtifactOp";

std::string arity(const NamedTypeConstraint &value) {
  if (value.isVariadicOfVariadic())
    return "Arity::variadic"; // none today; would need a JSON list of lists
  if (value.isVariadic())
    return "Arity::variadic";
  if (value.isOptional())
    return "Arity::optional";
  return "Arity::one";
}

/// How an attribute reads in the artifact's JSON (rn-compile's
/// attributeJson): the kind from its storage type.
std::string attrKind(const tblgen::Attribute &attr) {
  if (attr.isEnumAttr())
    return "AttrKind::enumeration";
  llvm::StringRef storage = attr.getStorageType();
  if (storage == "::mlir::UnitAttr")
    return "AttrKind::flag";
  if (storage == "::mlir::BoolAttr")
    return "AttrKind::boolean";
  if (storage == "::mlir::IntegerAttr")
    return "AttrKind::integer";
  if (storage == "::mlir::FloatAttr")
    return "AttrKind::real";
  if (storage == "::mlir::DenseI64ArrayAttr" ||
      storage == "::mlir::DenseI32ArrayAttr")
    return "AttrKind::integers";
  if (storage == "::mlir::StringAttr")
    return "AttrKind::string";
  if (attr.isSymbolRefAttr())
    return "AttrKind::symbol";
  return "AttrKind::other";
}

/// A node must carry the attribute unless it is optional, a unit attribute
/// (absent: false) or has a default.
bool attrRequired(const tblgen::Attribute &attr) {
  return !attr.isOptional() && !attr.hasDefaultValue() &&
         attr.getStorageType() != "::mlir::UnitAttr";
}

/// "batch_norm_train" -> "kBatchNormTrain".
std::string tableName(llvm::StringRef op, llvm::StringRef suffix) {
  std::string name = "k";
  bool upper = true;
  for (char c : op) {
    if (c == '_') {
      upper = true;
      continue;
    }
    name += upper ? char(std::toupper(c)) : c;
    upper = false;
  }
  return name + suffix.str();
}

void emitValues(llvm::raw_ostream &os, llvm::StringRef table,
                llvm::ArrayRef<const NamedTypeConstraint *> values) {
  if (values.empty())
    return;
  os << "inline constexpr Value " << table << "[] = {\n";
  for (const NamedTypeConstraint *value : values)
    os << llvm::formatv("    {{\"{0}\", {1}},\n", value->name, arity(*value));
  os << "};\n";
}

/// `namespace operand { constexpr size_t input = 0, ...; }`: the index of
/// each value in ODS order (constants, not enums: an operand and a result
/// may share a name).
void emitRoleIndices(llvm::raw_ostream &os, llvm::StringRef scope,
                     llvm::ArrayRef<const NamedTypeConstraint *> values) {
  if (values.empty())
    return;
  os << "namespace " << scope << " {\n";
  for (auto [index, value] : llvm::enumerate(values))
    os << "inline constexpr size_t " << value->name << " = " << index << ";\n";
  os << "} // namespace " << scope << "\n";
}

/// The rn ops an artifact may hold, sorted by name. Operator holds a
/// reference: the records are kept and each wrapped where it is used.
std::vector<const llvm::Record *> artifactOps(const llvm::RecordKeeper &records) {
  std::vector<const llvm::Record *> defs;
  for (const llvm::Record *def : records.getAllDerivedDefinitions("Op")) {
    Operator op(def);
    if (op.getDialectName() == "rn" && op.getTrait(kArtifactTrait))
      defs.push_back(def);
  }
  llvm::sort(defs, [](const llvm::Record *a, const llvm::Record *b) {
    return Operator(a).getOperationName() < Operator(b).getOperationName();
  });
  return defs;
}

/// An op's operands and results, in ODS order.
std::vector<const NamedTypeConstraint *> operandsOf(const Operator &op) {
  std::vector<const NamedTypeConstraint *> values;
  for (int i = 0; i < op.getNumOperands(); ++i)
    values.push_back(&op.getOperand(i));
  return values;
}
std::vector<const NamedTypeConstraint *> resultsOf(const Operator &op) {
  std::vector<const NamedTypeConstraint *> values;
  for (int i = 0; i < op.getNumResults(); ++i)
    values.push_back(&op.getResult(i));
  return values;
}

bool emitOpIndices(const llvm::RecordKeeper &records, llvm::raw_ostream &os) {
  os << R"(//===- op_indices.h - The ODS indices of the artifact ops' values -*- C++ -*-===//
//
// Generated by `rn-tblgen -gen-rn-op-indices` from the rn dialect's ODS (the
// ops with the RN_ArtifactOp trait): do not edit. The compiler build
// regenerates it and fails when this copy differs; copy the generated file
// over it (the failure names both paths).
//
// Per op, namespaces `operand` and `result` whose constants name the indices
// in ODS order (op_table::cbr_backward::operand::relu_output); op_table.h,
// the op contract, includes it.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_OP_INDICES_H
#define RN_RUNTIME_CORE_OP_INDICES_H

#include <cstddef>

namespace rn::op_table {

)";
  for (const llvm::Record *def : artifactOps(records)) {
    Operator op(def);
    std::string name = op.getOperationName();
    llvm::StringRef mnemonic = llvm::StringRef(name).drop_front(3); // "rn."
    os << "namespace " << mnemonic << " {\n";
    emitRoleIndices(os, "operand", operandsOf(op));
    emitRoleIndices(os, "result", resultsOf(op));
    os << "} // namespace " << mnemonic << "\n\n";
  }
  os << R"(} // namespace rn::op_table

#endif // RN_RUNTIME_CORE_OP_INDICES_H
)";
  return false;
}

bool emitOpTable(const llvm::RecordKeeper &records, llvm::raw_ostream &os) {
  const std::vector<const llvm::Record *> defs = artifactOps(records);

  os << R"(//===- op_table.h - The ops an artifact may hold ----------------*- C++ -*-===//
//
// Generated by `rn-tblgen -gen-rn-op-table` from the rn dialect's ODS (the
// ops with the RN_ArtifactOp trait): do not edit. The compiler build
// regenerates it and fails when this copy differs; copy the generated file
// over it (the failure names both paths).
//
// For each op: its operands and results by ODS name, in ODS order, with
// their arity, and its attributes with their kind and whether a node must
// carry them. The constants that name each op's operand and result indices
// (op_table::cbr_backward::operand::relu_output) are in op_indices.h,
// included here.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_OP_TABLE_H
#define RN_RUNTIME_CORE_OP_TABLE_H

#include "runtime/core/op_indices.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rn::op_table {

enum class Arity : uint8_t { one, optional, variadic };

/// How the attribute reads in the artifact's JSON.
enum class AttrKind : uint8_t {
  flag,        ///< a unit attribute: true when present
  boolean,     ///< true or false
  integer,     ///< an integral number
  real,        ///< a number
  integers,    ///< an array of integral numbers
  string,      ///< a string
  enumeration, ///< a string naming an enum case
  symbol,      ///< a string naming a symbol
  other,       ///< printed MLIR attribute text
};

struct Value {
  std::string_view name;
  Arity arity;
};

struct Attr {
  std::string_view name;
  AttrKind kind;
  bool required;
};

struct Op {
  std::string_view name; ///< without "rn."
  const Value *operands;
  size_t numOperands;
  const Value *results;
  size_t numResults;
  const Attr *attributes;
  size_t numAttributes;
};

)";

  for (const llvm::Record *def : defs) {
    Operator op(def);
    std::string name = op.getOperationName();
    llvm::StringRef mnemonic = llvm::StringRef(name).drop_front(3); // "rn."
    os << "// rn." << mnemonic << "\n";
    emitValues(os, tableName(mnemonic, "Operands"), operandsOf(op));
    emitValues(os, tableName(mnemonic, "Results"), resultsOf(op));
    std::vector<const NamedAttribute *> attributes;
    for (const NamedAttribute &attr : op.getAttributes())
      if (!attr.attr.isDerivedAttr())
        attributes.push_back(&attr);
    if (!attributes.empty()) {
      os << "inline constexpr Attr " << tableName(mnemonic, "Attributes")
         << "[] = {\n";
      for (const NamedAttribute *attr : attributes)
        os << llvm::formatv("    {{\"{0}\", {1}, {2}},\n", attr->name,
                            attrKind(attr->attr),
                            attrRequired(attr->attr) ? "true" : "false");
      os << "};\n";
    }
    os << "\n";
  }

  os << "inline constexpr Op kOps[] = {\n";
  for (const llvm::Record *def : defs) {
    Operator op(def);
    std::string name = op.getOperationName();
    llvm::StringRef mnemonic = llvm::StringRef(name).drop_front(3);
    auto table = [&](llvm::StringRef suffix, int count) {
      return count ? llvm::formatv("{0}, {1}", tableName(mnemonic, suffix),
                                   count)
                         .str()
                   : std::string("nullptr, 0");
    };
    int attributes = llvm::count_if(op.getAttributes(), [](const auto &attr) {
      return !attr.attr.isDerivedAttr();
    });
    os << llvm::formatv("    {{\"{0}\", {1}, {2}, {3}},\n", mnemonic,
                        table("Operands", op.getNumOperands()),
                        table("Results", op.getNumResults()),
                        table("Attributes", attributes));
  }
  os << "};\n\n";
  os << R"(/// The op named `name` ("conv2d"), or null.
constexpr const Op *findOp(std::string_view name) {
  for (const Op &op : kOps)
    if (op.name == name)
      return &op;
  return nullptr;
}

} // namespace rn::op_table

#endif // RN_RUNTIME_CORE_OP_TABLE_H
)";
  return false;
}

mlir::GenRegistration genOpIndices("gen-rn-op-indices",
                                   "Generate the runtime's names of the artifact "
                                   "ops' operand and result indices",
                                   emitOpIndices);

mlir::GenRegistration genOpTable("gen-rn-op-table",
                                 "Generate the runtime's op table (the "
                                 "compiler -> runtime op contract)",
                                 emitOpTable);

} // namespace

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
