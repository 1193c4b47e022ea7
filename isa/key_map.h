// Tables keyed by an exact key, a vector of integers (shape_key, piece_key, congruence_key):
// the hash only picks the bucket, the whole key decides. For lookups whose order of iteration
// does not matter; where it does (results built by walking a table), std::map.
//
// A key is stored packed, each integer as a zigzag LEB128 varint: the packing is injective
// (the varints of a sequence decode to that sequence alone), so packed keys are equal exactly
// when the keys are. Keys are mostly small numbers (shapes, dtypes, flags), so a packed key
// takes about a byte per integer instead of eight; the cost model's caches hold hundreds of
// thousands of them.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fracsim::isa {

// `v` packed as above, appended to `out`.
inline void pack_key(int64_t v, std::string& out) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out.push_back(static_cast<char>(z | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<char>(z));
}

inline void pack_key(const std::vector<int64_t>& key, std::string& out) {
  for (int64_t v : key) pack_key(v, out);
}

// A key packed once, for a lookup followed by an insertion on a miss; built whole from a
// vector or an integer at a time (push_back, as a vector is), without the vector.
class PackedKey {
 public:
  PackedKey() { bytes_.reserve(64); }
  explicit PackedKey(const std::vector<int64_t>& key) {
    bytes_.reserve(key.size() + key.size() / 4 + 1);
    pack_key(key, bytes_);
  }
  void push_back(int64_t v) { pack_key(v, bytes_); }
  const std::string& bytes() const& { return bytes_; }
  std::string&& bytes() && { return std::move(bytes_); }

 private:
  std::string bytes_;
};

template <typename V>
class KeyMap {
  using Map = std::unordered_map<std::string, V>;

 public:
  using iterator = typename Map::iterator;
  using const_iterator = typename Map::const_iterator;

  iterator find(const PackedKey& key) { return map_.find(key.bytes()); }
  const_iterator find(const PackedKey& key) const { return map_.find(key.bytes()); }
  iterator find(const std::vector<int64_t>& key) { return find(PackedKey(key)); }
  const_iterator find(const std::vector<int64_t>& key) const { return find(PackedKey(key)); }
  template <typename... Args>
  std::pair<iterator, bool> try_emplace(PackedKey&& key, Args&&... args) {
    return map_.try_emplace(std::move(key).bytes(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  std::pair<iterator, bool> try_emplace(const std::vector<int64_t>& key, Args&&... args) {
    return try_emplace(PackedKey(key), std::forward<Args>(args)...);
  }
  template <typename K, typename T>
  std::pair<iterator, bool> emplace(K&& key, T&& value) {
    return try_emplace(std::forward<K>(key), std::forward<T>(value));
  }
  iterator end() { return map_.end(); }
  const_iterator end() const { return map_.end(); }
  size_t size() const { return map_.size(); }

 private:
  Map map_;
};

}  // namespace fracsim::isa
