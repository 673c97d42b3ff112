//===- status.h - Errors without exceptions at the runtime's API -*- C++ -*-===//
//
// The runtime reports failures as values: `Error` carries a message that
// names the place (`function train_step, subgraph DEEP_FWD_BWD, node 17
// (conv2d): ...`), `Result<T>` holds a value or an error and `Status` is a
// result without a value. Implementations may throw internally (nlohmann
// does) but convert at the API boundary.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_STATUS_H
#define RN_RUNTIME_CORE_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace rn {

class Error {
public:
  explicit Error(std::string message) : message_(std::move(message)) {}

  const std::string &message() const { return message_; }

  /// The same error seen from an enclosing place: "context: message".
  Error withContext(std::string_view context) const {
    return Error(std::string(context) + ": " + message_);
  }

private:
  std::string message_;
};

template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T &value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T &value() const & {
    assert(ok());
    return std::get<0>(state_);
  }
  T &&value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  const Error &error() const {
    assert(!ok());
    return std::get<1>(state_);
  }

private:
  std::variant<T, Error> state_;
};

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}
  static Status success() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }

  const Error &error() const {
    assert(!ok());
    return *error_;
  }

private:
  std::optional<Error> error_;
};

} // namespace rn

/// Returns the error of the Status `expr` gives from the enclosing function
/// when it is one; the function may return a Status or any Result<T>.
#define RN_RETURN_IF_ERROR(expr)                                                          \
  do {                                                                                     \
    ::rn::Status rn_status_ = (expr);                                                      \
    if (!rn_status_.ok())                                                                  \
      return rn_status_.error();                                                           \
  } while (0)

#endif // RN_RUNTIME_CORE_STATUS_H
