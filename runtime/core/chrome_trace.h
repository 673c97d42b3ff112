//===- chrome_trace.h - A writer of the Chrome trace event format -*- C++ -*-===//
//
// Timelines for chrome://tracing and Perfetto (ui.perfetto.dev opens the
// same JSON): a list of events, each on a track named by (pid, tid). RN
// uses one "process" per side (the GPU with a track per program stream,
// the host with a track per thread); the names come from metadata events.
// What is written (the format's "JSON object format"):
//
//   {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
//
//   - metadata (ph "M"): process_name, thread_name, process_sort_index,
//     thread_sort_index, with the value in args;
//   - complete events (ph "X"): name, cat, ts and dur in microseconds
//     (doubles, so nanoseconds survive), pid, tid, args;
//   - instant events (ph "i", scope "t": the track) and counters (ph "C",
//     one series per key of args, drawn per process).
//
// Complete events on one track must nest (a child inside its parent, or
// one after the other); viewers misdraw partial overlaps. This writer does
// not reorder or check that: callers that cannot promise it spread events
// over lanes (cupti_trace.h does). The writer holds the events in memory
// and has no dependency beyond nlohmann-json, so it builds everywhere
// (CI has no GPU; the format is tested there).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_CHROME_TRACE_H
#define RN_RUNTIME_CORE_CHROME_TRACE_H

#include "runtime/core/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rn::trace {

/// One timeline row: thread `tid` of process `pid`.
struct Track {
  int pid = 0;
  int tid = 0;
  bool operator==(const Track &o) const { return pid == o.pid && tid == o.tid; }
  bool operator<(const Track &o) const { return pid != o.pid ? pid < o.pid : tid < o.tid; }
};

class ChromeTrace {
public:
  /// Names process `pid` (a group of tracks); groups are drawn by ascending
  /// sort index where one is given.
  void nameProcess(int pid, std::string_view name, std::optional<int> sortIndex = {});
  /// Names a track; tracks of a process are drawn by ascending sort index.
  void nameTrack(Track track, std::string_view name, std::optional<int> sortIndex = {});
  /// The track of process `pid` named `name`: the one made before, or a new
  /// one (the next free tid, named, sorted in order of creation).
  Track track(int pid, std::string_view name);

  /// A span of `durationUs` microseconds from `startUs`.
  void complete(Track track, std::string_view name, std::string_view category, double startUs,
                double durationUs, nlohmann::json args = nullptr);
  /// A point in time on one track.
  void instant(Track track, std::string_view name, std::string_view category, double timeUs,
               nlohmann::json args = nullptr);
  /// A counter sample: `values` is an object of series name -> number.
  void counter(int pid, std::string_view name, double timeUs, nlohmann::json values);

  /// Free-form data about the whole trace (the "otherData" object).
  void setMetadata(std::string_view key, nlohmann::json value);

  /// The metadata events (names, sort indices) and the others, each in the
  /// order given; toJson() writes the metadata first.
  const std::vector<nlohmann::json> &metadataEvents() const { return metadataEvents_; }
  const std::vector<nlohmann::json> &events() const { return events_; }

  nlohmann::json toJson() const;
  /// Writes toJson() to `path`; the error names the file.
  Status write(const std::string &path) const;

private:
  std::vector<nlohmann::json> metadataEvents_;
  std::vector<nlohmann::json> events_;
  nlohmann::json metadata_ = nlohmann::json::object();
  std::map<std::pair<int, std::string>, Track> named_;
  std::map<int, int> nextTid_;

  void addMetadata(nlohmann::json event);
};

/// Nanoseconds as the format's microseconds (3 decimals kept).
inline double nsToUs(int64_t ns) { return double(ns) / 1000.0; }

} // namespace rn::trace

#endif // RN_RUNTIME_CORE_CHROME_TRACE_H
