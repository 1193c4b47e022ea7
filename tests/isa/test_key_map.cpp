// Exact-key tables: keys stored packed (zigzag LEB128), equal exactly when the keys are.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "isa/key_map.h"

using namespace fracsim::isa;

namespace {

std::string packed(const std::vector<int64_t>& key) {
  std::string s;
  pack_key(key, s);
  return s;
}

std::string bytes(std::initializer_list<unsigned> b) {
  std::string s;
  for (unsigned c : b) s.push_back(static_cast<char>(c));
  return s;
}

}  // namespace

TEST_CASE("a key packs as zigzag varints, derived by hand") {
  // zigzag: 0 -> 0, -1 -> 1, 1 -> 2, 64 -> 128 (0x80 0x01), -65 -> 129 (0x81 0x01),
  // 300 -> 600 = 0b100'1011000 (0xd8 0x04).
  CHECK(packed({0, -1, 1, 64, -65, 300}) ==
        bytes({0x00, 0x01, 0x02, 0x80, 0x01, 0x81, 0x01, 0xd8, 0x04}));
  // The extremes take ten bytes: 2^64 - 1 and 2^64 - 2, seven bits at a time.
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  CHECK(packed({lo}) == bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  CHECK(packed({hi}) == bytes({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  CHECK(packed({}).empty());
}

TEST_CASE("keys that differ pack differently, however their integers split") {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  // Keys whose integers would run together if a varint did not end itself: {64} packs as
  // 0x80 0x01, which a key must not be read as two integers; {0, 0} and {0} differ in length.
  const std::vector<std::vector<int64_t>> keys = {
      {},           {0},     {0, 0},  {1},        {-1},     {64},
      {0, 1},       {1, 0},  {128},   {0, 128},   {-64},    {-65},
      {63},         {lo},    {hi},    {lo, hi},   {hi, lo}, {1, 2, 3},
      {1, 2, 3, 0}, {16383}, {16384}, {-8193, 0}, {2, 1},   {4611686018427387904}};
  std::set<std::string> seen;
  for (const auto& k : keys) CHECK(seen.insert(packed(k)).second);

  KeyMap<size_t> map;
  for (size_t i = 0; i < keys.size(); ++i) CHECK(map.emplace(keys[i], i).second);
  CHECK(map.size() == keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = map.find(keys[i]);
    REQUIRE(it != map.end());
    CHECK(it->second == i);
  }
  CHECK(map.find(std::vector<int64_t>{0, 0, 0}) == map.end());
  // A second insertion under an equal key keeps the first value, as std::unordered_map does.
  CHECK_FALSE(map.emplace(PackedKey({1, 2, 3}), size_t{99}).second);
  CHECK(map.find(PackedKey({1, 2, 3}))->second == 17);
}
