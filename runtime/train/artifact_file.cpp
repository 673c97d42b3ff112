//===- artifact_file.cpp - What a file given as an artifact is ------------===//

#include "runtime/train/artifact_file.h"

#include "runtime/core/safetensors.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sys/stat.h>

namespace rn::train {

bool looksLikeMlirText(std::string_view head) {
  if (head.substr(0, 3) == "\xEF\xBB\xBF") // a UTF-8 byte order mark
    head.remove_prefix(3);
  size_t start = 0;
  while (start < head.size() && std::isspace(static_cast<unsigned char>(head[start])))
    ++start;
  head.remove_prefix(start);
  for (std::string_view opening : {"module", "func.func", "rn.", "\"builtin.module\"", "//"})
    if (head.substr(0, opening.size()) == opening)
      return true;
  return false;
}

uint64_t safetensorsHeaderLength(std::string_view head) {
  if (head.size() < 9 || head[8] != '{')
    return 0;
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = length << 8 | static_cast<unsigned char>(head[size_t(i)]);
  return length >= 2 && length <= kMaxSafetensorsHeaderBytes ? length : 0;
}

RnFileKind rnFileKind(std::string_view header) {
  if (header.find("\"rn-program\"") != std::string_view::npos)
    return RnFileKind::artifact;
  if (header.find("\"rn.checkpoint\"") != std::string_view::npos)
    return RnFileKind::checkpoint;
  return RnFileKind::other;
}

Status checkArtifactFile(const std::string &path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return Error(path + " is a directory, not an artifact: give the .rnx file rn-compile wrote "
                        "(a data folder goes to --data)");
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::success(); // the loader names the path and the reason
  char buffer[256];
  file.read(buffer, sizeof buffer);
  std::string_view head(buffer, size_t(file.gcount()));
  if (looksLikeMlirText(head))
    return Error(path + ": this is a model (MLIR text), not a compiled artifact; compile it "
                        "with rn-compile first");
  // A safetensors file. A truncated or damaged artifact still starts so;
  // the loader says more. rn-run's checkpoints are safetensors files too,
  // with their own metadata (after the tensors of a large model: the whole
  // header is read): the likeliest wrong safetensors file to be given.
  if (const uint64_t length = safetensorsHeaderLength(head)) {
    std::string header(size_t(length), '\0');
    file.clear();
    file.seekg(8);
    file.read(header.data(), std::streamsize(length));
    header.resize(size_t(file.gcount()));
    if (rnFileKind(header) == RnFileKind::checkpoint)
      return Error(path + " is an rn-run checkpoint, not an artifact: resume it with "
                          "--resume " + path + " on the artifact it was trained from");
    return Status::success();
  }
  std::string shown;
  for (size_t i = 0; i < head.size() && i < 8; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%s%02x", i ? " " : "", static_cast<unsigned char>(head[i]));
    shown += hex;
  }
  return Error(path + ": not an RN artifact (" +
               (head.empty() ? std::string("the file is empty")
                             : "it starts with the bytes " + shown) +
               "); an artifact, written by rn-compile, is a safetensors file: an 8-byte "
               "little-endian header length, then a JSON header starting with '{' whose "
               "metadata holds \"rn.format\": \"rn-program\"");
}

} // namespace rn::train
