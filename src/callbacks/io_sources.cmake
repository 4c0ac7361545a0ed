# The TensorBoard and RemoteMonitor callbacks (include/tarantella/callbacks/
# tensorboard.h, remote_monitor.h). Included from src/CMakeLists.txt.
#   TensorBoard: a subset of TensorFlow's event.proto compiled by Debian's
#   protoc; RemoteMonitor: libcurl and nlohmann-json.
find_package(Protobuf REQUIRED)
# Our own target over what FindProtobuf found, not protobuf::libprotobuf: a
# pip torch's CMake files define that name as an empty interface (torch links
# its protobuf statically), and CMake keeps the first definition.
add_library(tnt_protobuf INTERFACE)
target_include_directories(tnt_protobuf SYSTEM INTERFACE ${Protobuf_INCLUDE_DIRS})
target_link_libraries(tnt_protobuf INTERFACE ${Protobuf_LIBRARIES})
find_package(CURL REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

set(tnt_tb_proto_dir ${CMAKE_CURRENT_LIST_DIR}/proto)
set(tnt_tb_proto_out ${CMAKE_CURRENT_BINARY_DIR}/callbacks/proto)
file(MAKE_DIRECTORY ${tnt_tb_proto_out})
add_custom_command(
  OUTPUT ${tnt_tb_proto_out}/tensorboard_event.pb.cc ${tnt_tb_proto_out}/tensorboard_event.pb.h
  COMMAND ${Protobuf_PROTOC_EXECUTABLE} --cpp_out=${tnt_tb_proto_out} -I ${tnt_tb_proto_dir}
          ${tnt_tb_proto_dir}/tensorboard_event.proto
  DEPENDS ${tnt_tb_proto_dir}/tensorboard_event.proto ${Protobuf_PROTOC_EXECUTABLE}
  COMMENT "protoc: TensorBoard event messages"
  VERBATIM)
# Generated code is not ours to keep -Wextra clean.
set_source_files_properties(${tnt_tb_proto_out}/tensorboard_event.pb.cc
                            PROPERTIES COMPILE_OPTIONS "-w")

# Header isolation, by construction: the code that includes the generated
# messages (and so the system's google/protobuf headers) is its own object
# library that does not link LibTorch, so torch's include directory, which in
# a pip or conda torch bundles an older google/protobuf, is never on its
# include path. tests/layering/check_protobuf_headers.py proves it from the
# compile commands; event_file.cpp refuses to compile if it sees torch.
add_library(tnt_tb_events OBJECT
  ${tnt_tb_proto_out}/tensorboard_event.pb.cc
  ${CMAKE_CURRENT_LIST_DIR}/event_record.cpp
  ${CMAKE_CURRENT_LIST_DIR}/event_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/event_writer.cpp
)
target_include_directories(tnt_tb_events
  PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include ${PROJECT_SOURCE_DIR}/src)
# "callbacks/proto/tensorboard_event.pb.h" resolves against the build tree.
target_include_directories(tnt_tb_events SYSTEM PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
# The full runtime, not -lite: Debian's LibTorch already loads libprotobuf.so,
# and two copies of protobuf's lite classes in one process must be avoided.
# The messages are generated for the lite API (no descriptors to register).
target_link_libraries(tnt_tb_events PRIVATE tnt_protobuf tnt_fmt Threads::Threads
                      tnt_warnings)

target_sources(tarantella PRIVATE
  $<TARGET_OBJECTS:tnt_tb_events>
  ${CMAKE_CURRENT_LIST_DIR}/tensorboard.cpp
  ${CMAKE_CURRENT_LIST_DIR}/remote_monitor_request.cpp
  ${CMAKE_CURRENT_LIST_DIR}/remote_monitor_http.cpp
  ${CMAKE_CURRENT_LIST_DIR}/remote_monitor.cpp
)
target_link_libraries(tarantella PRIVATE
  $<BUILD_INTERFACE:tnt_protobuf> CURL::libcurl nlohmann_json::nlohmann_json)
