//===- chrome_trace.cpp - The Chrome trace event format ----------------------===//

#include "runtime/core/chrome_trace.h"

#include <algorithm>
#include <fstream>

namespace rn::trace {

using json = nlohmann::json;

void ChromeTrace::addMetadata(json event) { metadataEvents_.push_back(std::move(event)); }

void ChromeTrace::nameProcess(int pid, std::string_view name, std::optional<int> sortIndex) {
  addMetadata({{"name", "process_name"},
               {"ph", "M"},
               {"pid", pid},
               {"tid", 0},
               {"args", {{"name", std::string(name)}}}});
  if (sortIndex)
    addMetadata({{"name", "process_sort_index"},
                 {"ph", "M"},
                 {"pid", pid},
                 {"tid", 0},
                 {"args", {{"sort_index", *sortIndex}}}});
}

void ChromeTrace::nameTrack(Track track, std::string_view name, std::optional<int> sortIndex) {
  addMetadata({{"name", "thread_name"},
               {"ph", "M"},
               {"pid", track.pid},
               {"tid", track.tid},
               {"args", {{"name", std::string(name)}}}});
  if (sortIndex)
    addMetadata({{"name", "thread_sort_index"},
                 {"ph", "M"},
                 {"pid", track.pid},
                 {"tid", track.tid},
                 {"args", {{"sort_index", *sortIndex}}}});
  named_[{track.pid, std::string(name)}] = track;
  int &next = nextTid_[track.pid];
  next = std::max(next, track.tid + 1);
}

Track ChromeTrace::track(int pid, std::string_view name) {
  auto it = named_.find({pid, std::string(name)});
  if (it != named_.end())
    return it->second;
  Track t{pid, nextTid_[pid]};
  nameTrack(t, name, t.tid);
  return t;
}

void ChromeTrace::complete(Track track, std::string_view name, std::string_view category,
                           double startUs, double durationUs, json args) {
  json e = {{"name", std::string(name)},
            {"cat", std::string(category)},
            {"ph", "X"},
            {"ts", startUs},
            {"dur", std::max(durationUs, 0.0)},
            {"pid", track.pid},
            {"tid", track.tid}};
  if (!args.is_null())
    e["args"] = std::move(args);
  events_.push_back(std::move(e));
}

void ChromeTrace::instant(Track track, std::string_view name, std::string_view category,
                          double timeUs, json args) {
  json e = {{"name", std::string(name)},
            {"cat", std::string(category)},
            {"ph", "i"},
            {"s", "t"},
            {"ts", timeUs},
            {"pid", track.pid},
            {"tid", track.tid}};
  if (!args.is_null())
    e["args"] = std::move(args);
  events_.push_back(std::move(e));
}

void ChromeTrace::counter(int pid, std::string_view name, double timeUs, json values) {
  events_.push_back({{"name", std::string(name)},
                     {"ph", "C"},
                     {"ts", timeUs},
                     {"pid", pid},
                     {"tid", 0},
                     {"args", std::move(values)}});
}

void ChromeTrace::setMetadata(std::string_view key, json value) {
  metadata_[std::string(key)] = std::move(value);
}

json ChromeTrace::toJson() const {
  // Metadata first, so that a viewer reading the stream knows the names
  // before the events (both viewers also accept them anywhere).
  json all = json::array();
  for (const json &e : metadataEvents_)
    all.push_back(e);
  for (const json &e : events_)
    all.push_back(e);
  json out = {{"traceEvents", std::move(all)}, {"displayTimeUnit", "ns"}};
  if (!metadata_.empty())
    out["otherData"] = metadata_;
  return out;
}

Status ChromeTrace::write(const std::string &path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Error("cannot open the trace file " + path + " for writing");
  // Streamed event by event (the JSON of toJson(), without a second copy of
  // a large trace in memory); invalid UTF-8 in a name is replaced, not thrown.
  auto text = [](const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
  out << "{\"traceEvents\":[";
  bool first = true;
  for (const auto *list : {&metadataEvents_, &events_})
    for (const json &e : *list) {
      out << (first ? "\n" : ",\n") << text(e);
      first = false;
    }
  out << "\n],\"displayTimeUnit\":\"ns\"";
  if (!metadata_.empty())
    out << ",\"otherData\":" << text(metadata_);
  out << "}\n";
  out.flush();
  if (!out)
    return Error("cannot write the trace file " + path);
  return Status::success();
}

} // namespace rn::trace
