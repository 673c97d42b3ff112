//===- command_line.h - Flag tables and what the tools say about them -*- C++ -*-===//
//
// A tool's flags as one table (Flag: name, --help group, value, default,
// help, and what it sets), from which come the parser, the --help text and
// the defaults: each default is written once, as the text the parser reads
// before the command line (rn-run's table: run_options.h).
//
// An unknown flag is answered with one line naming the closest known one,
// instead of the whole usage: "unknown option '--epoch'; did you mean
// '--epochs'?". rn-data, whose usage text is written by hand, offers the
// flags that text lists (flagsInUsage).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_COMMAND_LINE_H
#define RN_RUNTIME_TRAIN_COMMAND_LINE_H

#include "runtime/core/status.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace rn::train {

/// Stores a flag's values (as many as Flag::value names words), or says
/// why they are wrong ("--epochs must be an integer >= 1, got 'x'").
using FlagSetter =
    std::function<Status(const std::string &flag, const std::vector<std::string> &values)>;

struct Flag {
  std::string name;  ///< "--epochs"
  std::string group; ///< its --help section ("training")
  /// What follows it in --help, one word per value it takes: "N", "EPS
  /// SEED"; empty for a switch.
  std::string value;
  /// Given to `set` before the command line is read, as if it were given
  /// ("1"); --help appends "(default 1)". Empty: none.
  std::string defaultValue;
  std::string help; ///< one paragraph; --help wraps it
  FlagSetter set;
  /// Reading the command line ends at this flag (--help, --version).
  bool ends = false;
};

/// Setters: a switch sets `target` to true; a text takes any value, or one
/// of `choices` when given; an integer one >= `min`; an unsigned one >= 0
/// (without a sign); a number a finite one >= `min` and < `below`.
FlagSetter switchFlag(bool &target);
FlagSetter textFlag(std::string &target, std::vector<std::string> choices = {});
FlagSetter integerFlag(int64_t &target, int64_t min);
FlagSetter unsignedFlag(uint64_t &target);
FlagSetter numberFlag(double &target, double min,
                      double below = std::numeric_limits<double>::infinity());

/// Sets every flag that has a default to it. A default its own setter
/// refuses is a bug in the table, reported as such.
Status applyFlagDefaults(const std::vector<Flag> &flags);

/// A command line read against a table.
struct ParsedFlags {
  std::vector<std::string> positional; ///< the arguments that are no flags, in order
  std::string endedAt;                 ///< the Flag::ends flag that ended it, if any
  /// Its error is a flag given without its value (the tools exit 2), not a
  /// wrong value (exit 1).
  bool missingValue = false;
};

/// Reads argv[1..]: each flag of `flags` takes its values and calls its
/// setter; an argument that does not start with '-' is positional; any
/// other is unknown (unknownOptionMessage). Defaults are not applied here.
/// On an error, `parsed` says how far it got.
Status parseFlags(int argc, const char *const *argv, const std::vector<Flag> &flags,
                  ParsedFlags &parsed);

/// The --help text: `header`, then each group in order of first appearance
/// ("\nGROUP:\n") with its flags in table order, "  --name VALUE" and the
/// help (plus its default) wrapped to 80 columns from column 21, then
/// `footer`.
std::string flagUsage(const std::vector<Flag> &flags, std::string_view header,
                      std::string_view footer);

/// The flags ("--name") a usage text names, once each, in order.
std::vector<std::string> flagsInUsage(std::string_view usage);

/// "unknown option 'GIVEN'; did you mean '--CLOSEST'?" when a known flag is
/// a few edits away (or starts with what was given), else "unknown option
/// 'GIVEN' (--help lists the options)". A `--flag=value` is judged by its
/// flag.
std::string unknownOptionMessage(const std::string &given, const std::vector<std::string> &known);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_COMMAND_LINE_H
