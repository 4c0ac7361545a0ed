// Moved to <tarantella/base/logging.h>; this header is kept for programs written
// against earlier releases.
#pragma once
#include <tarantella/base/logging.h>
