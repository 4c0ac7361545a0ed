// The event file writer and its thread: files TensorBoard recognizes by
// name, a file_version event first, scalars in order with their steps, and a
// failure of the writer thread that reaches the caller.
#include "callbacks/event_writer.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <tarantella/base/error.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>

#include "event_file_reader.h"

namespace {

namespace fs = std::filesystem;
using tnt::callbacks::detail::EventWriter;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("tnt_cbio_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

double now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

TEST(EventWriter, WritesVersionThenScalarsInOrder) {
  const fs::path dir = fresh_dir("order") / "nested" / "train";  // parents are created
  const double before = now();
  std::string path;
  {
    EventWriter writer(dir.string(), ".v2");
    path = writer.path();
    writer.add_scalar("epoch_loss", 0.75, 0);
    writer.add_scalar("epoch_loss", 0.5, 1);
    writer.add_scalar("epoch_accuracy", 1.0 / 3.0, 1);
  }  // the destructor writes what is queued
  const auto events = tnt_test::read_event_file(path);
  ASSERT_EQ(events.size(), 4u);
  ASSERT_TRUE(events[0].file_version.has_value());
  EXPECT_EQ(*events[0].file_version, "brain.Event:2");
  EXPECT_TRUE(events[0].scalars.empty());
  for (const auto& e : events) {
    EXPECT_GE(e.wall_time, before - 1);
    EXPECT_LE(e.wall_time, now() + 1);
  }
  ASSERT_EQ(events[1].scalars.size(), 1u);
  EXPECT_EQ(events[1].scalars[0].tag, "epoch_loss");
  EXPECT_EQ(events[1].scalars[0].value, 0.75f);
  EXPECT_EQ(events[1].step, 0);
  EXPECT_EQ(events[2].step, 1);
  EXPECT_EQ(events[2].scalars[0].value, 0.5f);
  EXPECT_EQ(events[3].scalars[0].tag, "epoch_accuracy");
  EXPECT_EQ(events[3].scalars[0].value, static_cast<float>(1.0 / 3.0));
  fs::remove_all(fresh_dir("order"));
}

TEST(EventWriter, FileNameIsTheOneTensorBoardLooksFor) {
  const fs::path dir = fresh_dir("name");
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EventWriter a(dir.string(), "");
  EventWriter b(dir.string(), ".suffix");
  const std::regex pattern(std::string(R"(events\.out\.tfevents\.\d{10}\.)") + host + "\\." +
                           std::to_string(::getpid()) + R"(\.\d+(\.suffix)?)");
  const std::string name_a = fs::path(a.path()).filename().string();
  const std::string name_b = fs::path(b.path()).filename().string();
  EXPECT_TRUE(std::regex_match(name_a, pattern)) << name_a;
  EXPECT_TRUE(std::regex_match(name_b, pattern)) << name_b;
  EXPECT_NE(name_a, name_b) << "two writers in the same second must not share a file";
  EXPECT_EQ(name_b.substr(name_b.size() - 7), ".suffix");
  fs::remove_all(dir);
}

TEST(EventWriter, FlushMakesEventsVisibleWhileOpen) {
  const fs::path dir = fresh_dir("flush");
  EventWriter writer(dir.string(), "");
  for (int step = 0; step < 100; ++step) writer.add_scalar("batch_loss", step * 0.5, step);
  writer.flush();
  const auto series = tnt_test::scalar_series(tnt_test::read_event_file(writer.path()));
  ASSERT_EQ(series.at("batch_loss").size(), 100u);
  for (int step = 0; step < 100; ++step) {
    EXPECT_EQ(series.at("batch_loss")[step].first, step);
    EXPECT_EQ(series.at("batch_loss")[step].second, static_cast<float>(step * 0.5));
  }
  fs::remove_all(dir);
}

TEST(EventWriter, UnusableDirectoryFailsAtOnceNamingIt) {
  const fs::path dir = fresh_dir("bad");
  fs::create_directories(dir);
  std::ofstream(dir / "plain_file") << "not a folder";
  const std::string bad = (dir / "plain_file" / "train").string();
  try {
    EventWriter writer(bad, "");
    FAIL() << "a log directory below a regular file was accepted";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A write error on the writer thread (the file may not grow: EFBIG) must
// reach the caller (next add or flush), not only a log line.
TEST(EventWriter, WriteFailureOnTheThreadReachesTheCaller) {
  const fs::path dir = fresh_dir("efbig");
  EventWriter writer(dir.string(), "");
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string message;
  try {
    for (int step = 0; step < 500; ++step) writer.add_scalar("batch_loss", 1.0, step);
    writer.flush();
  } catch (const tnt::Error& e) {
    threw = true;
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(threw) << "500 events past a 1 KiB file size limit did not fail";
  EXPECT_NE(message.find(writer.path()), std::string::npos) << message;
  // Later calls keep reporting the failure.
  EXPECT_THROW(writer.add_scalar("batch_loss", 1.0, 501), tnt::Error);
  fs::remove_all(dir);
}

}  // namespace
