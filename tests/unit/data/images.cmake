# The image sources and transforms (images.h, transforms.h), in their own
# executable so that the other data tests' unity batches stay as they were.
# The torchvision comparison runs Debian's python3 (TNT_PYTHON).
add_executable(data_image_tests
  image_sources_test.cpp
  image_augment_test.cpp
  image_shards_test.cpp
  image_skip_test.cpp
  torchvision_compare_test.cpp)
target_include_directories(data_image_tests PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(data_image_tests PRIVATE
  TNT_TEST_PYTHON="${TNT_PYTHON}"
  TNT_TORCHVISION_REFERENCE="${CMAKE_CURRENT_SOURCE_DIR}/torchvision_reference.py"
  TNT_FUZZ_CORPUS="${PROJECT_SOURCE_DIR}/tests/fuzz/corpus")
target_link_libraries(data_image_tests PRIVATE tarantella GTest::gtest_main tnt_warnings)
tnt_gtest_suites(data_image_tests
  PREFIX "data."
  PROPERTIES TIMEOUT ${TNT_TEST_TIMEOUT} LABELS unit)
