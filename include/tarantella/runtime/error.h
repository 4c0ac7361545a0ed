// Moved to <tarantella/base/error.h>; this header is kept for programs written
// against earlier releases.
#pragma once
#include <tarantella/base/error.h>
