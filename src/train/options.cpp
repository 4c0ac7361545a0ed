#include <tarantella/train/options.h>

#include <tarantella/data/dataset.h>

namespace tnt {

FitOptions& FitOptions::validation_data(const data::Dataset& v) {
  validation_data_ = std::make_shared<data::Dataset>(v);
  return *this;
}

}  // namespace tnt
