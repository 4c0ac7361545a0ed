// Private: reading files in the format of Python's torch.save (a zip
// archive with a pickle), including what LibTorch 1.13's own unpickler
// cannot digest (OrderedDicts, SETITEM; see pickle_rewrite.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

namespace tnt {

/// The IValue in a torch.save-format file; a tnt::Error naming the file when
/// it cannot be opened or read.
c10::IValue load_torch_save_file(const std::string& path);

/// `value` in the format of Python's torch.save, as the bytes of the zip
/// archive: what torch::pickle_save writes, but without the type tags
/// (torch.jit._pickle.restore_type_tag) it puts on dicts and lists. torch
/// 2.6 and newer load with weights_only=True by default and refuse that
/// global; a plain dict of tensors loads there, and in 1.13, unchanged.
std::vector<char> torch_save_bytes(const c10::IValue& value);

/// The same bytes, handed to `sink` piece by piece as the archive is made
/// (a checkpoint goes to its file without a copy of it in memory).
void torch_save(const c10::IValue& value, const std::function<void(const char*, std::size_t)>& sink);

}  // namespace tnt
