//===- RNDialect.cpp - The rn dialect and its attributes ------------------===//

#include "dialects/rn/RNDialect.h"
#include "dialects/rn/RNOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rn;

#include "dialects/rn/RNDialect.cpp.inc"
#include "dialects/rn/RNEnums.cpp.inc"

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

LogicalResult RNDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attribute) {
  if (attribute.getName() == kModelNameAttr) {
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << kModelNameAttr
                             << "' belongs on the top-level module";
    if (!isa<StringAttr>(attribute.getValue()))
      return op->emitError() << "'" << kModelNameAttr
                             << "' must be a string naming the model";
    return success();
  }
  return op->emitError() << "unknown rn dialect attribute '"
                         << attribute.getName().getValue() << "'";
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

static bool initTakesScale(InitKind kind) {
  return kind == InitKind::uniform || kind == InitKind::normal;
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "unknown initializer '" << keyword
                          << "', expected zeros, ones, uniform or normal";
    return {};
  }
  double scale = 0.0;
  if (succeeded(parser.parseOptionalComma()) && parser.parseFloat(scale))
    return {};
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), *kind, llvm::APFloat(scale));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  if (initTakesScale(getKind())) {
    printer << ", ";
    printer.printFloat(getScale());
  }
  printer << ">";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, llvm::APFloat scaleValue) {
  double scale = scaleValue.convertToDouble();
  if (!initTakesScale(kind)) {
    if (scale != 0.0)
      return emitError() << "'" << stringifyInitKind(kind)
                         << "' initializer takes no scale";
    return success();
  }
  if (!std::isfinite(scale) || scale <= 0.0)
    return emitError() << "'" << stringifyInitKind(kind)
                       << "' initializer needs a positive finite "
                       << (kind == InitKind::uniform ? "bound" : "std")
                       << ", got " << scale;
  return success();
}
