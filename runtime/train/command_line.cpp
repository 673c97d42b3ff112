//===- command_line.cpp - What the tools say about a mistyped flag --------===//

#include "runtime/train/command_line.h"

#include <algorithm>
#include <cctype>

namespace rn::train {

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
