// Errors raised by Tarantella. Every failure at the public API is a
// tnt::Error whose message names the bad value, the rank and the fix; the
// TNT_CHECK macro builds such messages without paying for formatting when
// the condition holds.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tnt {

/// The exception type of the Tarantella API.
///
/// Example:
///   try { tnt::comm::allreduce(t); } catch (const tnt::Error& e) { std::cerr << e.what(); }
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message);
};

/// Raised when ranks disagree about a collective (different operation, dtype,
/// element count or root); carries the same message on every rank.
class MismatchError : public Error {
 public:
  using Error::Error;
};

/// Raised when not every rank arrives at a collective within the timeout.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

namespace detail {
/// Prefixes the message with "[tarantella rank R] " when the rank is known.
[[noreturn]] void throw_error(const std::string& message);

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace detail
}  // namespace tnt

/// Throws tnt::Error with the streamed message parts when `cond` is false.
/// Example: TNT_CHECK(n > 0, "batch size ", n, " must be positive: pass at least 1");
#define TNT_CHECK(cond, ...)                                    \
  do {                                                          \
    if (!(cond)) {                                              \
      ::tnt::detail::throw_error(::tnt::detail::concat(__VA_ARGS__)); \
    }                                                           \
  } while (false)
