// Runtime start-up and shutdown. Start: malloc's thresholds
// (base/malloc_tuning.h), MPI (comm::MpiSession), the world
// group (its communicator and engine thread), the thread count, the BLAS
// check, and the handler that turns an uncaught exception into one report
// line and exit status 1 (rank_failure.h). Shutdown is a collective with a
// check: every rank must reach it, or this rank ends the same way (and mpirun
// then stops the others) so that no rank hangs.
#include <tarantella/runtime/runtime.h>
#include <tarantella/runtime/fail_rank.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include <ATen/Parallel.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "base/malloc_tuning.h"
#include "base/threads.h"
#include "comm/mpi/mpi_session.h"
#include "comm/world/backend_choice.h"
#include "comm/world/world_backend.h"
#include "runtime/rank_failure.h"

namespace tnt {
namespace {

// The alive runtime, for the public rank API and the public API's default
// group. Library code below the public API is given its group instead.
std::atomic<Runtime::Impl*> g_runtime{nullptr};

void set_thread_count(const Config& config, int local_size) {
  const int cores = detail::available_cores();
  const int threads = detail::decide_num_threads(config, cores, local_size);
  at::set_num_threads(threads);
  log::info(fmt::format("{} intra-op threads ({} cores, {} ranks on this node{})", threads, cores,
                        local_size, config.num_threads ? ", set by OMP_NUM_THREADS/TNT_NUM_THREADS"
                                                       : ""));
}

void check_blas() {
  const detail::BlasInfo blas = detail::detect_blas();
  if (blas.is_reference) {
    log::warning(fmt::format(
        "LibTorch is using the reference BLAS ({}), which trains ~20x slower: install OpenBLAS "
        "(apt-get install libopenblas0-openmp, or run scripts/install-deps.sh) and select it with "
        "update-alternatives --set libblas.so.3-x86_64-linux-gnu "
        "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3",
        blas.library));
  } else if (!blas.library.empty()) {
    log::debug("BLAS: " + blas.library);
  }
}

}  // namespace

struct Runtime::Impl {
  Config config;
  std::unique_ptr<comm::MpiSession> mpi;
  comm::ProcessGroup world;
  std::optional<detail::FailedRankHandler> failure_handler;

  // This rank cannot shut down with the others: it reports why and ends
  // with exit status 1, and mpirun stops the rest of the job.
  [[noreturn]] void fail(const std::string& why) const {
    detail::end_failed_rank(world.rank(), detail::without_rank_prefix(why, world.rank()),
                            /*with_backtrace=*/false);
  }
};

namespace {

// The rank's GPU, as the engine picks it (train/engine/engine_state.cpp),
// becomes the current device of the thread that starts the runtime (the
// user's main thread): user code that says "cuda", or asks for the current
// stream, then means this rank's GPU, not GPU 0 on every rank of a node.
void select_gpu(const Config& config, int local_rank) {
  const auto gpu = comm::rank_training_gpu(config.use_gpu.value_or(true), local_rank);
  if (!gpu) return;
  c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)
      ->setDevice(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(*gpu)));
}

}  // namespace

Runtime::Runtime(int argc, char** argv) : impl_(std::make_unique<Impl>()) {
  TNT_CHECK(g_runtime.load() == nullptr,
            "a tnt::Runtime is already alive in this process: create exactly one, at the start "
            "of main");
  impl_->failure_handler.emplace();
  impl_->config = Config::from_env();
  const std::string malloc_note =
      detail::tune_malloc(impl_->config.malloc_tuning, [](const char* name) {
        const char* value = std::getenv(name);
        return value ? std::optional<std::string>(value) : std::nullopt;
      });
  impl_->mpi = std::make_unique<comm::MpiSession>(argc, argv, impl_->config.stack_service);
  impl_->world = comm::ProcessGroup(comm::make_world_backend(*impl_->mpi, impl_->config));
  const comm::ProcessGroup& w = impl_->world;
  log::configure(w.rank(), impl_->config);
  impl_->failure_handler->identify(w.rank(), impl_->config.log_level == LogLevel::Debug);
  log::debug(malloc_note);
  set_thread_count(impl_->config, w.local_size());
  select_gpu(impl_->config, w.local_rank());
  check_blas();
  g_runtime.store(impl_.get());
  log::info(fmt::format("runtime started: rank {} of {}, local rank {} of {}", w.rank(), w.size(),
                        w.local_rank(), w.local_size()));
}

Runtime::~Runtime() {
  Impl& impl = *impl_;
  if (std::uncaught_exceptions() > 0) {
    // A destructor cannot reach the exception, and the code that catches it
    // would run with this rank's peers left waiting for it.
    impl.fail(
        "an exception is leaving the scope of tnt::Runtime, so this rank cannot shut down with "
        "the others: catch it inside that scope, or let it leave main to have its message "
        "printed");
  }
  if (impl.world.broken()) {
    impl.fail(
        "a collective or point-to-point transfer timed out earlier, so this rank cannot shut "
        "down with the others");
  }
  try {
    impl.world.finalize_check();
  } catch (const std::exception& e) {
    impl.fail(e.what());
  }
  g_runtime.store(nullptr);
  impl.world = comm::ProcessGroup();  // joins the engine, frees the communicators
  impl.mpi.reset();
  impl.failure_handler.reset();
}

const Config& Runtime::config() const { return impl_->config; }
const comm::ProcessGroup& Runtime::world() const { return impl_->world; }

namespace {
Runtime::Impl& require_runtime(const char* caller) {
  Runtime::Impl* rt = g_runtime.load();
  if (rt == nullptr) {
    throw Error(detail::concat("[tarantella] ", caller,
                               " needs a running runtime: create `tnt::Runtime runtime(argc, "
                               "argv);` at the start of main"));
  }
  return *rt;
}
}  // namespace

const comm::ProcessGroup& world() { return require_runtime("tnt::world()").world; }
int get_rank() { return require_runtime("tnt::get_rank()").world.rank(); }
int get_size() { return require_runtime("tnt::get_size()").world.size(); }
int get_master_rank() { return 0; }
bool is_master_rank() { return get_rank() == get_master_rank(); }
int get_local_rank() { return require_runtime("tnt::get_local_rank()").world.local_rank(); }
int get_local_size() { return require_runtime("tnt::get_local_size()").world.local_size(); }
bool is_initialized() { return g_runtime.load() != nullptr; }
const Config& config() { return require_runtime("tnt::config()").config; }
Config current_config() { return is_initialized() ? config() : Config::from_env(); }

void fail_rank(const std::string& message) {
  const Runtime::Impl* rt = g_runtime.load();
  const int rank = rt ? rt->world.rank() : -1;
  detail::end_failed_rank(rank, detail::without_rank_prefix(message, rank),
                          /*with_backtrace=*/false);
}

}  // namespace tnt
