//===- safetensors.cpp - Reading and writing safetensors files ------------===//

#include "runtime/core/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rn {

using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Strict JSON
//===----------------------------------------------------------------------===//

namespace {

constexpr size_t kMaxJsonDepth = 64;

/// Forwards SAX events to nlohmann's DOM builder, rejecting duplicate keys
/// (the DOM would keep the last one silently) and deep nesting (copying or
/// printing a json value recurses, so depth is bounded before it exists).
/// Nothing throws: the first problem is kept and parsing stops.
class StrictSax {
public:
  explicit StrictSax(json &result) : dom_(result, /*allow_exceptions=*/false) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) {
    return dom_.number_integer(value);
  }
  bool number_unsigned(json::number_unsigned_t value) {
    return dom_.number_unsigned(value);
  }
  bool number_float(json::number_float_t value, const std::string &text) {
    return dom_.number_float(value, text);
  }
  bool string(std::string &value) { return dom_.string(value); }
  bool binary(json::binary_t &value) { return dom_.binary(value); }

  bool start_object(size_t size) {
    if (!enter())
      return false;
    keys_.emplace_back();
    return dom_.start_object(size);
  }
  bool key(std::string &name) {
    if (!keys_.back().insert(name).second)
      return fail("duplicate key \"" + name + "\"");
    return dom_.key(name);
  }
  bool end_object() {
    keys_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(size_t size) {
    if (!enter())
      return false;
    return dom_.start_array(size);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(size_t position, const std::string &,
                   const nlohmann::detail::exception &error) {
    // what() is "[json.exception.parse_error.101] parse error at line ...".
    std::string_view what = error.what();
    if (size_t bracket = what.find("] "); bracket != std::string_view::npos)
      what.remove_prefix(bracket + 2);
    return fail("syntax error at byte " + std::to_string(position) + ": " +
                std::string(what));
  }

  const std::string &problem() const { return problem_; }

private:
  bool enter() {
    if (++depth_ > kMaxJsonDepth)
      return fail("nesting deeper than " + std::to_string(kMaxJsonDepth) +
                  " levels");
    return true;
  }
  bool fail(std::string message) {
    if (problem_.empty())
      problem_ = std::move(message);
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<std::set<std::string>> keys_;
  size_t depth_ = 0;
  std::string problem_;
};

} // namespace

Result<json> parseJsonDocument(std::string_view text, std::string_view what) {
  try {
    json result;
    StrictSax sax(result);
    if (!json::sax_parse(text.begin(), text.end(), &sax))
      return Error(std::string(what) + ": invalid JSON: " +
                   (sax.problem().empty() ? "parse failed" : sax.problem()));
    return result;
  } catch (const std::bad_alloc &) {
    return Error(std::string(what) + ": out of memory while parsing JSON");
  } catch (const std::exception &error) {
    return Error(std::string(what) + ": invalid JSON: " + error.what());
  }
}

//===----------------------------------------------------------------------===//
// Shapes and types
//===----------------------------------------------------------------------===//

std::optional<uint64_t> elementCount(const std::vector<int64_t> &shape) {
  uint64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 ||
        __builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count))
      return std::nullopt;
  }
  return count;
}

std::optional<uint64_t> byteCount(DType dtype, const std::vector<int64_t> &shape) {
  std::optional<uint64_t> count = elementCount(shape);
  uint64_t bytes = 0;
  if (!count || __builtin_mul_overflow(*count, elementSize(dtype), &bytes))
    return std::nullopt;
  return bytes;
}

std::optional<uint64_t> jsonUnsigned(const json &value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string_view safetensorsDTypeName(DType type) {
  switch (type) {
  case DType::f32:
    return "F32";
  case DType::f16:
    return "F16";
  case DType::bf16:
    return "BF16";
  case DType::i32:
    return "I32";
  case DType::i1:
    return "BOOL";
  case DType::u8:
    return "U8";
  }
  return "?";
}

std::optional<DType> parseSafetensorsDType(std::string_view name) {
  for (DType type : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1, DType::u8})
    if (safetensorsDTypeName(type) == name)
      return type;
  return std::nullopt;
}

