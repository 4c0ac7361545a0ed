// Private: reading files in the format of Python's torch.save (a zip
// archive with a pickle), including what LibTorch 1.13's own unpickler
// cannot digest (OrderedDicts, SETITEM; see pickle_rewrite.h).
#pragma once

#include <string>

#include <ATen/core/ivalue.h>

namespace tnt {

/// The IValue in a torch.save-format file; a tnt::Error naming the file when
/// it cannot be opened or read.
c10::IValue load_torch_save_file(const std::string& path);

}  // namespace tnt
