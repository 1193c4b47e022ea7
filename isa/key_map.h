// Tables keyed by an exact key, a vector of integers (shape_key, piece_key, congruence_key):
// the hash only picks the bucket, the whole key decides. For lookups whose order of iteration
// does not matter; where it does (results built by walking a table), std::map.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include <boost/container_hash/hash.hpp>

namespace fracsim::isa {

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& k) const {
    return boost::hash_range(k.begin(), k.end());
  }
};

template <typename V>
using KeyMap = std::unordered_map<std::vector<int64_t>, V, KeyHash>;

}  // namespace fracsim::isa
