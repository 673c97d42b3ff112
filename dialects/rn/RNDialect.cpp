//===- RNDialect.cpp - The rn dialect and its attributes ------------------===//

#include "dialects/rn/RNDialect.h"
#include "dialects/rn/RNOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rn;

#include "dialects/rn/RNDialect.cpp.inc"
#include "dialects/rn/RNEnums.cpp.inc"
#include "dialects/rn/RNInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/rn/RNAttrs.cpp.inc"

void RNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/rn/RNOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/rn/RNAttrs.cpp.inc"
      >();
}

std::optional<uint64_t> mlir::rn::getStorageBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return std::nullopt;
  uint64_t elementBytes =
      std::max<uint64_t>(1, tensor.getElementTypeBitWidth() / 8);
  return elementBytes * tensor.getNumElements();
}

/// A slot must hold its value.
static LogicalResult verifySlotHolds(Operation *op, Attribute attr, Type type,
                                     const llvm::Twine &what) {
  auto slot = dyn_cast<SlotAttr>(attr);
  if (!slot)
    return op->emitError() << what << " must be an #rn.slot, got " << attr;
  std::optional<uint64_t> bytes = getStorageBytes(type);
  if (bytes && slot.getSize() < *bytes)
    return op->emitError() << what << " " << slot << " holds "
                           << slot.getSize() << " bytes but the value ("
                           << type << ") needs " << *bytes;
  return success();
}

LogicalResult RNDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  Attribute value = attribute.getValue();
  if (name == kModelNameAttr || name == kTrainingAttr) {
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << name
                             << "' belongs on the top-level module";
    if (name == kModelNameAttr && !isa<StringAttr>(value))
      return op->emitError() << "'" << name
                             << "' must be a string naming the model";
    if (name == kTrainingAttr && !isa<DictionaryAttr>(value))
      return op->emitError() << "'" << name
                             << "' must be a dictionary of training options";
    return success();
  }
  if (name == kSubgraphAttr) {
    auto symbol = dyn_cast<FlatSymbolRefAttr>(value);
    if (!symbol)
      return op->emitError() << "'" << name << "' must name an rn.subgraph";
    auto subgraph = SymbolTable::lookupNearestSymbolFrom<SubgraphOp>(op, symbol);
    if (!subgraph)
      return op->emitError() << "'" << name << "' names " << symbol
                             << ", which is not an rn.subgraph";
    auto function = op->getParentOfType<func::FuncOp>();
    if (!function || function.getSymName() != subgraph.getFunction())
      return op->emitError() << "op is in subgraph " << symbol
                             << " of @" << subgraph.getFunction()
                             << " but not in that function";
    return success();
  }
  if (name == kBucketAttr) {
    auto index = dyn_cast<IntegerAttr>(value);
    if (!index || index.getInt() < 0)
      return op->emitError() << "'" << name << "' must be a non-negative bucket index";
    if (!isa<AllReduceMeanOp, CastOp, MultiCastOp>(op))
      return op->emitError() << "'" << name
                             << "' belongs on an all-reduce bucket or its casts";
    return success();
  }
  if (name == kStreamAttr) {
    if (!isa<StreamKindAttr>(value))
      return op->emitError() << "'" << name << "' must be an #rn.stream";
    return success();
  }
  if (name == kStreamMapAttr) {
    auto map = dyn_cast<DictionaryAttr>(value);
    if (!map || !llvm::all_of(map, [](NamedAttribute entry) {
          return isa<StreamKindAttr>(entry.getValue());
        }))
      return op->emitError() << "'" << name
                             << "' must map result names to #rn.stream";
    return success();
  }
  if (name == kPartWaitsAttr) {
    auto pairs = dyn_cast<DenseI64ArrayAttr>(value);
    auto forking = dyn_cast<ForkingOpInterface>(op);
    if (!forking)
      return op->emitError() << "'" << name << "' belongs on a forking op";
    int64_t numParts = forking.getForkParts().size();
    if (!pairs || pairs.size() % 2 != 0)
      return op->emitError() << "'" << name
                             << "' must hold (from, to) pairs of part indices";
    for (int64_t i = 0; i < pairs.size(); i += 2)
      if (pairs[i] < 0 || pairs[i] >= pairs[i + 1] || pairs[i + 1] >= numParts)
        return op->emitError()
               << "'" << name << "' pair (" << pairs[i] << ", " << pairs[i + 1]
               << ") must order an earlier part before a later one of the "
               << numParts << " parts";
    return success();
  }
  if (name == kSlotsAttr) {
    auto slots = dyn_cast<ArrayAttr>(value);
    if (!slots || slots.size() != op->getNumResults())
      return op->emitError() << "'" << name << "' must hold one #rn.slot per "
                             << "result (" << op->getNumResults() << ")";
    for (auto [index, slot] : llvm::enumerate(slots))
      if (failed(verifySlotHolds(op, slot, op->getResult(index).getType(),
                                 "slot of result #" + llvm::Twine(index))))
        return failure();
    return success();
  }
  return op->emitError() << "unknown rn dialect attribute '" << name << "'";
}

