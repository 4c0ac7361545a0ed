// Forwarding header: the Callback interface belongs to the training engine
// (train/callback.h), which calls it; the built-ins stay in callbacks/.
#pragma once
#include <tarantella/train/callback.h>
