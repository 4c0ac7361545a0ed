# The data pipeline (include/tarantella/data/): sources, transformations,
# readers and distribution into micro-batches. Included from src/CMakeLists.txt.
find_package(ZLIB REQUIRED)
# Images: Debian's libjpeg-turbo (libjpeg62-turbo-dev) and libpng (libpng-dev).
find_package(JPEG REQUIRED)
find_package(PNG REQUIRED)
target_sources(tarantella PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/pipeline/node.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pipeline/element_ops.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pipeline/dataset.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pipeline/sources.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pipeline/worker_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/map.cpp
  ${CMAKE_CURRENT_LIST_DIR}/images/pixel_kernels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/filter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/shuffle_order.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/shuffle.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pipeline/batcher.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/batch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/unbatch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/repeat.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/strided.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/zip.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/concatenate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/enumerate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/prefetch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nodes/micro_batch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/distribution/distribute.cpp
  ${CMAKE_CURRENT_LIST_DIR}/formats/idx_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/formats/csv_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/formats/mnist.cpp
  ${CMAKE_CURRENT_LIST_DIR}/images/image_io.cpp
  ${CMAKE_CURRENT_LIST_DIR}/images/image_folder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/images/image_sources.cpp
  ${CMAKE_CURRENT_LIST_DIR}/images/transforms.cpp
  ${CMAKE_CURRENT_LIST_DIR}/formats/tar.cpp
  ${CMAKE_CURRENT_LIST_DIR}/formats/shard_index.cpp
  ${CMAKE_CURRENT_LIST_DIR}/formats/shards.cpp
)
# image_io.cpp uses setjmp/longjmp around libjpeg: keep it out of unity
# batches so no other file's objects live in its frames. tar.cpp needs no
# LibTorch and compiles in seconds on its own.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/images/image_io.cpp ${CMAKE_CURRENT_LIST_DIR}/formats/tar.cpp
                            PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
target_link_libraries(tarantella PRIVATE ZLIB::ZLIB JPEG::JPEG PNG::PNG)
# The image transforms' per-pixel loops: -O3 vectorises them (the project's
# -O2 does not); out of the unity batch so the flag stays on this file.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/images/pixel_kernels.cpp PROPERTIES
  COMPILE_OPTIONS "-O3" SKIP_UNITY_BUILD_INCLUSION ON)
# GCC 12 crashes (an internal compiler error in its IPA pass) compiling this
# file at -O3 with a precompiled header made at -O1 (CI's pip leg builds at
# -O1, scripts/test-pip.sh): at a level other than -O2 it goes without.
if(NOT CMAKE_CXX_FLAGS_RELEASE MATCHES "-O2")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/images/pixel_kernels.cpp PROPERTIES
    SKIP_PRECOMPILE_HEADERS ON)
endif()