/// Checks an `rn.state = @symbol` binding of a function argument or result:
/// the symbol declares state of exactly this type.
static LogicalResult verifyStateBinding(Operation *op, Attribute binding,
                                        Type valueType, StringRef where) {
  auto symbol = dyn_cast<FlatSymbolRefAttr>(binding);
  if (!symbol)
    return op->emitError() << "'" << kStateAttr << "' on " << where
                           << " must name an rn.parameter or rn.state";
  Operation *declaration = SymbolTable::lookupNearestSymbolFrom(op, symbol);
  Type declared = declaration ? getDeclaredStateType(declaration) : Type();
  if (!declared)
    return op->emitError() << where << " is bound to " << symbol
                           << ", which is not an rn.parameter or rn.state";
  if (declared != valueType)
    return op->emitError() << where << " has type " << valueType
                           << " but its state " << symbol << " is "
                           << declared;
  return success();
}

static Type functionValueType(Operation *op, bool isArgument, unsigned index) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return {};
  ArrayRef<Type> types =
      isArgument ? function.getArgumentTypes() : function.getResultTypes();
  return index < types.size() ? types[index] : Type();
}

static LogicalResult verifyFunctionValueAttribute(Operation *op,
                                                  bool isArgument,
                                                  unsigned index,
                                                  NamedAttribute attribute) {
  std::string where = (llvm::Twine(isArgument ? "argument #" : "result #") +
                       llvm::Twine(index))
                          .str();
  StringRef name = attribute.getName().getValue();
  Type type = functionValueType(op, isArgument, index);
  if (name == kStateAttr) {
    if (!type)
      return op->emitError() << "'" << name << "' belongs on a function";
    return verifyStateBinding(op, attribute.getValue(), type, where);
  }
  if (name == kSlotAttr) {
    if (!type)
      return op->emitError() << "'" << name << "' belongs on a function";
    return verifySlotHolds(op, attribute.getValue(), type, "slot of " + where);
  }
  StringRef expectedName = isArgument ? kInputAttr : kOutputAttr;
  if (name == expectedName) {
    if (!isa<StringAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' on " << where
                             << " must be a string";
    return success();
  }
  return op->emitError() << "unknown rn dialect attribute '" << name << "' on "
                         << where;
}

LogicalResult RNDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned argIndex,
                                                  NamedAttribute attribute) {
  return verifyFunctionValueAttribute(op, /*isArgument=*/true, argIndex,
                                      attribute);
}

LogicalResult RNDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                     unsigned resultIndex,
                                                     NamedAttribute attribute) {
  return verifyFunctionValueAttribute(op, /*isArgument=*/false, resultIndex,
                                      attribute);
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

static bool initTakesScale(InitKind kind) {
  return kind == InitKind::uniform || kind == InitKind::normal ||
         kind == InitKind::constant;
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "unknown initializer '" << keyword
                          << "', expected zeros, ones, constant, uniform, normal, "
                             "derived or values";
    return {};
  }
  double scale = 0.0;
  SmallVector<double> values;
  if (succeeded(parser.parseOptionalComma())) {
    if (*kind == InitKind::values) {
      // values: a bracketed list of the elements.
      if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
            return parser.parseFloat(values.emplace_back());
          }))
        return {};
    } else if (parser.parseFloat(scale)) {
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), *kind, llvm::APFloat(scale),
                    values.empty() ? DenseF64ArrayAttr()
                                   : DenseF64ArrayAttr::get(parser.getContext(),
                                                            values));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  if (initTakesScale(getKind())) {
    printer << ", ";
    printer.printFloat(getScale());
  }
  if (getKind() == InitKind::values) {
    printer << ", [";
    llvm::interleaveComma(getElementValues(), printer, [&](double value) {
      printer.printFloat(llvm::APFloat(value));
    });
    printer << "]";
  }
  printer << ">";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, llvm::APFloat scaleValue,
                               DenseF64ArrayAttr valuesAttr) {
  double scale = scaleValue.convertToDouble();
  ArrayRef<double> values =
      valuesAttr ? valuesAttr.asArrayRef() : ArrayRef<double>();
  if ((kind == InitKind::values) != !values.empty())
    return emitError() << (kind == InitKind::values
                               ? "'values' initializer needs a list of values"
                               : "only the 'values' initializer takes a list "
                                 "of values");
  for (double value : values)
    if (!std::isfinite(value))
      return emitError() << "'values' initializer needs finite values, got "
                         << value;
  if (!initTakesScale(kind)) {
    if (scale != 0.0)
      return emitError() << "'" << stringifyInitKind(kind)
                         << "' initializer takes no scale";
    return success();
  }
  if (kind == InitKind::constant) {
    if (!std::isfinite(scale))
      return emitError() << "'constant' initializer needs a finite value, got "
                         << scale;
    return success();
  }
  if (!std::isfinite(scale) || scale <= 0.0)
    return emitError() << "'" << stringifyInitKind(kind)
                       << "' initializer needs a positive finite "
                       << (kind == InitKind::uniform ? "bound" : "std")
                       << ", got " << scale;
  return success();
}

LogicalResult mlir::rn::verifyInitFits(Operation *op, InitAttr init,
                                       RankedTensorType type) {
  if (init.getKind() == InitKind::values &&
      int64_t(init.getElementValues().size()) != type.getNumElements())
    return op->emitOpError("'values' initializer gives ")
           << init.getElementValues().size() << " values for " << type << " ("
           << type.getNumElements() << " elements)";
  return success();
}
