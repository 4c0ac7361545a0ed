// The in-memory sources: tensor slices, a single element, a range of
// integers and a generator function. All of them offer random access, which
// is what lets batches and micro-batches read only the samples they need.
#include <torch/torch.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>

#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

torch::Tensor index_tensor(const std::vector<std::int64_t>& indices, const torch::Device& device) {
  auto cpu = torch::from_blob(const_cast<std::int64_t*>(indices.data()),
                              {static_cast<std::int64_t>(indices.size())}, torch::kInt64);
  return device.is_cpu() ? cpu : cpu.to(device);
}

class TensorSlicesView final : public Indexed {
 public:
  explicit TensorSlicesView(std::shared_ptr<const Element> tensors)
      : tensors_(std::move(tensors)), rows_(tensors_->front().size(0)) {}
  std::int64_t size() const override { return rows_; }
  Element get(std::int64_t index) override {
    check(index);
    Element out;
    out.reserve(tensors_->size());
    for (const auto& t : *tensors_) out.push_back(t.select(0, index));
    return out;
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    for (std::int64_t i : indices) check(i);
    Element out;
    out.reserve(tensors_->size());
    for (const auto& t : *tensors_)
      out.push_back(t.index_select(0, index_tensor(indices, t.device())));
    return out;
  }

 private:
  void check(std::int64_t index) const {
    TNT_CHECK(index >= 0 && index < rows_, "internal error: tensor slice ", index,
              " out of range 0..", rows_ - 1);
  }
  std::shared_ptr<const Element> tensors_;
  std::int64_t rows_;
};

class TensorSlicesNode final : public Node {
 public:
  explicit TensorSlicesNode(Element tensors)
      : tensors_(std::make_shared<const Element>(std::move(tensors))) {}
  std::string name() const override {
    return "tensor_slices(" + std::to_string(cardinality()) + ")";
  }
  std::int64_t cardinality() const override { return tensors_->front().size(0); }
  bool is_indexed() const override { return true; }
  IndexedPtr indexed(PassKey) const override {
    return std::make_shared<TensorSlicesView>(tensors_);
  }

 private:
  std::shared_ptr<const Element> tensors_;
};

class TensorsView final : public Indexed {
 public:
  explicit TensorsView(std::shared_ptr<const Element> tensors) : tensors_(std::move(tensors)) {}
  std::int64_t size() const override { return 1; }
  Element get(std::int64_t index) override {
    TNT_CHECK(index == 0, "internal error: from_tensors has one element, asked for ", index);
    return *tensors_;
  }

 private:
  std::shared_ptr<const Element> tensors_;
};

class TensorsNode final : public Node {
 public:
  explicit TensorsNode(Element tensors)
      : tensors_(std::make_shared<const Element>(std::move(tensors))) {}
  std::string name() const override { return "tensors"; }
  std::int64_t cardinality() const override { return 1; }
  bool is_indexed() const override { return true; }
  IndexedPtr indexed(PassKey) const override { return std::make_shared<TensorsView>(tensors_); }

 private:
  std::shared_ptr<const Element> tensors_;
};

class RangeView final : public Indexed {
 public:
  RangeView(std::int64_t start, std::int64_t step, std::int64_t size)
      : start_(start), step_(step), size_(size) {}
  std::int64_t size() const override { return size_; }
  Element get(std::int64_t index) override {
    return {torch::scalar_tensor(start_ + index * step_, torch::kInt64)};
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    return {index_tensor(indices, torch::kCPU).mul(step_).add_(start_)};
  }

 private:
  std::int64_t start_, step_, size_;
};

class RangeNode final : public Node {
 public:
  RangeNode(std::int64_t start, std::int64_t stop, std::int64_t step)
      : start_(start), stop_(stop), step_(step) {}
  std::string name() const override {
    return "range(" + std::to_string(start_) + ", " + std::to_string(stop_) + ", " +
           std::to_string(step_) + ")";
  }
  std::int64_t cardinality() const override {
    const std::int64_t span = step_ > 0 ? stop_ - start_ : start_ - stop_;
    const std::int64_t stride = step_ > 0 ? step_ : -step_;
    return span <= 0 ? 0 : (span + stride - 1) / stride;
  }
  bool is_indexed() const override { return true; }
  IndexedPtr indexed(PassKey) const override {
    return std::make_shared<RangeView>(start_, step_, cardinality());
  }

 private:
  std::int64_t start_, stop_, step_;
};

class GeneratorView final : public Indexed {
 public:
  GeneratorView(std::shared_ptr<const GeneratorFunction> fn, std::int64_t size)
      : fn_(std::move(fn)), size_(size) {}
  std::int64_t size() const override { return size_; }
  Element get(std::int64_t index) override { return (*fn_)(index); }

 private:
  std::shared_ptr<const GeneratorFunction> fn_;
  std::int64_t size_;
};

class GeneratorNode final : public Node {
 public:
  GeneratorNode(GeneratorFunction fn, std::int64_t size)
      : fn_(std::make_shared<const GeneratorFunction>(std::move(fn))), size_(size) {}
  std::string name() const override {
    return "generator(" + (size_ < 0 ? std::string("infinite") : std::to_string(size_)) + ")";
  }
  std::int64_t cardinality() const override { return size_; }
  bool is_indexed() const override { return true; }
  IndexedPtr indexed(PassKey) const override { return std::make_shared<GeneratorView>(fn_, size_); }

 private:
  std::shared_ptr<const GeneratorFunction> fn_;
  std::int64_t size_;
};

}  // namespace

NodePtr make_tensor_slices(Element tensors) {
  TNT_CHECK(!tensors.empty(), "from_tensor_slices: no tensors given: pass at least one, e.g. ",
            "{images, labels}");
  for (std::size_t c = 0; c < tensors.size(); ++c) {
    TNT_CHECK(tensors[c].defined(), "from_tensor_slices: tensor ", c, " is undefined");
    TNT_CHECK(tensors[c].dim() > 0, "from_tensor_slices: tensor ", c,
              " is a scalar and cannot be sliced: use from_tensors, or give it a first dimension");
    TNT_CHECK(tensors[c].size(0) == tensors[0].size(0), "from_tensor_slices: tensor ", c, " has ",
              tensors[c].size(0), " rows but tensor 0 has ", tensors[0].size(0),
              ": all tensors must have the same size in dimension 0");
  }
  return std::make_shared<TensorSlicesNode>(std::move(tensors));
}

NodePtr make_tensors(Element tensors) {
  for (std::size_t c = 0; c < tensors.size(); ++c) {
    TNT_CHECK(tensors[c].defined(), "from_tensors: tensor ", c, " is undefined");
  }
  return std::make_shared<TensorsNode>(std::move(tensors));
}

NodePtr make_range(std::int64_t start, std::int64_t stop, std::int64_t step) {
  TNT_CHECK(step != 0, "range(", start, ", ", stop, ", ", step, "): step must not be 0");
  return std::make_shared<RangeNode>(start, stop, step);
}

NodePtr make_generator(GeneratorFunction generator, std::int64_t size) {
  TNT_CHECK(generator, "from_generator: the generator function is empty");
  TNT_CHECK_ARG(size >= 0 || size == kInfiniteCardinality, "from_generator: size ", size,
            " is invalid: give the number of elements, or kInfiniteCardinality");
  return std::make_shared<GeneratorNode>(std::move(generator), size);
}

}  // namespace tnt::data::detail
