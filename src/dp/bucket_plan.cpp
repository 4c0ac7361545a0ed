#include <tarantella/dp/bucket_plan.h>

namespace tnt::dp {

std::vector<Bucket> plan_buckets(const std::vector<torch::Tensor>& params,
                                 std::size_t threshold_bytes) {
  std::vector<Bucket> buckets;
  Bucket current;
  std::size_t current_bytes = 0;
  auto close = [&] {
    if (!current.params.empty()) buckets.push_back(std::move(current));
    current = Bucket{};
    current_bytes = 0;
  };
  for (std::size_t k = params.size(); k-- > 0;) {
    const torch::Tensor& p = params[k];
    if (!current.params.empty() &&
        (p.scalar_type() != current.dtype || p.device() != params[current.params[0]].device())) {
      close();
    }
    if (current.params.empty()) current.dtype = p.scalar_type();
    current.params.push_back(k);
    current.offsets.push_back(current.numel);
    current.numel += p.numel();
    current_bytes += static_cast<std::size_t>(p.numel()) * p.element_size();
    if (current_bytes >= threshold_bytes) close();
  }
  close();
  return buckets;
}

}  // namespace tnt::dp
