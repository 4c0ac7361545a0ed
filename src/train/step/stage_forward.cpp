// micro_batches_of and forward_on_stage (stage_forward.h).
#include "train/step/stage_forward.h"

#include <algorithm>

#include "data/pipeline/nodes.h"
#include "train/step/random_state.h"

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
    if (seed) set_random_state(link->device(), link->recv_generator(micro));
  } else if (seed) {
    seed();
  }
  out.began = Clock::now();
  out.output = training && !link->layout().first_stage() && model.forward_by_layer
                   ? model.forward_by_layer(element, out.layers)
                   : model.forward(element);
  if (!link->layout().last_stage()) {
    link->send_activation(out.output, micro, part.local_size);
    if (seed) link->send_generator(random_state(link->device()), micro);
  }
  return out;
}

namespace {

// The split backward (backward_on_stage): the input's gradient first, sent,
// then the weights'. Returns when the input's gradient was done (sent
// next, then the weights').
Clock::time_point split_backward(StageForward& f, const torch::Tensor& root, const torch::Tensor& root_grad,
                    StageLink& link, int micro) {
  std::vector<torch::Tensor> wanted{f.input};
  std::vector<const LayerOutput*> weighted;  // the layers with weights to train
  for (const LayerOutput& layer : f.layers) {
    const bool trains = std::any_of(layer.parameters.begin(), layer.parameters.end(),
                                    [](const torch::Tensor& p) { return p.requires_grad(); });
    if (trains && layer.output.requires_grad()) {
      wanted.push_back(layer.output);
      weighted.push_back(&layer);
    }
  }
  std::vector<torch::Tensor> grads = torch::autograd::grad(
      {root}, wanted, root_grad.defined() ? std::vector<torch::Tensor>{root_grad}
                                          : std::vector<torch::Tensor>{},
      /*retain_graph=*/true, /*create_graph=*/false, /*allow_unused=*/true);
  const Clock::time_point weights = Clock::now();
  link.send_gradient(grads[0].defined() ? grads[0] : torch::zeros_like(f.input), micro);
  for (std::size_t i = weighted.size(); i-- > 0;) {
    const torch::Tensor& g = grads[i + 1];
    if (!g.defined()) continue;
    std::vector<torch::Tensor> parameters;
    for (const auto& p : weighted[i]->parameters) {
      if (p.requires_grad()) parameters.push_back(p);
    }
    // Only this layer's nodes lie on the paths from its output to its own
    // parameters (no layer shares one: forward_by_layer).
    torch::autograd::backward({weighted[i]->output}, {g}, /*retain_graph=*/true,
                              /*create_graph=*/false, parameters);
  }
  return weights;
}

}  // namespace

StageBackward backward_on_stage(StageForward& f, const torch::Tensor& root, StageLink* link,
                                int micro) {
  StageBackward out;
  out.began = Clock::now();
  torch::Tensor from = root;
  torch::Tensor grad;
  if (link != nullptr && !link->layout().last_stage()) {
    from = f.output;
    grad = link->recv_gradient(f.output, micro);
    out.began = Clock::now();
  }
  if (link != nullptr && !link->layout().first_stage() && !f.layers.empty() && from.defined()) {
    out.weights = split_backward(f, from, grad, *link, micro);
  } else {
    if (from.defined()) {
      torch::autograd::backward({from}, grad.defined() ? std::vector<torch::Tensor>{grad}
                                                        : std::vector<torch::Tensor>{});
    }
    if (link != nullptr && !link->layout().first_stage()) {
      const torch::Tensor& g = f.input.grad();
      link->send_gradient(g.defined() ? g : torch::zeros_like(f.input), micro);
    }
  }
  f.layers.clear();  // the graph is freed with the outputs
  return out;
}

}  // namespace tnt::train
