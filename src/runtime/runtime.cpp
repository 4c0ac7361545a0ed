// Runtime start-up and shutdown. Start: MPI (thread level SERIALIZED: all
// MPI calls happen on the engine thread, one at a time), communicators, the
// thread count, the BLAS check, the engine. Shutdown is a collective with a
// check: every rank must reach it, or the job is aborted so no rank hangs.
#include <tarantella/runtime/runtime.h>

#include <mpi.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <string>

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <tarantella/comm/comm_engine.h>
#include <tarantella/runtime/error.h>
#include <tarantella/runtime/logging.h>

#include "comm/communicator.h"
#include "comm/mpi_check.h"
#include "runtime/state.h"
#include "runtime/threads.h"

namespace tnt {
namespace detail {
namespace {
std::atomic<const RuntimeView*> g_view{nullptr};
}

const RuntimeView* runtime_view() { return g_view.load(); }

const RuntimeView& require_runtime(const char* caller) {
  const RuntimeView* view = g_view.load();
  if (view == nullptr) {
    throw Error(concat("[tarantella] ", caller,
                       " needs a running runtime: create `tnt::Runtime runtime(argc, argv);` at "
                       "the start of main"));
  }
  return *view;
}

void register_runtime(const RuntimeView* view) { g_view.store(view); }
}  // namespace detail

namespace {

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "unknown";
}

// Starts MPI unless the program already did; returns whether we own it.
bool start_mpi(int argc, char** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    MPI_Query_thread(&provided);
  } else {
    // OpenMPI's blocking collectives spin while waiting for a peer; with a
    // rank per core the spinning engine thread steals the core its rank's
    // backward pass needs (measured: LeNet-5 1 -> 2 ranks 1.33x spinning,
    // 1.86x yielding; bench/train_step). The user's own setting wins.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    // Between hosts (the TCP transport), messages above the eager limit
    // (64 KiB by default) wait for the receiver's go-ahead, and that small
    // reply queues behind the receiver's own outgoing data on the same
    // socket: the two directions of a ring allreduce take turns, and an
    // 80 MB allreduce ran at half the link (1.25 s instead of 0.67 s at
    // 1 Gbit/s, 90 ms instead of 71 ms at 10 Gbit/s; bench/scaling). Our
    // collectives move at most 4 MiB (kMaxChunk float32) per call, so an
    // eager limit just above that (64 KiB of room for OpenMPI's headers)
    // sends every piece without the handshake.
    const std::string eager_limit = std::to_string(comm::kMaxChunk * sizeof(float) + 65536);
    setenv("OMPI_MCA_btl_tcp_eager_limit", eager_limit.c_str(), /*overwrite=*/0);
    setenv("OMPI_MCA_btl_tcp_max_send_size", eager_limit.c_str(), /*overwrite=*/0);
    comm::check_mpi(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided),
                    "MPI_Init_thread");
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    if (!initialized) MPI_Finalize();
    throw Error(fmt::format(
        "[tarantella] the MPI library provides only {}, but Tarantella's communication thread "
        "needs MPI_THREAD_SERIALIZED or higher: {}",
        thread_level_name(provided),
        initialized ? "initialize MPI with MPI_Init_thread(..., MPI_THREAD_SERIALIZED, ...) or "
                      "let tnt::Runtime initialize it"
                    : "use an MPI build with thread support (Debian's OpenMPI has it)"));
  }
  return !initialized;
}

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
  bool owns_mpi = false;
  std::unique_ptr<comm::Communicator> communicator;
  std::unique_ptr<comm::CommEngine> engine;
  detail::RuntimeView view;

  [[noreturn]] void abort_job(const std::string& why) {
    log::error(why + "; aborting every rank of the job so that none is left waiting");
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }
};

Runtime::Runtime(int argc, char** argv) : impl_(std::make_unique<Impl>()) {
  TNT_CHECK(detail::runtime_view() == nullptr,
            "a tnt::Runtime is already alive in this process: create exactly one, at the start "
            "of main");
  impl_->config = Config::from_env();
  impl_->owns_mpi = start_mpi(argc, argv);
  try {
    impl_->communicator =
        std::make_unique<comm::Communicator>(MPI_COMM_WORLD, impl_->config.comm_timeout_seconds);
  } catch (...) {
    if (impl_->owns_mpi) MPI_Finalize();
    throw;
  }
  const comm::Communicator& c = *impl_->communicator;
  impl_->view = {c.rank(), c.size(), c.local_rank(), c.local_size(), &impl_->config,
                 impl_->communicator.get(), nullptr};
  detail::configure_logging(c.rank(), impl_->config);
  set_thread_count(impl_->config, c.local_size());
  check_blas();
  impl_->engine = std::make_unique<comm::CommEngine>();
  impl_->view.engine = impl_->engine.get();
  detail::register_runtime(&impl_->view);
  log::info(fmt::format("runtime started: rank {} of {}, local rank {} of {}", c.rank(), c.size(),
                        c.local_rank(), c.local_size()));
}

Runtime::~Runtime() {
  Impl& impl = *impl_;
  if (std::uncaught_exceptions() > 0) {
    impl.abort_job("tnt::Runtime is being destroyed by an exception");
  }
  if (impl.communicator->broken()) {
    impl.abort_job("a collective timed out earlier");
  }
  try {
    comm::Communicator* c = impl.communicator.get();
    impl.engine
        ->enqueue("runtime shutdown",
                  [c] {
                    c->finalize_check();
                    return torch::Tensor();
                  })
        .wait();
  } catch (const std::exception& e) {
    impl.abort_job(e.what());
  }
  detail::register_runtime(nullptr);
  impl.engine.reset();
  impl.communicator.reset();
  if (impl.owns_mpi) MPI_Finalize();
}

const Config& Runtime::config() const { return impl_->config; }
comm::CommEngine& Runtime::engine() { return *impl_->engine; }

int get_rank() { return detail::require_runtime("tnt::get_rank()").rank; }
int get_size() { return detail::require_runtime("tnt::get_size()").size; }
int get_master_rank() { return 0; }
bool is_master_rank() { return get_rank() == get_master_rank(); }
int get_local_rank() { return detail::require_runtime("tnt::get_local_rank()").local_rank; }
int get_local_size() { return detail::require_runtime("tnt::get_local_size()").local_size; }
bool is_initialized() { return detail::runtime_view() != nullptr; }
const Config& config() { return *detail::require_runtime("tnt::config()").config; }

}  // namespace tnt
