// The process-wide default seed of Tarantella's own random choices (today:
// Dataset::shuffle without a seed). It lives at the ground floor so that
// tnt::set_seed (runtime/) can set it and the data pipeline (data/) can read
// it without either knowing the other. Readers read it when they use it, not
// when they are built: a dataset built before tnt::set_seed follows it.
#pragma once

#include <cstdint>

namespace tnt {

/// The seed used when Dataset::shuffle is given none, so that every rank
/// (and every run) shuffles the same way; tnt::set_seed replaces it.
constexpr std::uint64_t kDefaultShuffleSeed = 0x7a7a2e11a5eedULL;

/// The current default seed (kDefaultShuffleSeed until set).
std::uint64_t default_shuffle_seed();
/// Sets the default seed for every use from now on, including datasets
/// built earlier (they read it at each pass).
void set_default_shuffle_seed(std::uint64_t seed);

}  // namespace tnt
