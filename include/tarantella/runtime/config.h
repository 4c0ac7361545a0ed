// Moved to <tarantella/base/config.h>; this header is kept for programs written
// against earlier releases.
#pragma once
#include <tarantella/base/config.h>
