//===- status_try.h - Early return of an error in the train library -*- C++ -*-===//
//
// RN_RETURN_IF_ERROR (runtime/core/status.h) returns a Status, which a
// function returning Result<T> cannot; RN_TRY returns the error itself,
// which converts to either.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_STATUS_TRY_H
#define RN_RUNTIME_TRAIN_STATUS_TRY_H

#include "runtime/core/status.h"

/// Returns the error of the Status `expr` gives from the enclosing
/// function, which may return a Status or any Result<T>.
#define RN_TRY(expr)                                                                       \
  do {                                                                                     \
    ::rn::Status rn_try_status_ = (expr);                                                  \
    if (!rn_try_status_.ok())                                                              \
      return rn_try_status_.error();                                                       \
  } while (0)

#endif // RN_RUNTIME_TRAIN_STATUS_TRY_H
