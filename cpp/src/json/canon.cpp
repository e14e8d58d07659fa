#include "json/canon.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

namespace stencil {

namespace {

constexpr int kMaxDepth = 1000;

// An output that keeps nothing: JsonReader checks what it reads without building its form.
struct Discard {
  void operator+=(char) {}
};

struct JsonReader {
  std::string_view s;
  size_t i = 0;

  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  template <class Out>
  static void put_utf8(Out& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool hex4(uint32_t& v) {
    if (s.size() - i < 4) return false;
    v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s[i++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else
        return false;
    }
    return true;
  }
  // A string's decoded bytes (into Discard: the string checked and passed over).
  template <class Out>
  bool string(Out& out) {
    ws();
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    while (i < s.size()) {
      char c = s[i++];
      if (c == '"') return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s.size()) return false;
      char e = s[i++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && s.size() - i >= 6 && s[i] == '\\' && s[i + 1] == 'u') {
            size_t save = i;
            i += 2;
            uint32_t lo;
            if (hex4(lo) && lo >= 0xDC00 && lo < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              i = save;
            }
          }
          put_utf8(out, cp);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  // Numbers become sign, significant digits and exponent: equal values, equal forms.
  template <class Out>
  bool number(Out& out) {
    ws();
    size_t start = i;
    bool neg = false;
    if (i < s.size() && s[i] == '-') {
      neg = true;
      ++i;
    }
    std::string digits;
    long long exp = 0;
    auto digit = [&] { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
    // JSON's grammar: an integer part without leading zeros, a fraction of one digit or more
    if (!digit() || (s[i] == '0' && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9')) return false;
    while (digit()) digits += s[i++];
    if (i < s.size() && s[i] == '.') {
      ++i;
      if (!digit()) return false;
      while (digit()) {
        digits += s[i++];
        --exp;
      }
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      bool eneg = false;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
      long long e = 0;
      bool edig = false;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        if (e < 1'000'000'000) e = e * 10 + (s[i] - '0');
        ++i;
        edig = true;
      }
      if (!edig) return false;
      exp += eneg ? -e : e;
    }
    (void)start;
    if constexpr (std::is_same_v<Out, Discard>) {
      return true;
    } else {
      size_t first = digits.find_first_not_of('0');
      if (first == std::string::npos) {
        out = "#0";
        return true;
      }
      digits.erase(0, first);
      size_t last = digits.find_last_not_of('0');
      exp += static_cast<long long>(digits.size() - 1 - last);
      digits.erase(last + 1);
      out = std::string(neg ? "#-" : "#") + digits + "e" + std::to_string(exp);
      return true;
    }
  }
  // What value() accepts, its canonical form not built: member_keys reads the keys alone.
  bool skip(int depth) {
    if (depth > kMaxDepth) return false;
    ws();
    if (i >= s.size()) return false;
    Discard none;
    const char c = s[i];
    if (c == '"') return string(none);
    if (c == '[' || c == '{') {
      const char close = c == '[' ? ']' : '}';
      ++i;
      if (eat(close)) return true;
      do {
        if (c == '{' && (!string(none) || !eat(':'))) return false;
        if (!skip(depth + 1)) return false;
      } while (eat(','));
      return eat(close);
    }
    for (const char* w : {"true", "false", "null"}) {
      const size_t n = std::char_traits<char>::length(w);
      if (s.substr(i, n) != w) continue;
      i += n;
      return true;
    }
    return number(none);
  }
  static std::string framed(const std::string& x) { return std::to_string(x.size()) + ":" + x; }
  bool value(std::string& out, int depth) {
    if (depth > kMaxDepth) return false;
    ws();
    if (i >= s.size()) return false;
    char c = s[i];
    if (c == '"') {
      std::string str;
      if (!string(str)) return false;
      out = "s" + str;
      return true;
    }
    if (c == '[') {
      ++i;
      out = "[";
      if (eat(']')) return true;
      do {
        std::string v;
        if (!value(v, depth + 1)) return false;
        out += framed(v);
      } while (eat(','));
      return eat(']');
    }
    if (c == '{') {
      ++i;
      std::vector<std::pair<std::string, std::string>> members;
      if (!eat('}')) {
        do {
          std::string k, v;
          if (!string(k) || !eat(':') || !value(v, depth + 1)) return false;
          members.emplace_back(std::move(k), std::move(v));
        } while (eat(','));
        if (!eat('}')) return false;
      }
      std::sort(members.begin(), members.end());
      out = "{";
      for (auto& [k, v] : members) out += framed(k) + framed(v);
      return true;
    }
    auto word = [&](const char* w, const char* canon) {
      size_t n = std::char_traits<char>::length(w);
      if (s.substr(i, n) != w) return false;
      i += n;
      out = canon;
      return true;
    };
    if (c == 't') return word("true", "t");
    if (c == 'f') return word("false", "f");
    if (c == 'n') return word("null", "n");
    return number(out);
  }
};

}  // namespace

// The bytes of the escape at raw[i] (raw[i] == '\\'), or 0 when it may not be complete yet.
static size_t escape_length(std::string_view raw, size_t i) {
  const size_t left = raw.size() - i;
  if (left < 2) return 0;
  if (raw[i + 1] != 'u') return 2;
  if (left < 6) return 0;
  const bool high = (raw[i + 2] == 'd' || raw[i + 2] == 'D') && raw[i + 3] != 0 && std::strchr("89abAB", raw[i + 3]);
  if (!high) return 6;
  // A low surrogate may join it: wait while what follows could still begin one.
  const std::string_view after = raw.substr(i + 6);
  const bool may_follow = (after.empty() || after[0] == '\\') && (after.size() < 2 || after[1] == 'u');
  if (after.size() < 6 && may_follow) return 0;
  return after.size() >= 6 && after[0] == '\\' && after[1] == 'u' ? 12 : 6;
}

size_t json_space_prefix(std::string_view text) {
  size_t at = 0;
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) ++at;
  return at;
}

// (one pass over the body: find_first_of asks memchr of the two bytes for every byte)
bool json_plain_body(std::string_view body) {
  for (char c : body)
    if (c == '"' || c == '\\') return false;
  return true;
}

bool json_whole_string(std::string_view raw, std::string& scratch, std::string_view* text) {
  raw.remove_prefix(json_space_prefix(raw));
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"' && json_plain_body(raw.substr(1, raw.size() - 2))) {
    *text = raw.substr(1, raw.size() - 2);
    return true;
  }
  size_t used = 0;
  bool closed = false;
  if (!json_string_prefix(raw, scratch, &used, &closed) || !closed || used != raw.size()) return false;
  *text = scratch;
  return true;
}

bool json_string_prefix(std::string_view raw, std::string& decoded, size_t* consumed, bool* closed) {
  decoded.clear();  // (a caller's buffer kept between calls must not carry the last key into this one)
  *closed = false;
  if (raw.empty() || raw[0] != '"') return false;
  size_t i = 1;
  std::string unit;
  while (i < raw.size()) {
    const char c = raw[i];
    if (c == '"') {
      *closed = true;
      ++i;
      break;
    }
    if (c != '\\') {
      decoded += c;
      ++i;
      continue;
    }
    const size_t n = escape_length(raw, i);
    if (n == 0) break;
    // the escape alone, as a string, through the one decoder
    const std::string quoted = "\"" + std::string(raw.substr(i, n)) + "\"";
    JsonReader r{quoted};
    unit.clear();
    if (!r.string(unit)) return false;
    decoded += unit;
    i += n;
  }
  *consumed = i;
  return true;
}

bool canonical_values(std::string_view text, std::vector<std::string>& out) {
  JsonReader r{text};
  r.ws();
  while (r.i < text.size()) {
    std::string v;
    if (!r.value(v, 0)) return false;
    out.push_back(std::move(v));
    if (!r.eat(',')) break;
    r.ws();
  }
  r.ws();
  return r.i == text.size();
}

bool member_keys(std::string_view text, std::vector<std::string>& keys, std::vector<uint32_t>* key_offsets) {
  JsonReader r{text};
  r.ws();
  while (r.i < text.size()) {
    std::string k;
    if (key_offsets) key_offsets->push_back(static_cast<uint32_t>(r.i));
    if (!r.string(k) || !r.eat(':') || !r.skip(0)) return false;
    keys.push_back(std::move(k));
    if (!r.eat(',')) break;
    r.ws();
  }
  r.ws();
  return r.i == text.size();
}

bool leading_member_key(std::string_view text, std::string& key, uint32_t* key_offset, uint32_t* key_end) {
  JsonReader r{text};
  r.ws();
  if (key_offset) *key_offset = static_cast<uint32_t>(r.i);
  if (!r.string(key)) return false;
  if (key_end) *key_end = static_cast<uint32_t>(r.i);
  if (r.eat(':')) return true;
  return r.i == text.size();  // the key alone: a check that runs when the key lexeme ends
}

bool canonical_value(std::string_view text, std::string& out) {
  JsonReader r{text};
  if (!r.value(out, 0)) return false;
  r.ws();
  return r.i == text.size();
}

bool object_keys(std::string_view text, std::vector<std::string>& keys, std::vector<uint32_t>* key_offsets) {
  JsonReader r{text};
  if (!r.eat('{')) return false;
  if (r.eat('}')) return true;
  do {
    std::string k, v;
    r.ws();
    if (key_offsets) key_offsets->push_back(static_cast<uint32_t>(r.i));
    if (!r.string(k) || !r.eat(':') || !r.value(v, 0)) return false;
    keys.push_back(std::move(k));
  } while (r.eat(','));
  return r.eat('}');
}

}  // namespace stencil
