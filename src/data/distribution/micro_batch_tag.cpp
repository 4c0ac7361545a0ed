#include <torch/torch.h>

#include <tarantella/base/error.h>

#include "data/distribution/micro_batch.h"
#include "data/pipeline/element_ops.h"

namespace tnt::data::detail {

void attach_global_size(Element& micro_batch, std::int64_t global_size) {
  micro_batch.push_back(torch::scalar_tensor(global_size, torch::kInt64));
}

std::int64_t detach_global_size(Element& micro_batch) {
  TNT_CHECK(!micro_batch.empty() && micro_batch.back().dim() == 0 &&
                micro_batch.back().scalar_type() == torch::kInt64,
            "internal error: a micro-batch lost its global batch size");
  const std::int64_t size = micro_batch.back().item<std::int64_t>();
  micro_batch.pop_back();
  return size;
}

MapFunction on_micro_batch(MapFunction fn) {
  return [fn = std::move(fn)](Element e) {
    const torch::Tensor tag = e.back();
    e.pop_back();
    Element out = is_dropped(e) ? e : fn(std::move(e));  // every sample was dropped
    out.push_back(tag);
    return out;
  };
}

}  // namespace tnt::data::detail