const SafetensorsEntry *Safetensors::find(std::string_view name) const {
  for (const SafetensorsEntry &entry : tensors)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// One header entry; `dataBytes` bounds its offsets.
Result<SafetensorsEntry> parseEntry(const std::string &name, const json &info,
                                    uint64_t dataBytes) {
  auto fail = [&](const std::string &message) {
    return Error("safetensors tensor \"" + name + "\": " + message);
  };
  if (!info.is_object())
    return fail("must be an object with dtype, shape and data_offsets");
  SafetensorsEntry entry;
  entry.name = name;

  auto dtype = info.find("dtype");
  if (dtype == info.end() || !dtype->is_string())
    return fail("missing string \"dtype\"");
  std::optional<DType> type = parseSafetensorsDType(dtype->get_ref<const std::string &>());
  if (!type)
    return fail("dtype \"" + dtype->get<std::string>() +
                "\" is not supported (F32, F16, BF16, I32, BOOL or U8)");
  entry.dtype = *type;

  auto shape = info.find("shape");
  if (shape == info.end() || !shape->is_array())
    return fail("missing array \"shape\"");
  for (const json &dim : *shape) {
    std::optional<uint64_t> size = jsonUnsigned(dim);
    if (!size || *size > uint64_t(std::numeric_limits<int64_t>::max()))
      return fail("shape dimensions must be non-negative integers below 2^63");
    entry.shape.push_back(static_cast<int64_t>(*size));
  }

  auto offsets = info.find("data_offsets");
  if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2)
    return fail("missing \"data_offsets\" [begin, end]");
  std::optional<uint64_t> begin = jsonUnsigned((*offsets)[0]);
  std::optional<uint64_t> end = jsonUnsigned((*offsets)[1]);
  if (!begin || !end)
    return fail("data_offsets must be non-negative integers");
  if (*begin > *end)
    return fail("data_offsets [" + std::to_string(*begin) + ", " +
                std::to_string(*end) + "] end before they begin");
  if (*end > dataBytes)
    return fail("data_offsets [" + std::to_string(*begin) + ", " +
                std::to_string(*end) + "] run past the data section of " +
                std::to_string(dataBytes) + " bytes");
  entry.offset = *begin;
  entry.bytes = *end - *begin;

  std::optional<uint64_t> expected = byteCount(entry.dtype, entry.shape);
  if (!expected)
    return fail("shape " + shapeString(entry.shape) + " is too large");
  if (entry.bytes != *expected)
    return fail("data_offsets hold " + std::to_string(entry.bytes) +
                " bytes, but " + std::string(safetensorsDTypeName(entry.dtype)) +
                " " + shapeString(entry.shape) + " needs " +
                std::to_string(*expected));
  return entry;
}

/// Parses `file`; the data section is moved out of `owned` when given (so a
/// file read from disk is not copied), else copied from `file`.
Result<Safetensors> parseImpl(std::string_view file, std::string *owned) {
  if (file.size() < 8)
    return Error("safetensors: the file has " + std::to_string(file.size()) +
                 " bytes, too short for the 8-byte header length");
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = headerBytes << 8 | static_cast<uint8_t>(file[i]);
  if (headerBytes > kMaxSafetensorsHeaderBytes)
    return Error("safetensors: header length " + std::to_string(headerBytes) +
                 " exceeds the limit of " +
                 std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  if (headerBytes > file.size() - 8)
    return Error("safetensors: header length " + std::to_string(headerBytes) +
                 " runs past the end of the file (" +
                 std::to_string(file.size() - 8) + " bytes follow the length)");
  std::string_view header = file.substr(8, headerBytes);
  if (header.empty() || header.front() != '{')
    return Error("safetensors: the header must be a JSON object starting with '{'");
  uint64_t dataStart = 8 + headerBytes;
  uint64_t dataBytes = file.size() - dataStart;

  Result<json> parsed = parseJsonDocument(header, "safetensors header");
  if (!parsed)
    return parsed.error();
  if (!parsed->is_object())
    return Error("safetensors header: must be a JSON object");

  Safetensors result;
  for (const auto &[name, info] : parsed->items()) {
    if (name == "__metadata__") {
      if (!info.is_object())
        return Error("safetensors header: __metadata__ must be an object of strings");
      for (const auto &[key, value] : info.items()) {
        if (!value.is_string())
          return Error("safetensors header: __metadata__ value \"" + key +
                       "\" must be a string");
        result.metadata.emplace(key, value.get<std::string>());
      }
      continue;
    }
    Result<SafetensorsEntry> entry = parseEntry(name, info, dataBytes);
    if (!entry)
      return entry.error();
    result.tensors.push_back(std::move(*entry));
  }

  // The ranges must tile the data section exactly, as the reference
  // implementation requires: an overlap aliases two tensors, a gap or tail
  // is unaccounted bytes.
  std::sort(result.tensors.begin(), result.tensors.end(),
            [](const SafetensorsEntry &a, const SafetensorsEntry &b) {
              return a.offset != b.offset ? a.offset < b.offset
                                          : a.bytes < b.bytes;
            });
  uint64_t covered = 0;
  const SafetensorsEntry *previous = nullptr;
  for (const SafetensorsEntry &entry : result.tensors) {
    if (entry.offset < covered)
      return Error("safetensors: tensors \"" + previous->name + "\" and \"" +
                   entry.name + "\" overlap (byte " +
                   std::to_string(entry.offset) + " of the data)");
    if (entry.offset > covered)
      return Error("safetensors: bytes " + std::to_string(covered) + " to " +
                   std::to_string(entry.offset) +
                   " of the data belong to no tensor (before \"" + entry.name +
                   "\")");
    covered = entry.offset + entry.bytes;
    previous = &entry;
  }
  if (covered != dataBytes)
    return Error("safetensors: the data section has " +
                 std::to_string(dataBytes) + " bytes, but the tensors cover " +
                 std::to_string(covered));

  if (owned) {
    owned->erase(0, dataStart);
    result.data = std::move(*owned);
  } else {
    result.data.assign(file.substr(dataStart));
  }
  return result;
}

} // namespace

