#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <stdexcept>
#include <thread>
#include <vector>

#include <tarantella/comm/comm_engine.h>

namespace {

using tnt::comm::CommEngine;
using tnt::comm::Handle;

TEST(CommEngine, RunsRequestsInEnqueueOrder) {
  std::vector<int> order;
  std::vector<Handle> handles;
  {
    CommEngine engine;
    for (int i = 0; i < 100; ++i) {
      handles.push_back(engine.enqueue("req", [&order, i] {
        order.push_back(i);  // only the engine thread writes
        return torch::Tensor();
      }));
    }
    for (auto& h : handles) h.wait();
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

// top -H, ps -L and bench/train_step/comm_cpu.py tell the engine's thread
// by its name.
TEST(CommEngine, ItsThreadIsNamedTntComm) {
  CommEngine engine;
  std::string name;
  engine.enqueue("name", [&name] {
    std::ifstream("/proc/thread-self/comm") >> name;
    return torch::Tensor();
  }).wait();
  EXPECT_EQ(name, "tnt-comm");
}

TEST(CommEngine, RunOnAnIdleEngineRunsOnTheCaller) {
  CommEngine engine;
  engine.enqueue("warm-up", [] { return torch::Tensor(); }).wait();
  std::thread::id ran_on;
  const torch::Tensor t = engine.run("here", [&ran_on] {
    ran_on = std::this_thread::get_id();
    return torch::ones({2});
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(torch::equal(t, torch::ones({2})));
  EXPECT_THROW(engine.run("throws", []() -> torch::Tensor { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_EQ(engine.pending(), 0u);
}

TEST(CommEngine, RunWaitsBehindQueuedRequestsAndKeepsTheOrder) {
  std::vector<int> order;
  std::mutex mutex;
  const auto record = [&](int i) {
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back(i);
  };
  CommEngine engine;
  std::atomic<bool> release{false};
  Handle first = engine.enqueue("slow", [&] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    record(0);
    return torch::Tensor();
  });
  std::thread caller([&] {
    engine.run("after", [&] {
      record(1);
      return torch::Tensor();
    });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  release = true;
  caller.join();
  first.wait();
  // A request enqueued while a caller runs one itself starts after it.
  std::atomic<bool> inside{false}, go{false};
  std::thread runner([&] {
    engine.run("inline", [&] {
      inside = true;
      while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      record(2);
      return torch::Tensor();
    });
  });
  while (!inside) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Handle later = engine.enqueue("later", [&] {
    record(3);
    return torch::Tensor();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  go = true;
  runner.join();
  later.wait();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(CommEngine, ReturnsTheResultTensor) {
  CommEngine engine;
  const torch::Tensor t = torch::ones({3});
  Handle h = engine.enqueue("double", [t] { return t * 2; });
  EXPECT_TRUE(torch::equal(h.wait(), torch::full({3}, 2.0f)));
  EXPECT_TRUE(h.ready());
  EXPECT_EQ(h.name(), "double");
}

TEST(CommEngine, RethrowsTheEngineThreadsExceptionAtWait) {
  CommEngine engine;
  Handle bad = engine.enqueue("bad", []() -> torch::Tensor {
    throw std::runtime_error("failed on the engine thread");
  });
  Handle good = engine.enqueue("good", [] { return torch::zeros({1}); });
  try {
    bad.wait();
    FAIL() << "wait() did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "failed on the engine thread");
  }
  // A failed request does not poison the ones after it.
  EXPECT_TRUE(torch::equal(good.wait(), torch::zeros({1})));
}

TEST(CommEngine, DestructorRunsEverythingStillQueued) {
  std::atomic<int> ran{0};
  {
    CommEngine engine;
    for (int i = 0; i < 10; ++i) {
      engine.enqueue("slow", [&ran] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ++ran;
        return torch::Tensor();
      });
    }
  }
  EXPECT_EQ(ran.load(), 10);
}

TEST(CommEngine, WaitOnAnEmptyHandleIsAnError) {
  Handle h;
  EXPECT_FALSE(h.valid());
  EXPECT_THROW(h.wait(), std::exception);
}

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + usage.ru_stime.tv_sec +
         usage.ru_stime.tv_usec * 1e-6;
}

TEST(CommEngine, IdleEngineSleepsInsteadOfPolling) {
  CommEngine engine;
  engine.enqueue("warm-up", [] { return torch::Tensor(); }).wait();
  const double cpu_before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double cpu_used = process_cpu_seconds() - cpu_before;
  // A polling thread would burn ~0.5 s of CPU here; a sleeping one ~0.
  EXPECT_LT(cpu_used, 0.05) << "the idle engine used " << cpu_used << " s of CPU in 0.5 s";
}

}  // namespace
