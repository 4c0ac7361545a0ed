// Images per second of the library's training input pipeline: decode
// (libjpeg-turbo) + random_resized_crop(224) + horizontal flip + to_float +
// normalize, batched by 32, on an image folder (see run.sh, which also runs
// torchvision's ImageFolder + DataLoader with the same transforms and worker
// count, side by side).
//
//   bench_images DIR [WORKERS] [PASSES]
#include <ATen/Parallel.h>
#include <tarantella/data/images.h>
#include <tarantella/data/transforms.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_images DIR [WORKERS] [PASSES]\n";
    return 2;
  }
  const int workers = argc > 2 ? std::atoi(argv[2]) : 1;
  const int passes = argc > 3 ? std::atoi(argv[3]) : 2;
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
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < passes; ++epoch) {
    auto it = ds.iterate(epoch);
    while (auto batch = it.next()) images += (*batch)[0].size(0);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "tarantella: " << images / seconds << " images/s (" << images << " images, "
            << workers << " workers)\n";
  return 0;
}
