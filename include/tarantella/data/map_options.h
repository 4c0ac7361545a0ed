// Options of Dataset::map.
#pragma once

namespace tnt::data {

/// How Dataset::map runs its function.
///
/// num_workers > 1 runs the function on that many threads (the caller's
/// thread included) for every group of samples requested at once, e.g. the
/// samples of one batch. Output order is always the input order. The
/// function must then be safe to call concurrently.
///
/// Example:
///   ds.map(decode, tnt::data::MapOptions().num_workers(4));
class MapOptions {
 public:
  MapOptions& num_workers(int n) {
    num_workers_ = n;
    return *this;
  }
  int num_workers() const { return num_workers_; }

 private:
  int num_workers_ = 1;
};

}  // namespace tnt::data
