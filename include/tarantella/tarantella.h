// Tarantella: synchronous data-parallel training for LibTorch on MPI.
// Include this one header to get the whole public API.
#pragma once

#include <tarantella/version.h>
#include <tarantella/runtime/config.h>
#include <tarantella/runtime/error.h>
#include <tarantella/runtime/logging.h>
#include <tarantella/runtime/runtime.h>
#include <tarantella/runtime/seed.h>
#include <tarantella/comm/comm_engine.h>
#include <tarantella/comm/collectives.h>
#include <tarantella/callbacks/callback.h>
#include <tarantella/callbacks/remote_monitor.h>
#include <tarantella/callbacks/tensorboard.h>
#include <tarantella/callbacks/builtins.h>
#include <tarantella/model/model.h>
#include <tarantella/model/layers.h>
#include <tarantella/model/models.h>
#include <tarantella/model/checkpoints.h>
#include <tarantella/data/element.h>
#include <tarantella/data/dataset.h>
#include <tarantella/data/datasets.h>
#include <tarantella/data/distribute.h>
#include <tarantella/data/idx.h>
