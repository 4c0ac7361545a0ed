// Private: reading a whole-model checkpoint (the file persistence.h
// writes). Entries gives each entry checked for presence and type, with
// errors that name the file and the entry; the master reads the file and
// sends the small entries to every rank in one broadcast.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <torch/types.h>

#include <tarantella/comm/process_group.h>

namespace tnt::train {

/// The "format" entry of every checkpoint.
inline constexpr const char* kCheckpointFormat = "tarantella-checkpoint-1";

class Entries {
 public:
  Entries(c10::impl::GenericDict dict, std::string path)
      : dict_(std::move(dict)), path_(std::move(path)) {}

  bool has(const char* key) const { return dict_.find(key) != dict_.end(); }
  c10::IValue get(const char* key) const;
  std::string str(const char* key) const;
  /// A count of epochs or steps (an int >= 0).
  std::int64_t count(const char* key) const;
  c10::impl::GenericDict dict(const char* key) const;
  /// Bytes stored as a 1-D uint8 tensor (optimizer state, RNG state, TorchScript).
  torch::Tensor byte_tensor(const char* key) const;
  std::string bytes(const char* key) const;
  /// A finite positive number.
  double positive(const char* key) const;
  /// A 1-D int64 / float64 tensor's values.
  std::vector<std::int64_t> integers(const char* key) const;
  std::vector<double> doubles(const char* key) const;

  /// The entries among `keys` that are present, as a dict of their own.
  Entries subset(std::initializer_list<const char*> keys) const;
  const c10::impl::GenericDict& all() const { return dict_; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void wrong(const char* key, const std::string& is, const char* expected) const;

  c10::impl::GenericDict dict_;
  std::string path_;
};

/// The entries of a checkpoint file, its format checked (master rank only).
Entries read_checkpoint(const std::string& path);

/// The small entries the master read and checked (counters, random state,
/// loss scale, a backup's position), on every rank: one pickled dict sent
/// as one string broadcast, so every value travels by name and no length
/// is sent by hand. `master` is set on the group's master only. Collective.
Entries broadcast_entries(const comm::ProcessGroup& group, const std::optional<Entries>& master,
                          const std::string& path);

/// The CPU generator's state from a checkpoint, checked to be one.
torch::Tensor rng_state(const Entries& entries);

}  // namespace tnt::train
