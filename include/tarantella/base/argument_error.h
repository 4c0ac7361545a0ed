// A mistake in an argument the caller passed (a value out of range, a name
// that is not known), as opposed to a failure while running. It is a
// tnt::Error, so C++ callers that catch tnt::Error are unchanged; the Python
// front end raises it as ValueError, the standard library's class for such
// mistakes (tnt.Error stays for runtime and distributed failures).
#pragma once

#include <string>

#include <tarantella/base/error.h>

namespace tnt {

/// Raised for an invalid argument value; the message names the argument,
/// the value and the fix.
///
/// Example:
///   TNT_CHECK_ARG(epochs > 0, "fit(): epochs=", epochs, " must be positive");
class ArgumentError : public Error {
 public:
  using Error::Error;
};

namespace detail {
/// As throw_error, with an ArgumentError.
[[noreturn]] void throw_argument_error(const std::string& message);
}  // namespace detail
}  // namespace tnt

/// Throws tnt::ArgumentError with the streamed message parts when `cond` is false.
#define TNT_CHECK_ARG(cond, ...)                                               \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ::tnt::detail::throw_argument_error(::tnt::detail::concat(__VA_ARGS__)); \
    }                                                                          \
  } while (false)
