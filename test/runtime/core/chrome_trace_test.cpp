//===- chrome_trace_test.cpp - The Chrome trace writer, written and read back ===//

#include "runtime/core/chrome_trace.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace rn::trace {
namespace {

using json = nlohmann::json;

std::string tempPath(const std::string &name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/rn-" + std::to_string(getpid()) + "-" + name;
}

json readBack(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

/// The events of `trace` with ph `ph` and name `name`.
std::vector<json> find(const json &trace, const std::string &ph, const std::string &name) {
  std::vector<json> out;
  for (const json &e : trace.at("traceEvents"))
    if (e.at("ph") == ph && e.at("name") == name)
      out.push_back(e);
  return out;
}

TEST(ChromeTrace, WritesTracksAndEventsThatParseBack) {
  ChromeTrace trace;
  trace.nameProcess(1, "GPU 0", 0);
  trace.nameProcess(2, "host", 1);
  Track comp1{1, 1};
  trace.nameTrack(comp1, "COMP_1", 1);
  Track main = trace.track(2, "main");
  trace.complete(comp1, "17 conv2d", "kernel", 1.5, 2.25, {{"node", 17}, {"op", "conv2d"}});
  trace.complete(main, "step 0", "host", 0.0, 10.0);
  trace.instant(main, "submit", "host", 0.5, {{"steps", 2}});
  trace.counter(2, "steps in flight", 3.0, {{"steps", 2}});
  trace.setMetadata("model", "mlp");

  std::string path = tempPath("chrome-trace.json");
  Status st = trace.write(path);
  ASSERT_TRUE(st.ok()) << st.error().message();
  json parsed = readBack(path);
  std::remove(path.c_str());

  // What was written is what toJson() says.
  EXPECT_EQ(parsed, trace.toJson());
  EXPECT_EQ(parsed.at("displayTimeUnit"), "ns");
  EXPECT_EQ(parsed.at("otherData").at("model"), "mlp");

  // Metadata: names and sort indices, before every other event.
  const json &events = parsed.at("traceEvents");
  ASSERT_EQ(events.size(), trace.metadataEvents().size() + trace.events().size());
  for (size_t i = 0; i < trace.metadataEvents().size(); ++i)
    EXPECT_EQ(events[i].at("ph"), "M") << i;
  auto processes = find(parsed, "M", "process_name");
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].at("pid"), 1);
  EXPECT_EQ(processes[0].at("args").at("name"), "GPU 0");
  EXPECT_EQ(processes[1].at("args").at("name"), "host");
  EXPECT_EQ(find(parsed, "M", "process_sort_index").size(), 2u);
  auto threads = find(parsed, "M", "thread_name");
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].at("pid"), 1);
  EXPECT_EQ(threads[0].at("tid"), 1);
  EXPECT_EQ(threads[0].at("args").at("name"), "COMP_1");
  EXPECT_EQ(threads[1].at("pid"), 2);
  EXPECT_EQ(threads[1].at("tid"), main.tid);
  EXPECT_EQ(threads[1].at("args").at("name"), "main");

  // The complete event with its fields.
  auto kernels = find(parsed, "X", "17 conv2d");
  ASSERT_EQ(kernels.size(), 1u);
  const json &k = kernels[0];
  EXPECT_EQ(k.at("cat"), "kernel");
  EXPECT_DOUBLE_EQ(k.at("ts").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(k.at("dur").get<double>(), 2.25);
  EXPECT_EQ(k.at("pid"), 1);
  EXPECT_EQ(k.at("tid"), 1);
  EXPECT_EQ(k.at("args").at("node"), 17);
  EXPECT_EQ(k.at("args").at("op"), "conv2d");
  // An event without args has none.
  auto steps = find(parsed, "X", "step 0");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_FALSE(steps[0].contains("args"));
  EXPECT_EQ(steps[0].at("tid"), main.tid);

  auto instants = find(parsed, "i", "submit");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0].at("s"), "t");
  EXPECT_EQ(instants[0].at("args").at("steps"), 2);
  auto counters = find(parsed, "C", "steps in flight");
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0].at("pid"), 2);
  EXPECT_EQ(counters[0].at("args").at("steps"), 2);
}

TEST(ChromeTrace, TrackByNameReusesAndSkipsTakenIds) {
  ChromeTrace trace;
  trace.nameTrack({3, 0}, "TRANS");
  trace.nameTrack({3, 4}, "UPDATE");
  Track update = trace.track(3, "UPDATE");
  EXPECT_EQ(update.tid, 4);
  Track extra = trace.track(3, "stream 7");
  EXPECT_EQ(extra.pid, 3);
  EXPECT_EQ(extra.tid, 5); // after the highest tid named so far
  EXPECT_EQ(trace.track(3, "stream 7"), extra);
  Track other = trace.track(4, "stream 7"); // another process has its own ids
  EXPECT_EQ(other.tid, 0);
  // Each track is named once.
  EXPECT_EQ(find(trace.toJson(), "M", "thread_name").size(), 4u);
}

TEST(ChromeTrace, KeepsNanosecondsAndClampsNegativeDurations) {
  ChromeTrace trace;
  Track t = trace.track(0, "t");
  // 1.7e6 s after an origin, at nanosecond resolution.
  int64_t ns = 1'700'000'123'456'789;
  trace.complete(t, "late", "kernel", nsToUs(ns), -1.0);
  json e = trace.toJson().at("traceEvents").back();
  EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 0.0);
  EXPECT_NEAR(e.at("ts").get<double>() * 1000.0, double(ns), 1.0);
}

TEST(ChromeTrace, WriteNamesAFileItCannotOpen) {
  ChromeTrace trace;
  Status st = trace.write("/nonexistent-dir/trace.json");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("/nonexistent-dir/trace.json"), std::string::npos);
}

TEST(ChromeTrace, InvalidUtf8InANameIsReplacedNotThrown) {
  ChromeTrace trace;
  trace.complete(trace.track(0, "t"), std::string("bad \xff name"), "kernel", 0, 1);
  std::string path = tempPath("chrome-trace-utf8.json");
  ASSERT_TRUE(trace.write(path).ok());
  json parsed = readBack(path);
  std::remove(path.c_str());
  EXPECT_EQ(find(parsed, "X", "bad \xef\xbf\xbd name").size(), 1u);
}

} // namespace
} // namespace rn::trace
