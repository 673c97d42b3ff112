//===- fit_printer.cpp - A fit's report as rn-run prints it ---------------===//

#include "runtime/train/fit_printer.h"

#include <cstdarg>
#include <unistd.h>

namespace rn::train {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

} // namespace

std::string formatDuration(double seconds) {
  char buf[32];
  long t = long(seconds + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

FitPrinter::FitPrinter(Options options)
    : options_(std::move(options)),
      tty_(options_.progress && ::isatty(::fileno(options_.err))),
      loadStart_(Clock::now()), runStart_(loadStart_), lastProgress_(loadStart_) {}

void FitPrinter::line(const char *format, ...) {
  if (options_.quiet)
    return;
  va_list args;
  va_start(args, format);
  std::vfprintf(options_.out, format, args);
  va_end(args);
}

void FitPrinter::clearProgress() {
  if (tty_)
    std::fprintf(options_.err, "\r\033[K");
}

void FitPrinter::warning(const std::string &message) {
  std::fprintf(options_.err, "%s: warning: %s\n", options_.program.c_str(), message.c_str());
}

void FitPrinter::nothingLeft(const FitPlan &plan) {
  line("resumed from %s after epoch %lld of %lld: nothing left to train\n",
       plan.resumedFrom.c_str(), (long long)plan.firstEpoch, (long long)plan.epochs);
}

void FitPrinter::planned(const FitPlan &plan) {
  plan_ = plan;
  if (plan.group.distributed())
    line("data-parallel: %s, batch %lld per rank, global batch %lld\n",
         plan.group.describe().c_str(), (long long)plan.batch, (long long)plan.globalBatch);
  line("model %s: batch %lld, %lld classes; train %lld examples (%lld steps/epoch), test %lld "
       "examples; %lld epochs, lr %g, warmup %g epochs, cosine decay\n",
       plan.model.c_str(), (long long)plan.batch, (long long)plan.classes,
       (long long)plan.trainExamples, (long long)plan.stepsPerEpoch,
       (long long)plan.testExamples, (long long)plan.epochs, plan.lr, plan.warmupEpochs);
  line("data loaded in %.2f s; %d loader thread%s\n", secondsSince(loadStart_),
       plan.loaderThreads, plan.loaderThreads == 1 ? "" : "s");
  if (plan.firstEpoch > 0)
    line("resumed from %s after epoch %lld\n", plan.resumedFrom.c_str(),
         (long long)plan.firstEpoch);
  std::fflush(options_.out);
  runStart_ = Clock::now();
}

void FitPrinter::epochStarted(int64_t) { lastProgress_ = epochStart_ = Clock::now(); }

void FitPrinter::progress(const EpochProgress &p) {
  // About once a second; on a terminal also at the epoch's end, so that the
  // rewritten line shows the whole epoch before it is cleared.
  auto now = Clock::now();
  if (!options_.progress ||
      (std::chrono::duration<double>(now - lastProgress_).count() < 1.0 &&
       !(tty_ && p.stepsDone == p.stepsPerEpoch)))
    return;
  lastProgress_ = now;
  double rate = double((p.epoch - plan_.firstEpoch) * p.stepsPerEpoch + p.stepsDone) /
                secondsSince(runStart_);
  int64_t left = (plan_.epochs - p.epoch - 1) * p.stepsPerEpoch + (p.stepsPerEpoch - p.stepsDone);
  const double epochSeconds = secondsSince(epochStart_);
  std::fprintf(options_.err,
               "%sepoch %lld/%lld step %lld/%lld loss %.4f lr %.4g %.2f batches/s %.0f "
               "images/s data wait %.0f%% ETA %s%s",
               tty_ ? "\r\033[K" : "", (long long)p.epoch + 1, (long long)plan_.epochs,
               (long long)p.stepsDone, (long long)p.stepsPerEpoch,
               p.lossSum / double(p.stepsDone), p.lr, rate, rate * double(plan_.globalBatch),
               epochSeconds > 0 ? 100.0 * p.dataWaitSeconds / epochSeconds : 0.0,
               formatDuration(double(left) / rate).c_str(), tty_ ? "" : "\n");
  std::fflush(options_.err);
}

void FitPrinter::trained(const EpochReport &r) {
  clearProgress();
  line("epoch %lld/%lld train loss %.6f (%lld steps, lr %.6g at the last step)\n",
       (long long)r.epoch + 1, (long long)plan_.epochs, r.trainLoss, (long long)r.steps,
       r.lastLr);
  std::fflush(options_.out);
}

void FitPrinter::evaluated(const EpochReport &r) {
  const long long e = r.epoch + 1, epochs = plan_.epochs, n = r.test.evaluated;
  const double accuracy = n ? 100.0 * double(r.test.correct) / double(n) : 0;
  if (n == r.testExamples)
    line("epoch %lld/%lld test loss %.6f accuracy %.2f%% (%lld examples)\n", e, epochs,
         r.test.loss, accuracy, n);
  else if (n > 0)
    line("epoch %lld/%lld test loss %.6f accuracy %.2f%% (%lld of %lld examples: the program "
         "returns no logits, so the last incomplete batch is skipped)\n",
         e, epochs, r.test.loss, accuracy, n, (long long)r.testExamples);
  else
    line("epoch %lld/%lld test: not evaluated (%lld examples, fewer than a batch, and the "
         "program returns no logits)\n",
         e, epochs, (long long)r.testExamples);
  line("epoch %lld/%lld time %.2f s train (%.2f batches/s, %.0f images/s, %.2f s waiting for "
       "data), %.2f s test\n",
       e, epochs, r.trainSeconds, double(r.steps) / r.trainSeconds,
       double(r.steps * plan_.globalBatch) / r.trainSeconds, r.dataWaitSeconds, r.testSeconds);
  if (r.skippedImages > 0)
    line("epoch %lld/%lld skipped %lld images that did not read (--skip-bad-images), the first: "
         "%s\n",
         e, epochs, (long long)r.skippedImages, r.firstSkipped.c_str());
  std::fflush(options_.out);
}

void FitPrinter::checkpointed(int64_t epoch, const std::string &path) {
  line("epoch %lld/%lld checkpoint %s\n", (long long)epoch + 1, (long long)plan_.epochs,
       path.c_str());
  std::fflush(options_.out);
}

void FitPrinter::stopped(int64_t epoch) {
  line("stopped after epoch %lld (--stop-after-epoch)\n", (long long)epoch + 1);
}

void FitPrinter::finished(int64_t epochs, double seconds) {
  line("done: %lld epochs in %.2f s\n", (long long)epochs, seconds);
}

} // namespace rn::train
