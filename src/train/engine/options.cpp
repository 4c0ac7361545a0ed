#include <tarantella/train/options.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/data/dataset.h>

namespace tnt {

FitOptions& FitOptions::validation_data(const data::Dataset& v) {
  validation_data_ = std::make_shared<data::Dataset>(v);
  return *this;
}

MixedPrecision mixed_precision_from_name(const std::string& name) {
  if (name == "none") return MixedPrecision::None;
  if (name == "bfloat16") return MixedPrecision::BFloat16;
  TNT_CHECK_ARG(name == "float16", "mixed_precision='", name,
                "' is not known: use 'bfloat16', 'float16' or 'none'");
  return MixedPrecision::Float16;
}

const char* mixed_precision_name(MixedPrecision precision) {
  switch (precision) {
    case MixedPrecision::BFloat16:
      return "bfloat16";
    case MixedPrecision::Float16:
      return "float16";
    case MixedPrecision::None:
      break;
  }
  return "none";
}

dp::Compression compression_from_name(const std::string& name) {
  if (name == "none") return dp::Compression::None;
  if (name == "float16") return dp::Compression::Float16;
  TNT_CHECK_ARG(name == "bfloat16", "compression='", name,
                "' is not known: use 'float16', 'bfloat16' or 'none'");
  return dp::Compression::BFloat16;
}

const char* compression_name(dp::Compression compression) {
  switch (compression) {
    case dp::Compression::Float16:
      return "float16";
    case dp::Compression::BFloat16:
      return "bfloat16";
    case dp::Compression::None:
      break;
  }
  return "none";
}

}  // namespace tnt
