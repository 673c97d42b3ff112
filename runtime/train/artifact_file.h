//===- artifact_file.h - What a file given as an artifact is ----*- C++ -*-===//
//
// A training artifact (.rnx, docs/artifact.md) is a safetensors file: an
// 8-byte little-endian header length, a JSON header starting with '{'
// whose metadata holds "rn.format": "rn-program", then the tensors. People
// pass other files where an artifact belongs, most often the model's MLIR
// that rn-compile turns into one; the loader's message about a header
// length would not tell them what to do, so this check says what the file
// is first.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_ARTIFACT_FILE_H
#define RN_RUNTIME_TRAIN_ARTIFACT_FILE_H

#include "runtime/core/status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace rn::train {

/// Whether `head` (a file's first bytes) reads as MLIR text: after
/// whitespace it starts with `module`, `func.func`, `rn.`,
/// `"builtin.module"` or a `//` comment.
bool looksLikeMlirText(std::string_view head);

/// The length of the safetensors header `head` (a file's first bytes)
/// starts with: 8 little-endian bytes, then the header's '{'. 0 when it
/// does not start so, or names a length outside [2, kMaxSafetensorsHeaderBytes].
uint64_t safetensorsHeaderLength(std::string_view head);

/// Which of RN's safetensors files a header (its JSON) belongs to: a
/// training artifact ("rn-program"), an rn-run checkpoint
/// ("rn.checkpoint"), or another.
enum class RnFileKind { artifact, checkpoint, other };
RnFileKind rnFileKind(std::string_view header);

/// An error saying what `path` is when it cannot be an artifact: MLIR text
/// ("... a model (MLIR text), not a compiled artifact; compile it with
/// rn-compile first"), or a file that does not start like a safetensors
/// file (the error says how an artifact starts, and how this one does).
/// Success for a file that starts like a safetensors file, and for one that
/// cannot be read: the loader reports what is wrong with those.
Status checkArtifactFile(const std::string &path);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_ARTIFACT_FILE_H
