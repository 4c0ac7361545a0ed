#include "train/persist/checkpoint_entries.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>

#include "io/pickle_rewrite.h"
#include "io/torch_save.h"
#include "train/step/random_state.h"

namespace tnt::train {

c10::IValue Entries::get(const char* key) const {
  auto it = dict_.find(key);
  TNT_CHECK(it != dict_.end(), "checkpoint '", path_, "' has no '", key,
            "' entry: it is not a file written by tnt::Model::save");
  return it->value();
}

std::string Entries::str(const char* key) const {
  const c10::IValue v = get(key);
  if (!v.isString()) wrong(key, detail::kind_of(v), "a str");
  return v.toStringRef();
}

std::int64_t Entries::count(const char* key) const {
  const c10::IValue v = get(key);
  if (!v.isInt()) wrong(key, detail::kind_of(v), "an int");
  if (v.toInt() < 0) wrong(key, std::to_string(v.toInt()), "a count >= 0");
  return v.toInt();
}

c10::impl::GenericDict Entries::dict(const char* key) const {
  const c10::IValue v = get(key);
  if (!v.isGenericDict()) wrong(key, detail::kind_of(v), "a dict");
  return v.toGenericDict();
}

torch::Tensor Entries::byte_tensor(const char* key) const {
  const char* expected = "a uint8 tensor (1-D, contiguous)";
  const c10::IValue v = get(key);
  if (!v.isTensor()) wrong(key, detail::kind_of(v), expected);
  const torch::Tensor t = v.toTensor();
  if (t.scalar_type() != torch::kUInt8) {
    wrong(key, fmt::format("a {} tensor", c10::toString(t.scalar_type())), expected);
  }
  if (t.dim() != 1 || !t.is_contiguous()) {
    wrong(key, detail::concat("a uint8 tensor of shape ", t.sizes(), " and strides ", t.strides()),
          expected);
  }
  return t;
}

double Entries::positive(const char* key) const {
  const c10::IValue v = get(key);
  if (!v.isDouble()) wrong(key, detail::kind_of(v), "a float");
  if (!(v.toDouble() > 0) || !std::isfinite(v.toDouble())) {
    wrong(key, std::to_string(v.toDouble()), "a finite number > 0");
  }
  return v.toDouble();
}

std::vector<std::int64_t> Entries::integers(const char* key) const {
  const c10::IValue v = get(key);
  if (!v.isTensor()) wrong(key, detail::kind_of(v), "an int64 tensor");
  const torch::Tensor t = v.toTensor();
  if (t.scalar_type() != torch::kInt64 || t.dim() != 1) {
    wrong(key, detail::concat("a ", c10::toString(t.scalar_type()), " tensor of shape ", t.sizes()),
          "a 1-D int64 tensor");
  }
  const torch::Tensor c = t.contiguous();
  return std::vector<std::int64_t>(c.data_ptr<std::int64_t>(),
                                   c.data_ptr<std::int64_t>() + c.numel());
}

std::vector<double> Entries::doubles(const char* key) const {
  const c10::IValue v = get(key);
  if (!v.isTensor()) wrong(key, detail::kind_of(v), "a float64 tensor");
  const torch::Tensor t = v.toTensor();
  if (t.scalar_type() != torch::kFloat64 || t.dim() != 1) {
    wrong(key, detail::concat("a ", c10::toString(t.scalar_type()), " tensor of shape ", t.sizes()),
          "a 1-D float64 tensor");
  }
  const torch::Tensor c = t.contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

std::string Entries::bytes(const char* key) const {
  const torch::Tensor t = byte_tensor(key);
  return std::string(static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(t.numel()));
}

Entries Entries::subset(std::initializer_list<const char*> keys) const {
  c10::impl::GenericDict out(c10::StringType::get(), c10::AnyType::get());
  for (const char* key : keys) {
    if (has(key)) out.insert(key, get(key));
  }
  return Entries(out, path_);
}

void Entries::wrong(const char* key, const std::string& is, const char* expected) const {
  detail::throw_error(
      fmt::format("checkpoint '{}': entry '{}' is {}, expected {} (the file is "
                  "damaged or was not written by tnt::Model::save)",
                  path_, key, is, expected));
}

Entries read_checkpoint(const std::string& path) {
  const torch::IValue value = load_torch_save_file(path);
  TNT_CHECK(value.isGenericDict(), "'", path, "' holds ", detail::kind_of(value),
            ", not a tarantella checkpoint (a dict)");
  Entries entries(value.toGenericDict(), path);
  TNT_CHECK(entries.has("format"), "'", path,
            "' is a weight file (a dict of tensors, as save_weights and "
            "torch.save(module.state_dict()) write it), not a checkpoint: load it with "
            "load_weights");
  TNT_CHECK(entries.str("format") == kCheckpointFormat, "'", path,
            "' has an unknown checkpoint format: write it with tnt::Model::save");
  return entries;
}

Entries broadcast_entries(const comm::ProcessGroup& group, const std::optional<Entries>& master,
                          const std::string& path) {
  std::string bytes;
  if (group.is_master()) {
    const std::vector<char> pickled = torch::pickle_save(master->all());
    bytes.assign(pickled.begin(), pickled.end());
  }
  bytes = group.broadcast_string(bytes);
  if (group.is_master()) return *master;
  const torch::IValue value = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  return Entries(value.toGenericDict(), path);
}

torch::Tensor rng_state(const Entries& entries) {
  const std::string& path = entries.path();
  const torch::Tensor rng = entries.byte_tensor("rng_state");
  const std::int64_t expected = random_state(torch::kCPU).numel();
  TNT_CHECK(rng.numel() == expected, "checkpoint '", path, "': entry 'rng_state' has ", rng.numel(),
            " bytes, expected ", expected,
            " (the state of LibTorch's CPU generator): the file is damaged");
  return rng;
}

}  // namespace tnt::train
