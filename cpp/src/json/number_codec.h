// The byte layout of number states' keys (number_encode): fixed-width integers and
// length-prefixed strings, read back with bounds checks (keys also come from serialized grammars).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

namespace stencil::number_codec {

inline void put_i64(std::string& out, int64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

inline void put_str(std::string& out, const std::string& s) {
  put_i64(out, static_cast<int64_t>(s.size()));
  out += s;
}

struct In {
  const std::string& data;
  size_t pos = 0;
  bool ok = true;
  int64_t i64() {
    if (data.size() - pos < 8) return ok = false, 0;
    int64_t v;
    std::copy(data.data() + pos, data.data() + pos + 8, reinterpret_cast<char*>(&v));
    pos += 8;
    return v;
  }
  uint8_t u8() {
    if (pos >= data.size()) return ok = false, 0;
    return static_cast<uint8_t>(data[pos++]);
  }
  std::string str() {
    const int64_t n = i64();
    if (!ok || n < 0 || static_cast<uint64_t>(n) > data.size() - pos) return ok = false, std::string();
    std::string s = data.substr(pos, static_cast<size_t>(n));
    pos += static_cast<size_t>(n);
    return s;
  }
};

}  // namespace stencil::number_codec
