// Typed access to a flat test memory, shared by the tests of the reference semantics.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace fracsim::testing {

template <typename T>
void put(std::vector<uint8_t>& mem, uint64_t addr, const std::vector<T>& v) {
  std::memcpy(mem.data() + addr, v.data(), v.size() * sizeof(T));
}

template <typename T>
std::vector<T> get(const std::vector<uint8_t>& mem, uint64_t addr, size_t n) {
  std::vector<T> v(n);
  std::memcpy(v.data(), mem.data() + addr, n * sizeof(T));
  return v;
}

// An f32's bits, and the f32 of given bits (+0/-0 and NaN payloads are compared as bits).
inline uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
inline float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

}  // namespace fracsim::testing
