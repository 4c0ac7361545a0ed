// micro_batches_of and forward_on_stage (stage_forward.h).
#include "train/step/stage_forward.h"

#include <algorithm>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>

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

std::vector<data::MicroBatch> chunks_of(const data::MicroBatch& mb, std::int64_t chunk) {
  std::vector<data::MicroBatch> out;
  for (std::int64_t begin = 0; begin < mb.local_size; begin += chunk) {
    data::MicroBatch part;
    part.local_size = std::min(chunk, mb.local_size - begin);
    for (const auto& t : mb.tensors) part.tensors.push_back(t.narrow(0, begin, part.local_size));
    part.global_size = mb.global_size;
    part.step = mb.step;
    out.push_back(std::move(part));
  }
  return out;
}

namespace {

torch::Tensor generator_state() {
  at::Generator g = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}

void set_generator_state(const torch::Tensor& state) {
  at::Generator g = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(state);
}

}  // namespace

StageForward forward_on_stage(const StepModel& model, StageLink* link,
                              const data::MicroBatch& part, int micro, bool training,
                              const std::function<void()>& seed) {
  StageForward out;
  if (link == nullptr) {
    if (seed) seed();
    out.began = Clock::now();
    out.output = model.forward(part.tensors);
    return out;
  }
  data::Element element = part.tensors;
  if (!link->layout().first_stage()) {
    out.input = link->recv_activation(micro, part.local_size);
    if (training) out.input.requires_grad_(true);
    element.at(0) = out.input;
    if (seed) set_generator_state(link->recv_generator(micro));
  } else if (seed) {
    seed();
  }
  out.began = Clock::now();
  out.output = model.forward(element);
  if (!link->layout().last_stage()) {
    link->send_activation(out.output, micro, part.local_size);
    if (seed) link->send_generator(generator_state(), micro);
  }
  return out;
}

}  // namespace tnt::train
