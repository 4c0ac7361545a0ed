#include <tarantella/base/default_seed.h>

#include <atomic>

namespace tnt {
namespace {
std::atomic<std::uint64_t> g_default_shuffle_seed{kDefaultShuffleSeed};
}  // namespace

std::uint64_t default_shuffle_seed() { return g_default_shuffle_seed.load(); }
void set_default_shuffle_seed(std::uint64_t seed) { g_default_shuffle_seed.store(seed); }

}  // namespace tnt
