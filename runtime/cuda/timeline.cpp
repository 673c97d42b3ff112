//===- timeline.cpp - rn-run --trace: a run's GPU timeline ----------------===//
//
// See timeline.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/timeline.h"

#include <algorithm>
#include <cctype>

namespace rn::cuda {

std::string streamTrack(Stream stream) {
  switch (stream) {
  case Stream::trans: return "TRANS";
  case Stream::comp1: return "COMP_1";
  case Stream::comp2: return "COMP_2";
  case Stream::comp3: return "COMP_3";
  case Stream::update: return "UPDATE";
  }
  return std::string(streamName(stream));
}

Result<std::unique_ptr<Timeline>> Timeline::create(const Program &program) {
  std::unique_ptr<Timeline> t(new Timeline());
  t->labels_ = itemLabels(program);
  Result<std::unique_ptr<CuptiTrace>> trace = CuptiTrace::create();
  if (!trace.ok())
    return trace.error().withContext("--trace");
  t->trace_ = std::move(*trace);
  return t;
}

void Timeline::hostSpan(std::string track, std::string name,
                        std::chrono::steady_clock::time_point begin,
                        std::chrono::steady_clock::time_point end) {
  std::lock_guard<std::mutex> lock(spansMutex_);
  spans_.push_back({std::move(track), std::move(name), begin, end});
}

Result<Timeline::Summary> Timeline::write(const std::string &path) {
  if (trace_->running())
    if (Status st = trace_->stop(); !st.ok())
      return st.error().withContext("--trace");
  const std::vector<ActivityRecord> &records = trace_->records();
  Summary summary;
  summary.dropped = trace_->droppedRecords();
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (const ActivityRecord &r : records) {
    if (!onGpu(r.kind) || r.endNs <= r.startNs)
      continue;
    ++summary.gpuRecords;
    if (!r.label || *r.label == 0 || *r.label > labels_.size())
      ++summary.unlabeled;
    busy.emplace_back(r.startNs, r.endNs);
  }
  // The union of the intervals: what the GPU was doing at all.
  std::sort(busy.begin(), busy.end());
  uint64_t busyNs = 0, curStart = 0, curEnd = 0;
  for (auto [s, e] : busy) {
    if (curEnd == 0 || s > curEnd) {
      busyNs += curEnd - curStart;
      curStart = s;
      curEnd = e;
    } else {
      curEnd = std::max(curEnd, e);
    }
  }
  busyNs += curEnd - curStart;
  if (!busy.empty()) {
    uint64_t last = 0;
    for (auto [s, e] : busy)
      last = std::max(last, e);
    summary.windowMs = double(last - busy.front().first) / 1e6;
  }
  summary.busyMs = double(busyNs) / 1e6;

  const std::vector<ItemLabel> &labels = labels_;
  Labeler labeler = [&labels](const ActivityRecord &r) -> std::optional<TraceLabel> {
    if (!r.label || *r.label == 0 || *r.label > labels.size())
      return std::nullopt;
    const ItemLabel &l = labels[size_t(*r.label - 1)];
    TraceLabel t;
    t.name = l.name;
    t.track = streamTrack(l.stream);
    t.args = {{"subgraph", l.subgraph->name}, {"node", l.node}};
    if (l.part >= 0)
      t.args["part"] = l.part;
    return t;
  };
  std::vector<HostSpan> spans;
  for (const Span &s : spans_)
    spans.push_back({s.track, s.name, trace_->toCuptiNs(s.begin), trace_->toCuptiNs(s.end),
                     nullptr});
  trace::ChromeTrace chrome = buildChromeTrace(records, labeler, spans);
  if (Status st = chrome.write(path); !st.ok())
    return st.error().withContext("--trace");
  return summary;
}

} // namespace rn::cuda
