// CPU time per stage of the training image pipeline on one JPEG, on this
// thread: decode, HWC -> CHW, and the transform chain random_resized_crop
// (224) + flip + to_float + normalize, once as compose() runs it (fused) and
// once one transform at a time (step by step), alternating, same seeds;
// malloc tuned as in bench_images.
//
//   bench_image_stages IMAGE.jpg [ITERATIONS=200] [ROUNDS=5]
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <tarantella/data/image_io.h>
#include <tarantella/data/images.h>
#include <tarantella/data/transforms.h>

#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>

#include "base/malloc_tuning.h"

namespace {

namespace T = tnt::data::transforms;

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_image_stages IMAGE.jpg [ITERATIONS] [ROUNDS]\n";
    return 2;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 200;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  tnt::detail::tune_malloc(true, [](const char* name) {  // as bench_images
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  });
  at::set_num_threads(1);
  const auto bytes = tnt::data::read_file_bytes(argv[1]);
  const auto image = tnt::data::image_to_tensor(tnt::data::read_image(argv[1], 0));
  const std::vector<T::Transform> steps = {T::random_resized_crop(224), T::random_horizontal_flip(),
                                           T::to_float(),
                                           T::normalize(T::kImageNetMean, T::kImageNetStd)};
  const T::Transform fused = T::compose(steps);
  for (int r = 0; r < rounds; ++r) {
    double decode = 0, planar = 0, fused_ms = 0, stepped_ms = 0;
    for (int i = 0; i < n; ++i) {
      double t0 = thread_cpu_ms();
      const auto rgb = tnt::data::decode_image(bytes.data(), bytes.size(), argv[1], 0);
      double t1 = thread_cpu_ms();
      const auto chw = tnt::data::image_to_tensor(rgb);
      double t2 = thread_cpu_ms();
      at::Generator g1 = at::make_generator<at::CPUGeneratorImpl>(i);
      at::Generator g2 = at::make_generator<at::CPUGeneratorImpl>(i);
      const auto a = fused({image}, g1);
      double t3 = thread_cpu_ms();
      tnt::data::Element b = {image};
      for (const auto& step : steps) b = step(std::move(b), g2);
      double t4 = thread_cpu_ms();
      decode += t1 - t0, planar += t2 - t1, fused_ms += t3 - t2, stepped_ms += t4 - t3;
    }
    std::cout << "round " << r + 1 << " (ms per image, CPU): decode " << decode / n << ", HWC->CHW "
              << planar / n << ", transforms fused " << fused_ms / n << ", step by step "
              << stepped_ms / n << "\n";
  }
  return 0;
}
