//===- command_line.cpp - Flag tables and what the tools say about them ---===//

#include "runtime/train/command_line.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rn::train {

namespace {

Error badValue(const std::string &flag, const std::string &must, const std::string &got) {
  return Error(flag + " must be " + must + ", got '" + got + "'");
}

/// The words of `text` ("EPS SEED": two).
std::vector<std::string> words(const std::string &text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find(' ', i);
    end = end == std::string::npos ? text.size() : end;
    if (end > i)
      out.push_back(text.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

} // namespace

FlagSetter switchFlag(bool &target) {
  return [&target](const std::string &, const std::vector<std::string> &) {
    target = true;
    return Status::success();
  };
}

FlagSetter textFlag(std::string &target, std::vector<std::string> choices) {
  return [&target, choices](const std::string &flag,
                            const std::vector<std::string> &values) -> Status {
    if (!choices.empty() && std::find(choices.begin(), choices.end(), values[0]) == choices.end()) {
      std::string listed;
      for (size_t i = 0; i < choices.size(); ++i)
        listed += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
      return badValue(flag, listed, values[0]);
    }
    target = values[0];
    return Status::success();
  };
}

FlagSetter integerFlag(int64_t &target, int64_t min) {
  return [&target, min](const std::string &flag,
                        const std::vector<std::string> &values) -> Status {
    const char *v = values[0].c_str();
    char *end = nullptr;
    errno = 0;
    long long parsed = std::strtoll(v, &end, 10);
    if (!*v || *end || errno || parsed < min)
      return badValue(flag, "an integer >= " + std::to_string(min), v);
    target = parsed;
    return Status::success();
  };
}

FlagSetter unsignedFlag(uint64_t &target) {
  return [&target](const std::string &flag, const std::vector<std::string> &values) -> Status {
    const char *v = values[0].c_str();
    char *end = nullptr;
    errno = 0;
    unsigned long long parsed = std::strtoull(v, &end, 10);
    if (!std::isdigit(static_cast<unsigned char>(*v)) || *end || errno)
      return badValue(flag, "an integer >= 0", v);
    target = parsed;
    return Status::success();
  };
}

FlagSetter numberFlag(double &target, double min, double below) {
  return [&target, min, below](const std::string &flag,
                               const std::vector<std::string> &values) -> Status {
    const char *v = values[0].c_str();
    char *end = nullptr;
    double parsed = std::strtod(v, &end);
    if (!*v || *end || !std::isfinite(parsed) || parsed < min || parsed >= below) {
      char range[64];
      if (std::isinf(below))
        std::snprintf(range, sizeof range, "a number >= %g", min);
      else
        std::snprintf(range, sizeof range, "a number in [%g, %g)", min, below);
      return badValue(flag, range, v);
    }
    target = parsed;
    return Status::success();
  };
}

Status applyFlagDefaults(const std::vector<Flag> &flags) {
  for (const Flag &flag : flags)
    if (!flag.defaultValue.empty())
      if (Status s = flag.set(flag.name, words(flag.defaultValue)); !s)
        return Error("the default of " + flag.name + " is refused: " + s.error().message());
  return Status::success();
}

Status parseFlags(int argc, const char *const *argv, const std::vector<Flag> &flags,
                  ParsedFlags &parsed) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto flag = std::find_if(flags.begin(), flags.end(),
                             [&](const Flag &f) { return f.name == arg; });
    if (flag == flags.end()) {
      if (arg.empty() || arg[0] != '-') {
        parsed.positional.push_back(arg);
        continue;
      }
      std::vector<std::string> known;
      for (const Flag &f : flags)
        known.push_back(f.name);
      return Error(unknownOptionMessage(arg, known));
    }
    std::vector<std::string> values;
    for (size_t k = 0, n = words(flag->value).size(); k < n; ++k) {
      if (i + 1 >= argc) {
        parsed.missingValue = true;
        return Error(arg + " needs a value");
      }
      values.push_back(argv[++i]);
    }
    if (Status s = flag->set(arg, values); !s)
      return s;
    if (flag->ends) {
      parsed.endedAt = arg;
      return Status::success();
    }
  }
  return Status::success();
}

std::string flagUsage(const std::vector<Flag> &flags, std::string_view header,
                      std::string_view footer) {
  constexpr size_t kHelpColumn = 21, kWidth = 80;
  std::string out(header);
  std::vector<std::string> groups;
  for (const Flag &flag : flags)
    if (!flag.group.empty() &&
        std::find(groups.begin(), groups.end(), flag.group) == groups.end())
      groups.push_back(flag.group);
  for (const std::string &group : groups) {
    out += "\n" + group + ":\n";
    for (const Flag &flag : flags) {
      if (flag.group != group)
        continue;
      std::string line = "  " + flag.name + (flag.value.empty() ? "" : " " + flag.value);
      line += line.size() + 1 < kHelpColumn ? std::string(kHelpColumn - line.size(), ' ') : "  ";
      std::vector<std::string> help = words(flag.help);
      if (!flag.defaultValue.empty()) // kept on one line
        help.push_back("(default " + flag.defaultValue + ")");
      size_t column = line.size();
      bool first = true;
      for (const std::string &word : help) {
        if (!first && column + 1 + word.size() > kWidth) {
          out += line + "\n";
          line = std::string(kHelpColumn, ' ') + word;
        } else {
          line += (first ? "" : " ") + word;
        }
        column = line.size();
        first = false;
      }
      out += line + "\n";
    }
  }
  return out + std::string(footer);
}

std::vector<std::string> flagsInUsage(std::string_view usage) {
  std::vector<std::string> flags;
  for (size_t i = 0; i + 2 < usage.size(); ++i) {
    if (usage[i] != '-' || usage[i + 1] != '-' || (i > 0 && usage[i - 1] != ' ' &&
                                                   usage[i - 1] != '[' && usage[i - 1] != '\n'))
      continue;
    size_t end = i + 2;
    while (end < usage.size() &&
           (std::isalnum(static_cast<unsigned char>(usage[end])) || usage[end] == '-'))
      ++end;
    if (end == i + 2)
      continue;
    std::string flag(usage.substr(i, end - i));
    if (std::find(flags.begin(), flags.end(), flag) == flags.end())
      flags.push_back(flag);
    i = end;
  }
  return flags;
}

namespace {

/// Edits (insertions, deletions, substitutions and swaps of two neighbours)
/// that turn `a` into `b`.
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

} // namespace

std::string unknownOptionMessage(const std::string &given, const std::vector<std::string> &known) {
  std::string flag = given.substr(0, given.find('='));
  // "-epochs" for "--epochs" is one edit; a bare word is no flag to match.
  const size_t allowed = std::max<size_t>(2, flag.size() / 4);
  std::string best;
  size_t bestDistance = allowed + 1;
  for (const std::string &candidate : known) {
    size_t distance = editDistance(flag, candidate);
    if (flag.size() >= 4 && candidate.rfind(flag, 0) == 0)
      distance = std::min<size_t>(distance, 1); // a prefix of exactly one is likely meant
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best.empty())
    return "unknown option '" + given + "' (--help lists the options)";
  return "unknown option '" + given + "'; did you mean '" + best + "'?";
}

} // namespace rn::train
