// RemoteMonitor at N ranks against a local HTTP server on the master
// (127.0.0.1, a kernel-chosen port): exactly one POST per epoch, carrying
// exactly the epoch's global logs; every rank posts when asked to; a server
// that is missing, stuck or failing costs a warning and a bounded delay.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "http_test_server.h"
#include "training_fixture.h"

namespace {

using tnt::callbacks::RemoteMonitor;
using tnt::callbacks::RemoteMonitorOptions;

// The master's port, told to every rank. Collective.
int shared_port(int master_port) {
  torch::Tensor port = torch::tensor({static_cast<std::int64_t>(master_port)});
  tnt::comm::broadcast(port, tnt::get_master_rank());
  return static_cast<int>(port.item<std::int64_t>());
}

std::string loopback(int port) { return "http://127.0.0.1:" + std::to_string(port); }

// {"epoch": e, <every History entry of epoch e>}.
nlohmann::json expected_payload(const tnt::callbacks::History& history, std::size_t i) {
  nlohmann::json j;
  j["epoch"] = history.epochs.at(i);
  for (const auto& [name, values] : history.history) j[name] = values.at(i);
  return j;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

tnt::FitOptions fit_options(std::int64_t epochs, tnt::callbacks::CallbackPtr cb) {
  return tnt::FitOptions()
      .epochs(epochs)
      .verbose(0)
      .validation_data(tnt_test::validation_set())
      .callbacks({std::move(cb)});
}

TEST(RemoteMonitorMpi, MasterPostsEachEpochsGlobalLogsAsAKerasForm) {
  std::unique_ptr<tnt_test::HttpTestServer> server;
  if (tnt::is_master_rank()) server = std::make_unique<tnt_test::HttpTestServer>();
  const int port = shared_port(server ? server->port() : 0);
  auto monitor = std::make_shared<RemoteMonitor>(RemoteMonitorOptions().root(loopback(port)));
  EXPECT_FALSE(monitor->run_on_all_ranks);
  tnt::Model model = tnt_test::make_model();
  const auto history = model.fit(tnt_test::train_set(), fit_options(3, monitor));
  tnt::comm::barrier();
  if (!server) return;
  const auto requests = server->requests();
  ASSERT_EQ(requests.size(), 3u) << "one POST per epoch from the master only";
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].method, "POST");
    EXPECT_EQ(requests[i].path, "/publish/epoch/end/");
    EXPECT_EQ(requests[i].headers.at("content-type"), "application/x-www-form-urlencoded");
    ASSERT_EQ(requests[i].body.rfind("data=", 0), 0u) << requests[i].body;
    const auto got = nlohmann::json::parse(tnt_test::form_decode(requests[i].body.substr(5)));
    EXPECT_EQ(got, expected_payload(history, i)) << "epoch " << i;
  }
  EXPECT_TRUE(history.history.count("val_loss"));
}

TEST(RemoteMonitorMpi, JsonBodyToAnotherPathWithHeaders) {
  std::unique_ptr<tnt_test::HttpTestServer> server;
  if (tnt::is_master_rank()) server = std::make_unique<tnt_test::HttpTestServer>();
  const int port = shared_port(server ? server->port() : 0);
  auto monitor = std::make_shared<RemoteMonitor>(RemoteMonitorOptions()
                                                     .root(loopback(port))
                                                     .path("/runs/7")
                                                     .headers({{"Authorization", "Bearer t"}})
                                                     .send_as_json(true));
  tnt::Model model = tnt_test::make_model();
  const auto history = model.fit(tnt_test::train_set(), fit_options(2, monitor));
  tnt::comm::barrier();
  if (!server) return;
  const auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].path, "/runs/7");
    EXPECT_EQ(requests[i].headers.at("content-type"), "application/json");
    EXPECT_EQ(requests[i].headers.at("authorization"), "Bearer t");
    EXPECT_EQ(nlohmann::json::parse(requests[i].body), expected_payload(history, i));
  }
}