Result<Safetensors> parseSafetensors(std::string_view file) {
  try {
    return parseImpl(file, nullptr);
  } catch (const std::bad_alloc &) {
    return Error("safetensors: out of memory");
  } catch (const std::exception &error) {
    return Error(std::string("safetensors: ") + error.what());
  }
}

Result<Safetensors> readSafetensors(const std::string &path) {
  try {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in)
      return Error(path + ": cannot open: " + std::strerror(errno));
    std::streamoff size = in.tellg();
    if (size < 0)
      return Error(path + ": cannot determine the file size");
    std::string file(static_cast<size_t>(size), '\0');
    in.seekg(0);
    if (!in.read(file.data(), size))
      return Error(path + ": read failed");
    std::string_view view = file;
    Result<Safetensors> result = parseImpl(view, &file);
    if (!result)
      return result.error().withContext(path);
    return result;
  } catch (const std::bad_alloc &) {
    return Error(path + ": out of memory");
  } catch (const std::exception &error) {
    return Error(path + ": " + error.what());
  }
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

/// The 8-byte length and the padded header for `tensors`.
Result<std::string>
buildHeader(const std::vector<TensorData> &tensors,
            const std::map<std::string, std::string> &metadata) {
  json header = json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorData &tensor : tensors) {
    auto fail = [&](const std::string &message) {
      return Error("writing safetensors tensor \"" + tensor.name + "\": " + message);
    };
    if (tensor.name.empty() || tensor.name == "__metadata__")
      return fail("invalid tensor name");
    if (header.contains(tensor.name))
      return fail("duplicate tensor name");
    std::optional<uint64_t> size = byteCount(tensor.dtype, tensor.shape);
    if (!size)
      return fail("invalid shape " + shapeString(tensor.shape));
    uint64_t bytes = *size;
    if (bytes != tensor.bytes)
      return fail("has " + std::to_string(tensor.bytes) + " bytes, but " +
                  std::string(dtypeName(tensor.dtype)) + " " +
                  shapeString(tensor.shape) + " needs " + std::to_string(bytes));
    if (bytes != 0 && !tensor.data)
      return fail("has no data");
    header[tensor.name] = {{"dtype", safetensorsDTypeName(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  // ensure_ascii keeps the header valid UTF-8 whatever the names hold;
  // the padding (spaces, allowed after the JSON) aligns the data to 8.
  std::string text = header.dump(-1, ' ', /*ensure_ascii=*/true);
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>(uint64_t(text.size()) >> (8 * i));
  return out + text;
}

Status writeAll(int fd, const void *data, size_t bytes) {
  const char *next = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t written = ::write(fd, next, bytes);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return Error(std::string("write failed: ") + std::strerror(errno));
    }
    next += written;
    bytes -= static_cast<size_t>(written);
  }
  return Status::success();
}

} // namespace

Result<std::string>
serializeSafetensors(const std::vector<TensorData> &tensors,
                     const std::map<std::string, std::string> &metadata) {
  try {
    Result<std::string> file = buildHeader(tensors, metadata);
    if (!file)
      return file;
    for (const TensorData &tensor : tensors)
      file->append(static_cast<const char *>(tensor.data), tensor.bytes);
    return file;
  } catch (const std::exception &error) {
    return Error(std::string("writing safetensors: ") + error.what());
  }
}

Status writeSafetensors(const std::string &path,
                        const std::vector<TensorData> &tensors,
                        const std::map<std::string, std::string> &metadata) {
  Result<std::string> header = [&]() -> Result<std::string> {
    try {
      return buildHeader(tensors, metadata);
    } catch (const std::exception &error) {
      return Error(std::string("writing safetensors: ") + error.what());
    }
  }();
  if (!header)
    return header.error().withContext(path);

  // The temporary lives next to the target so that rename() stays within
  // one file system and is atomic.
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Error(temporary + ": cannot create: " + std::strerror(errno));
  Status status = writeAll(fd, header->data(), header->size());
  for (size_t i = 0; status.ok() && i < tensors.size(); ++i)
    status = writeAll(fd, tensors[i].data, tensors[i].bytes);
  if (status.ok() && ::fsync(fd) != 0)
    status = Error(std::string("fsync failed: ") + std::strerror(errno));
  if (::close(fd) != 0 && status.ok())
    status = Error(std::string("close failed: ") + std::strerror(errno));
  if (status.ok() && ::rename(temporary.c_str(), path.c_str()) != 0)
    status = Error(std::string("cannot rename the temporary file over it: ") +
                   std::strerror(errno));
  if (!status.ok()) {
    ::unlink(temporary.c_str());
    return status.error().withContext(path);
  }
  return Status::success();
}

} // namespace rn
