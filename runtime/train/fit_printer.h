//===- fit_printer.h - A fit's report as rn-run prints it -------*- C++ -*-===//
//
// The FitObserver of a command line: the stable lines on stdout that
// scripts and tests read (docs/rn-run.md, "Output": the plan, each epoch's
// train loss, test loss and accuracy, time and checkpoint, the end), which
// hold no timings where runs are compared textually, and about once a
// second a progress line on stderr (rewritten in place on a terminal). The
// ranks of one process but rank 0 print nothing on stdout, so that a
// data-parallel process reports once.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_FIT_PRINTER_H
#define RN_RUNTIME_TRAIN_FIT_PRINTER_H

#include "runtime/train/fit.h"

#include <chrono>
#include <cstdio>
#include <string>

namespace rn::train {

class FitPrinter final : public FitObserver {
public:
  struct Options {
    bool quiet = false;   ///< no stdout lines (an in-process rank other than 0)
    bool progress = true; ///< progress lines on `err`
    FILE *out = stdout;
    FILE *err = stderr;
    /// Messages begin "<program>: warning: ".
    std::string program = "rn-run";
  };
  explicit FitPrinter(Options options);

  /// A line (or any text) on `out`, unless quiet.
  __attribute__((format(printf, 2, 3))) void line(const char *format, ...);
  /// Clears an in-place progress line (a terminal), before an error.
  void clearProgress();
  /// When the data started loading: the plan reports the seconds since.
  void setLoadStart(std::chrono::steady_clock::time_point start) { loadStart_ = start; }

  void warning(const std::string &message) override;
  void nothingLeft(const FitPlan &plan) override;
  void planned(const FitPlan &plan) override;
  void epochStarted(int64_t epoch) override;
  void progress(const EpochProgress &progress) override;
  void trained(const EpochReport &report) override;
  void evaluated(const EpochReport &report) override;
  void checkpointed(int64_t epoch, const std::string &path) override;
  void stopped(int64_t epoch) override;
  void finished(int64_t epochs, double seconds) override;

private:
  Options options_;
  bool tty_; ///< progress lines rewrite themselves in place
  FitPlan plan_;
  std::chrono::steady_clock::time_point loadStart_, runStart_, lastProgress_, epochStart_;
};

/// "M:SS", or "H:MM:SS" from an hour on, of `seconds` rounded.
std::string formatDuration(double seconds);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_FIT_PRINTER_H
