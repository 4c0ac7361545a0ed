// One style for every public options struct, after LibTorch's TORCH_ARG: a
// private field, a chainable setter and a getter of the same name.
//
// Example:
//   struct FitOptions {
//     TNT_ARG(std::int64_t, epochs) = 1;
//   };
//   auto o = tnt::FitOptions().epochs(5);   // setter, chainable
//   o.epochs();                             // getter: 5
#pragma once

#include <utility>

#define TNT_ARG(T, name)                                                 \
 public:                                                                 \
  inline auto name(const T& new_##name)->decltype(*this) { /* NOLINT */ \
    this->name##_ = new_##name;                                          \
    return *this;                                                        \
  }                                                                      \
  inline auto name(T&& new_##name)->decltype(*this) { /* NOLINT */      \
    this->name##_ = std::move(new_##name);                               \
    return *this;                                                        \
  }                                                                      \
  inline const T& name() const noexcept { /* NOLINT */                  \
    return this->name##_;                                                \
  }                                                                      \
  inline T& name() noexcept { /* NOLINT */                              \
    return this->name##_;                                                \
  }                                                                      \
                                                                         \
 private:                                                                \
  T name##_ /* NOLINT */
