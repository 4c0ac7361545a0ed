// Tarantella: synchronous data-parallel training for LibTorch on MPI.
// Include this one header to get the whole public API: every header under
// include/tarantella/ except the forwarding headers runtime/config.h,
// runtime/error.h and runtime/logging.h (kept for older programs; they
// include their base/ counterparts, which are here).
#pragma once

#include <tarantella/version.h>
#include <tarantella/base/config.h>
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/base/default_seed.h>
#include <tarantella/base/env_contract.h>
#include <tarantella/runtime/runtime.h>
#include <tarantella/runtime/seed.h>
#include <tarantella/comm/reduce_op.h>
#include <tarantella/comm/backend.h>
#include <tarantella/comm/comm_engine.h>
#include <tarantella/comm/process_group.h>
#include <tarantella/comm/in_process.h>
#include <tarantella/runtime/collectives.h>
#include <tarantella/dp/bucket_plan.h>
#include <tarantella/dp/gradient_sync.h>
#include <tarantella/dp/state_sync.h>
#include <tarantella/dp/distributed_optimizer.h>
#include <tarantella/callbacks/callback.h>
#include <tarantella/callbacks/remote_monitor.h>
#include <tarantella/callbacks/tensorboard.h>
#include <tarantella/callbacks/builtins.h>
#include <tarantella/model/module_adapter.h>
#include <tarantella/model/losses.h>
#include <tarantella/model/metrics.h>
#include <tarantella/model/optimizers.h>
#include <tarantella/model/schedules.h>
#include <tarantella/model/model.h>
#include <tarantella/model/torchscript.h>
#include <tarantella/model/layers.h>
#include <tarantella/model/sync_batchnorm.h>
#include <tarantella/model/models.h>
#include <tarantella/model/checkpoints.h>
#include <tarantella/data/element.h>
#include <tarantella/data/dataset.h>
#include <tarantella/data/datasets.h>
#include <tarantella/data/distribute.h>
#include <tarantella/data/idx.h>
#include <tarantella/data/csv.h>
#include <tarantella/data/map_options.h>
#include <tarantella/data/padding_options.h>
#include <tarantella/data/batch_share.h>
#include <tarantella/data/torch_data.h>
#include <tarantella/data/image_io.h>
#include <tarantella/data/images.h>
#include <tarantella/data/transforms.h>
#include <tarantella/data/shards.h>
