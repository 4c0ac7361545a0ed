// micro_batches_of and forward_on_stage (stage_forward.h).
#include "train/step/stage_forward.h"

#include <algorithm>

#include "data/pipeline/nodes.h"

namespace tnt::train {

std::vector<data::MicroBatch> micro_batches_of(const data::MicroBatch& mb, int micro_batches) {
  if (micro_batches <= 1) return {mb};
  const auto parts = static_cast<int>(std::min<std::int64_t>(micro_batches, mb.local_size));
  std::vector<data::MicroBatch> out;
  for (int i = 0; i < parts; ++i) {
    const auto [lo, hi] = data::detail::share_range(mb.local_size, parts, i, 1);
    data::MicroBatch part;
    for (const torch::Tensor& t : mb.tensors) part.tensors.push_back(t.narrow(0, lo, hi - lo));
    part.local_size = hi - lo;
    part.global_size = mb.global_size;
    part.step = mb.step;
    out.push_back(std::move(part));
  }
  return out;
}

StageForward forward_on_stage(const StepModel& model, StageLink* link,
                              const data::MicroBatch& part, int micro, bool training) {
  StageForward out;
  if (link == nullptr) {
    out.began = Clock::now();
    out.output = model.forward(part.tensors);
    return out;
  }
  data::Element element = part.tensors;
  if (!link->layout().first_stage()) {
    out.input = link->recv_activation(micro, part.local_size);
    if (training) out.input.requires_grad_(true);
    element.at(0) = out.input;
  }
  out.began = Clock::now();
  out.output = model.forward(element);
  if (!link->layout().last_stage()) link->send_activation(out.output, micro, part.local_size);
  return out;
}

}  // namespace tnt::train
