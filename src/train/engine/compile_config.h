// Private: the compile settings as JSON (Model::get_compile_config(), the
// "compile" entry of a checkpoint), written here, below the front ends, so
// that a checkpoint holds the same description whichever front end saved
// it. User-defined parts (a loss or metric given as a function) are null:
// they cannot be rebuilt from a file. The reader is
// tnt::compile_options_from_config (model/).
#pragma once

#include <nlohmann/json.hpp>

#include <tarantella/train/options.h>

namespace tnt::train {

nlohmann::json compile_config(const CompileOptions& options);

}  // namespace tnt::train
