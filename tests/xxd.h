// Reads an `xxd` dump (tests/data/pages/*.xxd: real ring-buffer pages) back to bytes.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace exitscope::testing {

inline std::vector<uint8_t> FromXxd(const std::string& path) {
  std::ifstream in(path);
  std::vector<uint8_t> out;
  std::string line;
  while (std::getline(in, line)) {
    std::string hex = line.substr(line.find(':') + 2, 39);
    for (size_t i = 0; i + 1 < hex.size(); ++i) {
      if (hex[i] == ' ' || hex[i + 1] == ' ') continue;
      out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
      ++i;
    }
  }
  return out;
}

}  // namespace exitscope::testing
