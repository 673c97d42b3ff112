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
// -gen-rn-op-kinds: `enum class OpKind` with one value per op, in the op
// table's order, its names both ways and the op count (op_kinds.h, which
// op_table.h includes), so that the runtime's tables key ops by kind.
// -gen-rn-op-attrs: per op, `struct attrs` with one typed reader per ODS
// attribute (`op_table::dropout_train::attrs::p(node)` is a double), and
// the enums of enum attributes (op_attrs.h).
//
// A new RN_ArtifactOp op gets all of these from its ODS. The runtime-only
// builds have no TableGen: the headers are checked in (runtime/core/) and
// the compiler build regenerates them and fails when they differ
// (cmake/CheckGenerated.cmake).
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/EnumInfo.h"
#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
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

/// The enum an enum attribute (or an optional or default-valued one) takes
/// its cases from, or null.
const llvm::Record *enumOf(const tblgen::Attribute &attr) {
  if (attr.isEnumAttr())
    return &attr.getDef();
  tblgen::Attribute base = attr.getBaseAttr();
  return base.isEnumAttr() ? &base.getDef() : nullptr;
}

/// How an attribute reads in the artifact's JSON (rn-compile's
/// attributeJson): the AttrKind enumerator from its storage type.
std::string attrKindName(const tblgen::Attribute &attr) {
  if (enumOf(attr))
    return "enumeration";
  llvm::StringRef storage = attr.getStorageType();
  if (storage == "::mlir::UnitAttr")
    return "flag";
  if (storage == "::mlir::BoolAttr")
    return "boolean";
  if (storage == "::mlir::IntegerAttr")
    return "integer";
  if (storage == "::mlir::FloatAttr")
    return "real";
  if (storage == "::mlir::DenseI64ArrayAttr" ||
      storage == "::mlir::DenseI32ArrayAttr")
    return "integers";
  if (storage == "::mlir::StringAttr")
    return "string";
  if (attr.isSymbolRefAttr())
    return "symbol";
  return "other";
}
std::string attrKind(const tblgen::Attribute &attr) {
  return "AttrKind::" + attrKindName(attr);
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
// For each op: its kind (op_kinds.h, included here), its operands and
// results by ODS name, in ODS order, with their arity, and its attributes
// with their kind and whether a node must carry them. kOps lists the ops in
// OpKind order. The constants that name each op's operand and result
// indices (op_table::cbr_backward::operand::relu_output) are in
// op_indices.h, included here; the typed readers of the attributes are in
// op_attrs.h.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_OP_TABLE_H
#define RN_RUNTIME_CORE_OP_TABLE_H

#include "runtime/core/op_indices.h"
#include "runtime/core/op_kinds.h"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
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
  enumeration, ///< an enum case: its name, or its value (an I32EnumAttr's)
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
  OpKind kind;
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
    os << llvm::formatv("    {{OpKind::{0}, \"{0}\", {1}, {2}, {3}},\n", mnemonic,
                        table("Operands", op.getNumOperands()),
                        table("Results", op.getNumResults()),
                        table("Attributes", attributes));
  }
  os << "};\n";
  os << R"(static_assert(std::size(kOps) == kNumOpKinds);

/// The entry of the op of kind `kind`.
constexpr const Op &entry(OpKind kind) { return kOps[static_cast<size_t>(kind)]; }

/// The op named `name` ("conv2d"), or null.
constexpr const Op *findOp(std::string_view name) {
  std::optional<OpKind> kind = opKindOf(name);
  return kind ? &entry(*kind) : nullptr;
}

} // namespace rn::op_table

#endif // RN_RUNTIME_CORE_OP_TABLE_H
)";
  return false;
}

