// Forwarding header: the Keras collection lives in keras/ (below the
// training engine); this path keeps existing includes working.
#pragma once
#include <tarantella/keras/layers.h>
