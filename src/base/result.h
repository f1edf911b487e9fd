// Result types for operational failures (missing file, unsupported version, no tracefs, no permission).
// In: any fallible stage. Out: a value or an Error {exit code, stable tag, message, hint}.
// Only src/cli/ prints errors (as "error: … / hint: …") and turns codes into the process exit status.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace exitscope {

// sysexits.h codes: the CLI exits with these.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 64;        // EX_USAGE
inline constexpr int kExitDataErr = 65;      // EX_DATAERR
inline constexpr int kExitNoInput = 66;      // EX_NOINPUT
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE
inline constexpr int kExitIoErr = 74;        // EX_IOERR
inline constexpr int kExitNoPerm = 77;       // EX_NOPERM

struct Error {
  int code = kExitSoftware;
  std::string tag;      // stable, greppable: "tracedat.bad-magic"
  std::string message;  // what happened, naming the input
  std::string hint;     // what the user can do about it
};

inline Error MakeError(int code, std::string tag, std::string message, std::string hint = {}) {
  return Error{code, std::move(tag), std::move(message), std::move(hint)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// For operations with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT
  static Status Ok() { return Status(); }
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

}  // namespace exitscope