TEST(RemoteMonitorMpi, RunOnAllRanksPostsFromEveryRank) {
  std::unique_ptr<tnt_test::HttpTestServer> server;
  if (tnt::is_master_rank()) server = std::make_unique<tnt_test::HttpTestServer>();
  const int port = shared_port(server ? server->port() : 0);
  auto monitor =
      tnt::callbacks::wrap(std::make_shared<RemoteMonitor>(
                               RemoteMonitorOptions().root(loopback(port)).send_as_json(true)),
                           tnt::callbacks::WrapOptions().run_on_all_ranks(true));
  tnt::Model model = tnt_test::make_model();
  const auto history = model.fit(tnt_test::train_set(), fit_options(2, monitor));
  tnt::comm::barrier();
  if (!server) return;
  const auto requests = server->requests();
  ASSERT_EQ(requests.size(), static_cast<std::size_t>(2 * tnt::get_size()));
  // Global logs on every rank: each epoch's payload arrives once per rank.
  for (std::size_t i = 0; i < 2; ++i) {
    const auto expected = expected_payload(history, i);
    const auto n = std::count_if(requests.begin(), requests.end(), [&](const auto& r) {
      return nlohmann::json::parse(r.body) == expected;
    });
    EXPECT_EQ(n, tnt::get_size()) << "epoch " << i;
  }
}

// The three ways a server fails. Training ends normally, within a bound, and
// the master warns once per epoch with the reason.
struct Failure {
  const char* name;
  const char* reason;  // expected in the warning
};

class RemoteMonitorFailure : public ::testing::TestWithParam<Failure> {};

TEST_P(RemoteMonitorFailure, OnlyWarnsAndTrainingGoesOn) {
  const std::string kind = GetParam().name;
  std::unique_ptr<tnt_test::HttpTestServer> failing;
  std::unique_ptr<tnt_test::SilentListener> silent;
  int port = 0;
  if (tnt::is_master_rank()) {
    if (kind == "refused") port = tnt_test::unused_loopback_port();
    if (kind == "status500") {
      failing = std::make_unique<tnt_test::HttpTestServer>(500);
      port = failing->port();
    }
    if (kind == "silent") silent = std::make_unique<tnt_test::SilentListener>();
  }
  std::string root = loopback(shared_port(port));
  if (silent) root = silent->root();
  // 0.5 s for the silent server (each request waits it out); 10 s for the
  // others, which answer at once, but from a thread a loaded machine may
  // not run within 0.5 s (the warning would then say "timed out").
  const double timeout = kind == "silent" ? 0.5 : 10.0;
  auto monitor =
      std::make_shared<RemoteMonitor>(RemoteMonitorOptions().root(root).timeout_seconds(timeout));
  ASSERT_TRUE(!tnt::is_master_rank() || tnt::log::enabled(tnt::LogLevel::Warning))
      << "the test needs warnings on (TNT_LOG_LEVEL at most WARNING)";
  tnt::Model model = tnt_test::make_model();
  const auto start = std::chrono::steady_clock::now();
  if (tnt::is_master_rank()) ::testing::internal::CaptureStderr();
  const auto history = model.fit(tnt_test::train_set(), fit_options(2, monitor));
  const std::string err =
      tnt::is_master_rank() ? ::testing::internal::GetCapturedStderr() : std::string();
  const double took = seconds_since(start);
  EXPECT_EQ(history.epochs, (std::vector<std::int64_t>{0, 1}));
  EXPECT_LT(took, 60.0) << "two epochs with a " << timeout << " s timeout per request";
  if (tnt::is_master_rank()) {
    for (int epoch : {0, 1}) {
      const std::string line = "RemoteMonitor: could not send the logs of epoch " +
                               std::to_string(epoch) + " to " + root + "/publish/epoch/end/";
      EXPECT_NE(err.find(line), std::string::npos) << "stderr:\n" << err;
    }
    EXPECT_NE(err.find(GetParam().reason), std::string::npos) << "stderr:\n" << err;
    EXPECT_NE(err.find("WARNING"), std::string::npos) << "stderr:\n" << err;
  }
  if (failing) {
    EXPECT_EQ(failing->requests().size(), 2u);
  }
  tnt::comm::barrier();
}

INSTANTIATE_TEST_SUITE_P(Servers, RemoteMonitorFailure,
                         ::testing::Values(Failure{"refused", "onnect"},
                                           Failure{"status500", "HTTP 500"},
                                           Failure{"silent", "timed out"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
