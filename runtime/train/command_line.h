//===- command_line.h - What the tools say about a mistyped flag -*- C++ -*-===//
//
// rn-run and rn-data answer an unknown flag with one line naming the flag
// their usage text lists that is closest to it, instead of the whole
// usage: "unknown option '--epoch'; did you mean '--epochs'?". The usage
// text is the list of flags, so a flag added there is offered here too.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_COMMAND_LINE_H
#define RN_RUNTIME_TRAIN_COMMAND_LINE_H

#include <string>
#include <string_view>
#include <vector>

namespace rn::train {

/// The flags ("--name") a usage text names, once each, in order.
std::vector<std::string> flagsInUsage(std::string_view usage);

/// "unknown option 'GIVEN'; did you mean '--CLOSEST'?" when a known flag is
/// a few edits away (or starts with what was given), else "unknown option
/// 'GIVEN' (--help lists the options)". A `--flag=value` is judged by its
/// flag.
std::string unknownOptionMessage(const std::string &given, const std::vector<std::string> &known);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_COMMAND_LINE_H
