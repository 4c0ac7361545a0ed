// This rank's share of the current global batch, as a distributed loader
// hands it out: the loader writes it when it yields a batch, and a
// DistributedOptimizer reads it when the batch's first gradient arrives, to
// weight this rank's gradient by n_r / B (exact also for a short last batch
// split unevenly).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace tnt::data {

/// Example:
///   auto share = loader->share();        // std::shared_ptr<const BatchShare>
///   auto [local, global] = share->get(); // this rank's samples, the batch's
class BatchShare {
 public:
  /// The global size of a batch whose dataset skips bad samples: known only
  /// as the sum of the ranks' local sizes.
  static constexpr std::int64_t kUnknownGlobal = -1;
  void set(std::int64_t local, std::int64_t global) {
    local_.store(local);
    global_.store(global);
  }
  /// {samples on this rank, samples in the global batch}; {0, 0} before
  /// the first batch.
  std::pair<std::int64_t, std::int64_t> get() const { return {local_.load(), global_.load()}; }

 private:
  std::atomic<std::int64_t> local_{0};
  std::atomic<std::int64_t> global_{0};
};

}  // namespace tnt::data
