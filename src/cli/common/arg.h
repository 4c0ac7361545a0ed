// Chainable option setters for the launcher's plain-data structs.
//
// LaunchOptions and NodeFacts have many fields; tests and the parser build
// them field by field, so each field gets a setter that returns *this (as in
// the PyTorch C++ frontend's TORCH_ARG) and a const getter.
#pragma once

/// Declares a private member `name_` of type T with a chainable setter
/// `name(value)` and a getter `name()`. Append a default: `TNT_CLI_ARG(int, n) = 1;`
#define TNT_CLI_ARG(T, name)                         \
 public:                                             \
  auto name(const T& new_##name)->decltype(*this) {  \
    name##_ = new_##name;                            \
    return *this;                                    \
  }                                                  \
  const T& name() const noexcept { return name##_; } \
                                                     \
 private:                                            \
  T name##_
