// The generated TensorBoard messages, for the files of the object library
// tnt_tb_events only (src/callbacks/io_sources.cmake).
//
// They must be compiled against the system's google/protobuf headers, the
// ones of the libprotobuf we link and of the protoc that generated them. A
// pip or conda torch bundles an older google/protobuf in its include
// directory; a file that sees LibTorch's include path would pick that one up
// and fail with hundreds of errors far from the cause. So the cause is
// named here instead.
#pragma once

#if __has_include(<torch/version.h>)
#error "the TensorBoard writer sees LibTorch's include directories, whose bundled google/protobuf shadows the system's: compile it in tnt_tb_events, which does not link torch (src/callbacks/io_sources.cmake)"
#endif

#include "callbacks/proto/tensorboard_event.pb.h"