bool emitOpKinds(const llvm::RecordKeeper &records, llvm::raw_ostream &os) {
  const std::vector<const llvm::Record *> defs = artifactOps(records);
  os << R"(//===- op_kinds.h - The kinds of the ops an artifact may hold ---*- C++ -*-===//
//
// Generated by `rn-tblgen -gen-rn-op-kinds` from the rn dialect's ODS (the
// ops with the RN_ArtifactOp trait): do not edit. The compiler build
// regenerates it and fails when this copy differs; copy the generated file
// over it (the failure names both paths).
//
// OpKind names each op an artifact may hold, in the op table's order (by
// name): op_table::kOps[size_t(kind)] is its entry (op_table.h, which
// includes this). The runtime's tables (the registry's verifiers, the CPU
// kernels, the GPU launchers) are keyed by it; a node's kind is resolved
// from its name once, when it is loaded.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_OP_KINDS_H
#define RN_RUNTIME_CORE_OP_KINDS_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rn {

enum class OpKind : uint16_t {
)";
  for (const llvm::Record *def : defs)
    os << "  " << llvm::StringRef(Operator(def).getOperationName()).drop_front(3)
       << ",\n";
  os << "};\n\n/// How many ops an artifact may hold.\n";
  os << "inline constexpr size_t kNumOpKinds = " << defs.size() << ";\n\n";
  os << "namespace op_table::detail {\n"
     << "/// The names, sorted (opKindOf searches them).\n"
     << "inline constexpr std::string_view kOpNames[kNumOpKinds] = {\n";
  for (const llvm::Record *def : defs)
    os << "    \"" << llvm::StringRef(Operator(def).getOperationName()).drop_front(3)
       << "\",\n";
  os << R"(};
} // namespace op_table::detail

/// The op's name without "rn." ("conv2d").
constexpr std::string_view opName(OpKind kind) {
  return op_table::detail::kOpNames[static_cast<size_t>(kind)];
}

/// The kind of the op named `name` ("conv2d"), or nullopt for a name that
/// is not an artifact op.
constexpr std::optional<OpKind> opKindOf(std::string_view name) {
  size_t low = 0, high = kNumOpKinds;
  while (low < high) {
    const size_t middle = low + (high - low) / 2;
    if (op_table::detail::kOpNames[middle] < name)
      low = middle + 1;
    else
      high = middle;
  }
  if (low < kNumOpKinds && op_table::detail::kOpNames[low] == name)
    return static_cast<OpKind>(low);
  return std::nullopt;
}

} // namespace rn

#endif // RN_RUNTIME_CORE_OP_KINDS_H
)";
  return false;
}

