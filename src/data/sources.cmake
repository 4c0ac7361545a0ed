# The data pipeline (include/tarantella/data/): sources, transformations,
# readers and distribution into micro-batches. Included from src/CMakeLists.txt.
find_package(ZLIB REQUIRED)
# Images: Debian's libjpeg-turbo (libjpeg62-turbo-dev) and libpng (libpng-dev).
find_package(JPEG REQUIRED)
find_package(PNG REQUIRED)
target_sources(tarantella PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/node.cpp
  ${CMAKE_CURRENT_LIST_DIR}/element_ops.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dataset.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sources.cpp
  ${CMAKE_CURRENT_LIST_DIR}/worker_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/map.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pixel_kernels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/filter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/shuffle_order.cpp
  ${CMAKE_CURRENT_LIST_DIR}/shuffle.cpp
  ${CMAKE_CURRENT_LIST_DIR}/batcher.cpp
  ${CMAKE_CURRENT_LIST_DIR}/batch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/unbatch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/repeat.cpp
  ${CMAKE_CURRENT_LIST_DIR}/strided.cpp
  ${CMAKE_CURRENT_LIST_DIR}/zip.cpp
  ${CMAKE_CURRENT_LIST_DIR}/concatenate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/enumerate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prefetch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/micro_batch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/micro_batch_tag.cpp
  ${CMAKE_CURRENT_LIST_DIR}/distribute.cpp
  ${CMAKE_CURRENT_LIST_DIR}/idx_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/csv_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mnist.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_io.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_folder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_sources.cpp
  ${CMAKE_CURRENT_LIST_DIR}/transforms.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tar.cpp
  ${CMAKE_CURRENT_LIST_DIR}/shard_index.cpp
  ${CMAKE_CURRENT_LIST_DIR}/shards.cpp
)
# image_io.cpp uses setjmp/longjmp around libjpeg: keep it out of unity
# batches so no other file's objects live in its frames. tar.cpp needs no
# LibTorch and compiles in seconds on its own.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/image_io.cpp ${CMAKE_CURRENT_LIST_DIR}/tar.cpp
                            PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
target_link_libraries(tarantella PRIVATE ZLIB::ZLIB JPEG::JPEG PNG::PNG)
# The image transforms' per-pixel loops: -O3 vectorises them (the project's
# -O2 does not); out of the unity batch so the flag stays on this file.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/pixel_kernels.cpp PROPERTIES
  COMPILE_OPTIONS "-O3" SKIP_UNITY_BUILD_INCLUSION ON)
