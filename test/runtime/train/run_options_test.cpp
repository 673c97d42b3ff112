//===- run_options_test.cpp - rn-run's flag table and its machinery --------===//
//
// The table (run_options.h) drives parsing, --help and the configurations'
// defaults: every flag is in --help with its default, every default is one
// its own flag accepts, the configurations start at the table's defaults,
// and the parser reads values, refuses wrong ones and names the closest
// flag to a mistyped one.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/benchmark.h"
#include "runtime/train/command_line.h"
#include "runtime/train/data_dir.h"
#include "runtime/train/executor_factory.h"
#include "runtime/train/fit.h"
#include "runtime/train/run_options.h"
#include "runtime/train/synthetic_run.h"

#include <gtest/gtest.h>

#include <set>

namespace rn::train {
namespace {

Status parse(std::vector<const char *> args, RunOptions &options, ParsedFlags &parsed) {
  args.insert(args.begin(), "rn-run");
  return parseRunOptions(int(args.size()), args.data(), options, parsed);
}

TEST(RunOptions, HelpListsEveryFlagWithItsDefault) {
  const std::string usage = runUsage();
  RunOptions scratch;
  std::set<std::string> names;
  for (const Flag &flag : runFlags(scratch)) {
    EXPECT_TRUE(names.insert(flag.name).second) << flag.name << " twice";
    if (flag.group.empty())
      continue; // -h, --help, --version
    EXPECT_NE(usage.find("  " + flag.name + (flag.value.empty() ? "" : " " + flag.value)),
              std::string::npos)
        << flag.name;
    if (!flag.defaultValue.empty()) {
      EXPECT_NE(usage.find("(default " + flag.defaultValue + ")"), std::string::npos)
          << flag.name;
    }
  }
  for (const char *group : {"\ntraining:\n", "\ndata:\n", "\nGPU:\n", "\ndiagnostics:\n",
                            "\ndata-parallel:\n"})
    EXPECT_NE(usage.find(group), std::string::npos) << group;
  EXPECT_NE(usage.find("  --epochs N         epochs (default 1)\n"), std::string::npos);
  size_t start = 0;
  for (size_t end; (end = usage.find('\n', start)) != std::string::npos; start = end + 1)
    EXPECT_LE(end - start, 80u) << usage.substr(start, end - start);
  // The closest-flag message offers the table's flags.
  EXPECT_EQ(unknownOptionMessage("--epoch", flagsInUsage(usage)),
            "unknown option '--epoch'; did you mean '--epochs'?");
}

TEST(RunOptions, ConfigurationsStartAtTheTablesDefaults) {
  const RunOptions &d = runDefaults();
  EXPECT_EQ(d.epochs, 1);
  EXPECT_EQ(d.lr, 0.1);
  EXPECT_EQ(d.steps, 10);
  EXPECT_EQ(d.warmup, 10);
  EXPECT_EQ(d.autotuneCandidates, 16);
  EXPECT_EQ(d.executor, "auto");
  EXPECT_EQ(d.label, "fine");
  EXPECT_EQ(d.augment, "none");
  EXPECT_TRUE(d.path.empty() && !d.synthetic && d.stopAfterEpoch == 0);
  FitConfig fit;
  EXPECT_EQ(fit.epochs, d.epochs);
  EXPECT_EQ(fit.lr, d.lr);
  EXPECT_EQ(fit.warmupEpochs, d.warmupEpochs);
  EXPECT_EQ(fit.seed, d.seed);
  SyntheticRunConfig synthetic;
  EXPECT_EQ(synthetic.steps, d.steps);
  EXPECT_EQ(synthetic.lr, d.lr);
  BenchmarkConfig bench;
  EXPECT_EQ(bench.warmup, d.warmup);
  EXPECT_EQ(bench.steps, d.steps);
  ExecutorConfig executor;
  EXPECT_EQ(executor.autotuneCandidates, d.autotuneCandidates);
  DataDirOptions data;
  EXPECT_EQ(data.label, d.label);
  // The parser starts from the same defaults.
  RunOptions o;
  ParsedFlags parsed;
  ASSERT_TRUE(parse({"m.rnx"}, o, parsed));
  EXPECT_EQ(o.path, "m.rnx");
  EXPECT_EQ(o.lr, d.lr);
  EXPECT_EQ(o.executor, d.executor);
}

TEST(RunOptions, ReadsValues) {
  RunOptions o;
  ParsedFlags parsed;
  ASSERT_TRUE(parse({"--epochs", "3", "m.rnx", "--lr", "0.5", "--executor", "cpu", "--no-progress",
                     "--perturb-state", "1e-3", "7", "--autotune-candidates", "99999999"},
                    o, parsed));
  EXPECT_EQ(o.epochs, 3);
  EXPECT_EQ(o.lr, 0.5);
  EXPECT_EQ(o.executor, "cpu");
  EXPECT_TRUE(o.noProgress);
  EXPECT_EQ(o.perturbEps, 1e-3);
  EXPECT_EQ(o.perturbSeed, 7u);
  EXPECT_EQ(o.autotuneCandidates, 1 << 20); // capped
  EXPECT_EQ(o.path, "m.rnx");
}

TEST(RunOptions, RefusesWrongValues) {
  auto error = [](std::vector<const char *> args) {
    RunOptions o;
    ParsedFlags parsed;
    Status s = parse(std::move(args), o, parsed);
    return s ? std::string("ok") : s.error().message();
  };
  EXPECT_EQ(error({"--epochs", "0"}), "--epochs must be an integer >= 1, got '0'");
  EXPECT_EQ(error({"--lr", "-1"}), "--lr must be a number >= 0, got '-1'");
  EXPECT_EQ(error({"--seed", "-1"}), "--seed must be an integer >= 0, got '-1'");
  EXPECT_EQ(error({"--executor", "gpu"}),
            "--executor must be cpu, cuda-eager, cuda-graph or auto, got 'gpu'");
  EXPECT_EQ(error({"--label", "x"}), "--label must be fine or coarse, got 'x'");
  EXPECT_EQ(error({"--perturb-state", "1", "2"}),
            "--perturb-state EPS must be a number in [0, 1), got '1'");
  EXPECT_EQ(error({"--epoch", "2"}), "unknown option '--epoch'; did you mean '--epochs'?");
  EXPECT_EQ(error({"a.rnx", "b.rnx"}), "more than one artifact given ('a.rnx', 'b.rnx')");
  RunOptions o;
  ParsedFlags parsed;
  Status s = parse({"m.rnx", "--perturb-state", "0.1"}, o, parsed);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(), "--perturb-state needs a value");
  EXPECT_TRUE(parsed.missingValue);
}

TEST(RunOptions, HelpEndsTheCommandLine) {
  RunOptions o;
  ParsedFlags parsed;
  ASSERT_TRUE(parse({"--help", "--no-such-flag"}, o, parsed));
  EXPECT_TRUE(o.help);
  EXPECT_EQ(parsed.endedAt, "--help");
}

TEST(CommandLine, DefaultsGoThroughTheSetter) {
  int64_t n = 0;
  std::vector<Flag> flags = {{"--n", "g", "N", "5", "a number", integerFlag(n, 1)}};
  ASSERT_TRUE(applyFlagDefaults(flags));
  EXPECT_EQ(n, 5);
  flags[0].defaultValue = "0";
  Status s = applyFlagDefaults(flags);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(),
            "the default of --n is refused: --n must be an integer >= 1, got '0'");
}

TEST(CommandLine, UsageWrapsHelpAndAppendsTheDefault) {
  std::string text;
  bool on = false;
  std::vector<Flag> flags = {
      {"--name", "group", "TEXT", "x",
       "a help text long enough to need a second line when it is laid out from column "
       "twenty-one",
       textFlag(text)},
      {"--a-rather-long-switch", "group", "", "", "short", switchFlag(on)},
  };
  EXPECT_EQ(flagUsage(flags, "head\n", "foot\n"),
            "head\n"
            "\ngroup:\n"
            "  --name TEXT        a help text long enough to need a second line when it is\n"
            "                     laid out from column twenty-one (default x)\n"
            "  --a-rather-long-switch  short\n"
            "foot\n");
}

} // namespace
} // namespace rn::train
