//===- state_digest.cpp - Compact fingerprints of a trainer's state -------===//

#include "runtime/train/state_digest.h"


#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

namespace rn::train {

Result<nlohmann::json> stateDigest(const Executor &executor) {
  nlohmann::json digest = nlohmann::json::object();
  for (const StateEntry &e : executor.program().state) {
    if (!e.slot)
      continue;
    Result<std::vector<float>> v = executor.readState(e.name);
    if (!v)
      return v.error();
    double sum = 0;
    uint64_t hash = 0xcbf29ce484222325ull;
    for (float x : *v) {
      sum += double(x) * double(x);
      uint32_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      for (int byte = 0; byte < 4; ++byte) {
        hash ^= (bits >> (8 * byte)) & 0xffu;
        hash *= 0x100000001b3ull;
      }
    }
    nlohmann::json samples = nlohmann::json::array();
    size_t n = v->size();
    for (size_t k = 0; k < 16 && n > 0; ++k) {
      size_t i = (k * (n - 1)) / 15;
      float x = (*v)[i];
      samples.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(std::to_string(x)));
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash);
    digest[e.name] = {{"role", e.role},     {"dtype", std::string(dtypeName(e.dtype))},
                      {"elements", n},      {"norm", std::sqrt(sum)},
                      {"samples", samples}, {"hash", hex}};
  }
  return digest;
}

Status writeJson(const std::string &path, const nlohmann::json &value) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    return Error("cannot write " + path);
  std::string text = value.dump(1);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    return Error("cannot write " + path);
  return Status::success();
}

Status perturbParameters(Executor &executor, double eps, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (const StateEntry &e : executor.program().state) {
    if (!e.slot || e.role != "parameter")
      continue;
    Result<std::vector<float>> v = executor.readState(e.name);
    if (!v)
      return v.error();
    for (float &x : *v)
      x = float(double(x) * (1.0 + eps * uniform(rng)));
    RN_RETURN_IF_ERROR(executor.writeState(e.name, *v));
  }
  return Status::success();
}

} // namespace rn::train