/// C++ keywords an ODS name may collide with: such a reader gets a
/// trailing underscore.
bool isCppKeyword(llvm::StringRef name) {
  static const llvm::StringSet<> keywords = {
      "alignas", "alignof", "and", "auto", "bool", "break", "case", "catch", "char",
      "class", "const", "continue", "default", "delete", "do", "double", "else", "enum",
      "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if",
      "inline", "int", "long", "mutable", "namespace", "new", "not", "operator", "or",
      "private", "protected", "public", "register", "return", "short", "signed", "sizeof",
      "static", "struct", "switch", "template", "this", "throw", "true", "try", "typedef",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while"};
  return keywords.contains(name);
}
std::string identifier(llvm::StringRef name) {
  return isCppKeyword(name) ? (name + "_").str() : name.str();
}

/// What op_attrs.h emits for one attribute of one op.
struct AttrReader {
  std::string name;   ///< the ODS (and JSON) name
  std::string type;   ///< the C++ type a present value reads as
  std::string read;   ///< the detail:: call giving std::optional<type>
  bool optional;      ///< OptionalAttr without a default: returns std::optional
  bool takesAbsent;   ///< a scalar: the reader takes the value of an absent one
  std::string absent; ///< what an absent (or mistyped) one reads as
};

/// `text` (an ODS default value, C++) as the literal of `kind`, or nullopt.
std::optional<std::string> defaultLiteral(llvm::StringRef text, llvm::StringRef kind,
                                          const std::optional<tblgen::EnumInfo> &info) {
  text = text.trim();
  if (kind == "real") {
    double value;
    if (!llvm::StringRef(text).rtrim("fF").getAsDouble(value))
      return text.str();
  } else if (kind == "integer") {
    int64_t value;
    if (!text.getAsInteger(0, value))
      return text.str();
  } else if (kind == "boolean" || kind == "flag") {
    if (text == "true" || text == "false")
      return text.str();
  } else if (kind == "integers") {
    if (text.consume_front("{") && text.consume_back("}")) {
      llvm::SmallVector<llvm::StringRef> parts;
      text.split(parts, ',', -1, /*KeepEmpty=*/false);
      std::string list;
      for (llvm::StringRef part : parts) {
        int64_t value;
        if (part.trim().getAsInteger(0, value))
          return std::nullopt;
        list += (list.empty() ? "" : ", ") + part.trim().str();
      }
      return "std::vector<int64_t>{" + list + "}";
    }
  } else if (kind == "enumeration") {
    llvm::StringRef symbol = text.rsplit("::").second.empty() ? text : text.rsplit("::").second;
    for (const tblgen::EnumCase &c : info->getAllCases())
      if (c.getSymbol() == symbol)
        return (info->getEnumClassName() + "::" + identifier(symbol)).str();
  } else if (text.size() >= 2 && text.starts_with("\"") && text.ends_with("\"")) {
    return text.str(); // string, symbol, other: a C++ string literal
  }
  return std::nullopt;
}

AttrReader readerOf(const Operator &op, const NamedAttribute &named) {
  const tblgen::Attribute &attr = named.attr;
  const std::string kind = attrKindName(attr);
  std::optional<tblgen::EnumInfo> info;
  if (const llvm::Record *def = enumOf(attr))
    info.emplace(def);
  AttrReader r;
  r.name = named.name.str();
  r.optional = attr.isOptional() && !attr.hasDefaultValue() && kind != "flag";
  r.takesAbsent = kind != "flag" && kind != "integers";
  static const std::map<std::string, std::pair<std::string, std::string>> types = {
      {"flag", {"bool", "boolean"}},
      {"boolean", {"bool", "boolean"}},
      {"integer", {"int64_t", "integer"}},
      {"real", {"double", "real"}},
      {"integers", {"std::vector<int64_t>", "integers"}},
      {"string", {"std::string_view", "text"}},
      {"symbol", {"std::string_view", "text"}},
      {"other", {"std::string_view", "text"}},
  };
  if (info) {
    r.type = info->getEnumClassName().str();
    r.read = llvm::formatv("detail::enumeration(node, \"{0}\", k{1}Cases)", r.name, r.type);
  } else {
    r.type = types.at(kind).first;
    r.read = llvm::formatv("detail::{0}(node, \"{1}\")", types.at(kind).second, r.name);
  }
  if (attr.hasDefaultValue()) {
    std::optional<std::string> literal = defaultLiteral(attr.getDefaultValue(), kind, info);
    if (!literal)
      llvm::PrintFatalError(op.getLoc(),
                            "rn-tblgen: cannot read the default `" + attr.getDefaultValue() +
                                "` of attribute '" + r.name + "' of " + op.getOperationName() +
                                " as a " + kind + " for the runtime (op_attrs.h)");
    r.absent = *literal;
  } else if (info) {
    const std::vector<tblgen::EnumCase> cases = info->getAllCases();
    if (cases.empty())
      llvm::PrintFatalError(op.getLoc(), "rn-tblgen: enum " + r.type + " has no cases");
    r.absent = r.type + "::" + identifier(cases.front().getSymbol());
  } else {
    static const std::map<std::string, std::string> zeros = {
        {"flag", "false"}, {"boolean", "false"}, {"integer", "0"}, {"real", "0"},
        {"integers", "std::vector<int64_t>{}"}, {"string", "\"\""}, {"symbol", "\"\""},
        {"other", "\"\""}};
    r.absent = zeros.at(kind);
  }
  return r;
}

bool emitOpAttrs(const llvm::RecordKeeper &records, llvm::raw_ostream &os) {
  const std::vector<const llvm::Record *> defs = artifactOps(records);
  os << R"(//===- op_attrs.h - Typed readers of the artifact ops' attributes -*- C++ -*-===//
//
// Generated by `rn-tblgen -gen-rn-op-attrs` from the rn dialect's ODS (the
// ops with the RN_ArtifactOp trait): do not edit. The compiler build
// regenerates it and fails when this copy differs; copy the generated file
// over it (the failure names both paths).
//
// For each op with attributes, `op_table::<op>::attrs` has one static
// reader per ODS attribute, typed by its kind (op_table.h's AttrKind):
//
//   flag (UnitAttr)           bool, false when absent
//   boolean                   bool
//   integer                   int64_t
//   real                      double
//   integers (an array attr)  std::vector<int64_t>, empty when absent; and
//                             NAME_pair(node, otherwise): a (height, width)
//                             pair read without allocating, `otherwise`
//                             unless it holds two integers
//   enumeration               the enum below (the case by name or value)
//   string, symbol, other     std::string_view into the node's JSON
//
// An OptionalAttr reads as std::optional of its type; a DefaultValuedAttr
// reads as its ODS default when absent. A scalar reader takes the value an
// absent attribute reads as, by default 0 (false, the first enum case):
// the loader holds every node to its op's attribute kinds (checkAttributes,
// op_registry.h), so a loaded node always carries its required attributes;
// the argument serves nodes built by hand. A mistyped attribute reads as
// absent. The structs are types, so code shared by ops with the same
// attributes takes one as a template argument (convolution geometry).
//
//   const double p = op_table::dropout_train::attrs::p(node);
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_OP_ATTRS_H
#define RN_RUNTIME_CORE_OP_ATTRS_H

#include "runtime/core/artifact.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rn::op_table {

namespace detail {

/// The attribute `name` of `node`, or null.
inline const nlohmann::json *attribute(const Node &node, const char *name) {
  auto it = node.attributes.find(name);
  return it == node.attributes.end() ? nullptr : &*it;
}
inline std::optional<bool> boolean(const Node &node, const char *name) {
  const nlohmann::json *value = attribute(node, name);
  return value && value->is_boolean() ? std::optional<bool>(value->get<bool>()) : std::nullopt;
}
inline std::optional<int64_t> integer(const Node &node, const char *name) {
  const nlohmann::json *value = attribute(node, name);
  return value && value->is_number_integer() ? std::optional<int64_t>(value->get<int64_t>())
                                             : std::nullopt;
}
inline std::optional<double> real(const Node &node, const char *name) {
  const nlohmann::json *value = attribute(node, name);
  return value && value->is_number() ? std::optional<double>(value->get<double>()) : std::nullopt;
}
inline std::optional<std::vector<int64_t>> integers(const Node &node, const char *name) {
  const nlohmann::json *value = attribute(node, name);
  if (!value || !value->is_array())
    return std::nullopt;
  std::vector<int64_t> result;
  for (const nlohmann::json &element : *value) {
    if (!element.is_number_integer())
      return std::nullopt;
    result.push_back(element.get<int64_t>());
  }
  return result;
}
/// An integer array attribute of exactly two values (strides, padding, a
/// window) read in place, without the vector integers() builds: what a
/// launch reads every step. nullopt when absent or of another shape.
inline std::optional<std::array<int64_t, 2>> integerPair(const Node &node, const char *name) {
  const nlohmann::json *value = attribute(node, name);
  if (!value || !value->is_array() || value->size() != 2 || !(*value)[0].is_number_integer() ||
      !(*value)[1].is_number_integer())
    return std::nullopt;
  return std::array<int64_t, 2>{(*value)[0].get<int64_t>(), (*value)[1].get<int64_t>()};
}
inline std::optional<std::string_view> text(const Node &node, const char *name) {
  const nlohmann::json *value = attribute(node, name);
  if (!value || !value->is_string())
    return std::nullopt;
  return std::string_view(value->get_ref<const std::string &>());
}
template <class Enum> struct EnumCase {
  std::string_view name;
  Enum value;
};
/// The case named by the attribute or with its value.
template <class Enum, size_t N>
std::optional<Enum> enumeration(const Node &node, const char *name,
                                const EnumCase<Enum> (&cases)[N]) {
  const nlohmann::json *value = attribute(node, name);
  if (!value)
    return std::nullopt;
  for (const EnumCase<Enum> &c : cases)
    if ((value->is_string() && value->get_ref<const std::string &>() == c.name) ||
        (value->is_number_integer() && value->get<int64_t>() == static_cast<int64_t>(c.value)))
      return c.value;
  return std::nullopt;
}

} // namespace detail

)";
  // The enums of enum attributes, once each.
  std::set<std::string> enums;
  for (const llvm::Record *def : defs) {
    Operator op(def);
    for (const NamedAttribute &named : op.getAttributes()) {
      const llvm::Record *enumDef = named.attr.isDerivedAttr() ? nullptr : enumOf(named.attr);
      if (!enumDef)
        continue;
      tblgen::EnumInfo info(enumDef);
      std::string name = info.getEnumClassName().str();
      if (!enums.insert(name).second)
        continue;
      os << "/// " << info.getSummary() << "\n";
      os << "enum class " << name << " : int64_t {\n";
      for (const tblgen::EnumCase &c : info.getAllCases())
        os << "  " << identifier(c.getSymbol()) << " = " << c.getValue() << ",\n";
      os << "};\n";
      os << "inline constexpr detail::EnumCase<" << name << "> k" << name << "Cases[] = {\n";
      for (const tblgen::EnumCase &c : info.getAllCases())
        os << llvm::formatv("    {{\"{0}\", {1}::{2}},\n", c.getStr(), name,
                            identifier(c.getSymbol()));
      os << "};\n\n";
    }
  }
  for (const llvm::Record *def : defs) {
    Operator op(def);
    std::vector<AttrReader> readers;
    for (const NamedAttribute &named : op.getAttributes())
      if (!named.attr.isDerivedAttr())
        readers.push_back(readerOf(op, named));
    if (readers.empty())
      continue;
    const std::string name = op.getOperationName();
    llvm::StringRef mnemonic = llvm::StringRef(name).drop_front(3); // "rn."
    os << "namespace " << mnemonic << " {\nstruct attrs {\n";
    for (const AttrReader &r : readers) {
      const std::string reader = identifier(r.name);
      if (r.optional)
        os << llvm::formatv("  static std::optional<{0}> {1}(const Node &node) {{\n"
                            "    return {2};\n  }\n",
                            r.type, reader, r.read);
      else if (r.takesAbsent)
        os << llvm::formatv("  static {0} {1}(const Node &node, {0} absent = {2}) {{\n"
                            "    return {3}.value_or(absent);\n  }\n",
                            r.type, reader, r.absent, r.read);
      else
        os << llvm::formatv("  static {0} {1}(const Node &node) {{\n"
                            "    return {2}.value_or({3});\n  }\n",
                            r.type, reader, r.read, r.absent);
      if (r.type == "std::vector<int64_t>" && !r.optional)
        os << llvm::formatv("  static std::array<int64_t, 2> {0}_pair(const Node &node,\n"
                            "      std::array<int64_t, 2> otherwise) {{\n"
                            "    return detail::integerPair(node, \"{1}\").value_or(otherwise);\n"
                            "  }\n",
                            reader, r.name);
    }
    os << "};\n} // namespace " << mnemonic << "\n\n";
  }
  os << R"(} // namespace rn::op_table

#endif // RN_RUNTIME_CORE_OP_ATTRS_H
)";
  return false;
}

mlir::GenRegistration genOpIndices("gen-rn-op-indices",
                                   "Generate the runtime's names of the artifact "
                                   "ops' operand and result indices",
                                   emitOpIndices);

mlir::GenRegistration genOpKinds("gen-rn-op-kinds",
                                 "Generate the runtime's OpKind enum of the artifact ops",
                                 emitOpKinds);

mlir::GenRegistration genOpAttrs("gen-rn-op-attrs",
                                 "Generate the runtime's typed readers of the artifact ops' "
                                 "attributes",
                                 emitOpAttrs);

mlir::GenRegistration genOpTable("gen-rn-op-table",
                                 "Generate the runtime's op table (the "
                                 "compiler -> runtime op contract)",
                                 emitOpTable);

} // namespace

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
