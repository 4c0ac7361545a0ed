// Private: who runs a loop, as the front end hands it to fit, evaluate and
// predict (train/engine/engine.h) and the loops hand it to their callbacks.
#pragma once

namespace tnt {
class Model;
}  // namespace tnt

namespace tnt::train {

class TrainingHost;

/// The callbacks' host, and the C++ model if the C++ facade drives the
/// loop (Callback::model(); null otherwise).
struct Driver {
  TrainingHost* host = nullptr;
  Model* model = nullptr;
};

}  // namespace tnt::train
