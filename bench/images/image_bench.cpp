// Images per second of the library's training input pipeline: decode
// (libjpeg-turbo) + random_resized_crop(224) + horizontal flip + to_float +
// normalize, batched by 32, on an image folder (see run.sh, which also runs
// torchvision's ImageFolder + DataLoader with the same transforms and worker
// count, side by side).
//
// Two rates: per wall-clock second, and per CPU second of the process (all
// its threads) — "per core", which is what a shared machine can measure
// fairly. Process start-up and listing the folder are outside both, as
// importing torch and ImageFolder's listing are on the Python side. malloc
// gets the settings a training process gets from tnt::Runtime
// (src/base/malloc_tuning.h), which the bench does not start.
//
//   bench_images DIR [WORKERS] [PASSES]
#include <ATen/Parallel.h>
#include <tarantella/data/images.h>
#include <tarantella/data/transforms.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>

#include "base/malloc_tuning.h"

namespace {

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_images DIR [WORKERS] [PASSES]\n";
    return 2;
  }
  const int workers = argc > 2 ? std::atoi(argv[2]) : 1;
  const int passes = argc > 3 ? std::atoi(argv[3]) : 2;
  tnt::detail::tune_malloc(true, [](const char* name) {
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  });
  at::set_num_threads(1);  // as the Python side: parallelism only from the workers
  namespace T = tnt::data::transforms;
  const auto list = tnt::data::list_image_folder(argv[1]);
  const auto ds =
      tnt::data::from_image_files(list, tnt::data::ImageOptions().num_workers(workers))
          .shuffle(static_cast<std::int64_t>(list.paths.size()), 1)
          .map_seeded(T::compose({T::random_resized_crop(224), T::random_horizontal_flip(),
                                  T::to_float(), T::normalize(T::kImageNetMean, T::kImageNetStd)}),
                      1, tnt::data::MapOptions().num_workers(workers))
          .batch(32);
  std::int64_t images = 0;
  const double cpu_start = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < passes; ++epoch) {
    auto it = ds.iterate(epoch);
    while (auto batch = it.next()) images += (*batch)[0].size(0);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = cpu_seconds() - cpu_start;
  std::cout << "tarantella: " << images / seconds << " images/s, " << images / cpu
            << " images/cpu-s (" << images << " images, " << workers << " workers)\n";
  return 0;
}
