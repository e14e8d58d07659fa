#include "json/spelling.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "json/canon.h"

namespace stencil {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_number_char(char c) { return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

size_t skip_ws(std::string_view s, size_t i) {
  while (i < s.size() && is_ws(s[i])) ++i;
  return i;
}

// One framed part `len:bytes` of a canonical form at s[i]; advances i past it.
bool read_frame(std::string_view s, size_t& i, std::string_view& part) {
  size_t colon = s.find(':', i);
  if (colon == std::string_view::npos || colon == i) return false;
  size_t len = 0;
  for (size_t k = i; k < colon; ++k) {
    if (!is_digit(s[k]) || len > s.size()) return false;
    len = len * 10 + static_cast<size_t>(s[k] - '0');
  }
  if (len > s.size() - colon - 1) return false;
  part = s.substr(colon + 1, len);
  i = colon + 1 + len;
  return true;
}

// A number being written (`text`, no byte after it yet) against a canonical number: whether some
// continuation has its value. Number forms are free (an exponent may come), so only the
// significant digits and, once the exponent began, its value decide.
bool number_may_equal(std::string_view text, std::string_view canon) {
  size_t i = 0;
  const bool neg = i < text.size() && text[i] == '-';
  if (neg) ++i;
  std::string digits;  // integer and fraction digits
  size_t frac = 0;
  while (i < text.size() && is_digit(text[i])) digits += text[i++];
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && is_digit(text[i]); ++i, ++frac) digits += text[i];
  const bool in_exp = i < text.size() && (text[i] == 'e' || text[i] == 'E');
  char exp_sign = 0;
  std::string exp;
  if (in_exp) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_sign = text[i++];
    while (i < text.size() && is_digit(text[i])) exp += text[i++];
  }
  if (i != text.size()) return true;  // not a number prefix: no verdict
  const size_t first = digits.find_first_not_of('0');
  if (canon == "#0") return first == std::string::npos;
  // canon: "#" ["-"] D "e" X, the value D x 10^X with D free of leading and trailing zeros
  const bool cneg = canon.size() > 1 && canon[1] == '-';
  const size_t d_from = cneg ? 2 : 1, e_at = canon.find('e', d_from);
  if (e_at == std::string_view::npos) return true;
  const std::string_view d = canon.substr(d_from, e_at - d_from);
  if (!text.empty() && neg != cneg) return false;
  if (first == std::string::npos) return !in_exp;  // a zero mantissa so far: only before the exponent
  const std::string_view sig = std::string_view(digits).substr(first);
  if (!in_exp) {
    for (size_t k = 0; k < sig.size(); ++k)
      if (sig[k] != (k < d.size() ? d[k] : '0')) return false;
    return true;
  }
  const size_t last = sig.find_last_not_of('0');
  if (sig.substr(0, last + 1) != d) return false;
  // sig = D x 10^z, the mantissa sig x 10^-frac: the exponent must be X - z + frac
  const long long z = static_cast<long long>(sig.size() - last - 1);
  const long long need =
      std::strtoll(std::string(canon.substr(e_at + 1)).c_str(), nullptr, 10) - z + static_cast<long long>(frac);
  if ((exp_sign == '-' && need > 0) || ((exp_sign == '+' || !exp.empty()) && exp_sign != '-' && need < 0)) return false;
  const size_t nz = exp.find_first_not_of('0');
  if (nz == std::string::npos) return true;  // more exponent digits may come
  if (need == 0) return false;
  const std::string want = std::to_string(need < 0 ? -need : need);
  return want.compare(0, exp.size() - nz, exp, nz) == 0 && exp.size() - nz <= want.size();
}

// One JSON value at s[i] (white space skipped before): where it ends, and whether the text holds
// all of it (false: the text ends inside it, or it is not a value: `bad`).
struct Extent {
  size_t end;
  bool complete, bad = false;
};

Extent scan_value(std::string_view s, size_t i) {
  const char c = s[i];
  if (c == '"' || c == '[' || c == '{') {
    int depth = 0;
    bool in_string = false;
    for (size_t j = i; j < s.size(); ++j) {
      const char x = s[j];
      if (in_string) {
        if (x == '\\')
          ++j;
        else if (x == '"')
          in_string = false;
        if (!in_string && depth == 0) return {j + 1, true};
      } else if (x == '"') {
        in_string = true;
      } else if (x == '[' || x == '{') {
        ++depth;
      } else if ((x == ']' || x == '}') && --depth == 0) {
        return {j + 1, true};
      }
    }
    return {s.size(), false};
  }
  if (c == 't' || c == 'f' || c == 'n') {
    const std::string_view word = c == 't' ? "true" : c == 'f' ? "false" : "null";
    const size_t have = std::min(word.size(), s.size() - i);
    if (s.substr(i, have) != word.substr(0, have)) return {i, false, true};
    return {i + have, have == word.size()};
  }
  size_t j = i;
  while (j < s.size() && is_number_char(s[j])) ++j;
  if (j == i) return {i, false, true};
  return {j, j < s.size()};  // a number at the end of the text may go on
}

}  // namespace

bool tree_of_canonical(std::string_view canon, JsonTree& out) {
  if (canon.empty()) return false;
  out = JsonTree{};
  out.kind = canon[0];
  switch (out.kind) {
    case 's':
      out.atom.assign(canon.substr(1));
      return true;
    case '#':
      out.atom.assign(canon);
      return true;
    case 't':
    case 'f':
    case 'n':
      return canon.size() == 1;
    case '[':
    case '{': {
      std::string_view part;
      for (size_t i = 1; i < canon.size();) {
        if (out.kind == '{') {
          if (!read_frame(canon, i, part)) return false;
          out.keys.emplace_back(part);
        }
        out.items.emplace_back();
        if (!read_frame(canon, i, part) || !tree_of_canonical(part, out.items.back())) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

bool may_spell(std::string_view text, const JsonTree& value) {
  Speller s(value);
  return s.feed(text);
}

Speller::Speller(const JsonTree& value) : value_(&value) { stack_.push_back(Frame{&value, Phase::Value}); }

bool Speller::feed(std::string_view text) {
  for (char c : text)
    if (!feed(c)) return false;
  return true;
}

// The top frame's value is whole: back to its container (or done).
void Speller::complete() {
  stack_.pop_back();
  if (stack_.empty()) {
    done_ = true;
    return;
  }
  Frame& f = stack_.back();
  f.phase = f.node->kind == '[' ? Phase::ArrayAfter : Phase::ObjectAfter;
  ++f.k;
}

bool Speller::die() {
  alive_ = false;
  stack_.clear();
  return false;
}

bool Speller::feed(char c) {
  while (alive_ && !done_) {
    Frame& f = stack_.back();
    const bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    switch (f.phase) {
      case Phase::Value:
        return ws || begin(c);
      case Phase::String:
        return string_byte(c);
      case Phase::Number:
        if (is_number_char(c)) {
          f.text.push_back(c);
          return number_may_equal(f.text, f.node->atom) || die();
        } else {
          std::string canon;
          if (!canonical_value(f.text, canon) || canon != f.node->atom) return die();
          complete();  // and c goes to the container
          continue;
        }
      case Phase::Word: {
        const std::string_view word = f.node->kind == 't' ? "true" : f.node->kind == 'f' ? "false" : "null";
        if (c != word[f.k]) return die();
        if (++f.k == word.size()) complete();
        return true;
      }
      case Phase::ArrayOpen:
      case Phase::ArrayComma:
        if (ws) return true;
        if (f.phase == Phase::ArrayOpen && c == ']') return f.node->items.empty() ? (complete(), true) : die();
        if (f.k >= f.node->items.size()) return die();
        stack_.push_back(Frame{&f.node->items[f.k], Phase::Value});
        continue;
      case Phase::ArrayAfter:
      case Phase::ObjectAfter: {  // after an item or a member: a comma if more follow, else the close
        const bool array = f.phase == Phase::ArrayAfter;
        const size_t n = array ? f.node->items.size() : f.node->keys.size();
        if (ws) return true;
        if (c == ',' && f.k < n) return f.phase = array ? Phase::ArrayComma : Phase::ObjectComma, true;
        if (c == (array ? ']' : '}') && f.k == n) return complete(), true;
        return die();
      }
      case Phase::ObjectOpen:
      case Phase::ObjectComma:
        if (ws) return true;
        if (f.phase == Phase::ObjectOpen && c == '}') return f.node->keys.empty() ? (complete(), true) : die();
        if (c != '"' || f.k >= f.node->keys.size()) return die();
        f.phase = Phase::Key;
        f.text.clear();
        return true;
      case Phase::Key:
        return key_byte(c);
      case Phase::Colon:
        if (ws) return true;
        if (c != ':') return die();
        f.used[f.key] = 1;
        f.phase = Phase::ObjectValue;
        stack_.push_back(Frame{&f.node->items[f.key], Phase::Value});
        return true;
      case Phase::ObjectValue:
        return die();  // never on top: its value's frame is
    }
  }
  return alive_;
}

int Speller::peek(char c) const {
  if (!alive_) return 0;
  if (done_) return 1;
  const Frame& f = stack_.back();
  const bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';
  const size_t n = f.node->kind == '{' ? f.node->keys.size() : f.node->items.size();
  switch (f.phase) {
    case Phase::String: {
      if (!f.text.empty() || c == '\\') return -1;
      const std::string& want = f.node->atom;
      return c == '"' ? f.k == want.size() : f.k < want.size() && want[f.k] == c;
    }
    case Phase::Word: {
      const std::string_view word = f.node->kind == 't' ? "true" : f.node->kind == 'f' ? "false" : "null";
      return c == word[f.k];
    }
    case Phase::ArrayAfter:
      return ws || (c == ',' && f.k < n) || (c == ']' && f.k == n);
    case Phase::ObjectAfter:
      return ws || (c == ',' && f.k < n) || (c == '}' && f.k == n);
    case Phase::Colon:
      return ws || c == ':';
    case Phase::Number:
      if (!is_number_char(c)) return -1;  // the number ends: its value and what follows decide
      return number_may_equal(f.text + c, f.node->atom);
    case Phase::Value:
      return ws ? 1 : peek_begin(*f.node, c);
    case Phase::ArrayOpen:
    case Phase::ArrayComma:
      if (ws) return 1;
      if (f.phase == Phase::ArrayOpen && c == ']') return n == 0;
      return f.k < n ? peek_begin(f.node->items[f.k], c) : 0;
    case Phase::ObjectOpen:
    case Phase::ObjectComma:
      if (ws) return 1;
      if (f.phase == Phase::ObjectOpen && c == '}') return n == 0;
      return c == '"' && f.k < n;
    case Phase::Key:
      return peek_key(f, c);
    default:
      return -1;
  }
}

// peek at a value's first byte (Speller::begin).
int Speller::peek_begin(const JsonTree& node, char c) {
  switch (node.kind) {
    case 's':
      return c == '"';
    case '#':
      return c == '-' || is_digit(c) ? -1 : 0;
    case '[':
      return c == '[';
    case '{':
      return c == '{';
    default:
      return c == (node.kind == 't' ? 't' : node.kind == 'f' ? 'f' : 'n');
  }
}

// peek inside a key (Speller::key_byte) where the key so far and c are plain ASCII text: some key
// not written yet begins with it (or, at the closing quote, is it). Escapes and other bytes: -1.
int Speller::peek_key(const Frame& f, char c) {
  const auto plain = [](char x) { return x >= 0x20 && x < 0x7f && x != '\\'; };
  if (!plain(c) || !std::all_of(f.text.begin(), f.text.end(), plain)) return -1;
  if (c == '"') return unused_key(f, f.text) < f.node->keys.size();
  std::string key = f.text;
  key.push_back(c);
  return unused_key_begins(f, key);
}

// Whether some key of the object not written yet begins with `prefix`.
bool Speller::unused_key_begins(const Frame& f, std::string_view prefix) {
  const std::vector<std::string>& keys = f.node->keys;
  for (auto at = std::lower_bound(keys.begin(), keys.end(), prefix);
       at != keys.end() && at->compare(0, prefix.size(), prefix) == 0; ++at)
    if (!f.used[static_cast<size_t>(at - keys.begin())]) return true;
  return false;
}

// The index of the object's key `key` where it is not written yet; else the key count.
size_t Speller::unused_key(const Frame& f, std::string_view key) {
  const std::vector<std::string>& keys = f.node->keys;
  const auto at = std::lower_bound(keys.begin(), keys.end(), key);
  const size_t k = static_cast<size_t>(at - keys.begin());
  return at != keys.end() && *at == key && !f.used[k] ? k : keys.size();
}

// The first byte of the value at the top.
bool Speller::begin(char c) {
  if (peek_begin(*stack_.back().node, c) == 0) return die();
  Frame& f = stack_.back();
  switch (f.node->kind) {
    case 's':
      f.phase = Phase::String;
      return true;
    case '#':
      f.phase = Phase::Number;
      f.text.assign(1, c);
      return number_may_equal(f.text, f.node->atom) || die();
    case '[':
      f.phase = Phase::ArrayOpen;
      return true;
    case '{':
      f.phase = Phase::ObjectOpen;
      f.used.assign(f.node->keys.size(), 0);
      return true;
    default:
      f.phase = Phase::Word;
      f.k = 1;
      return true;
  }
}

// A byte of a string value: its decoded bytes so far (f.k of them) match the value's, an escape
// being written waits in f.text.
bool Speller::string_byte(char c) {
  Frame& f = stack_.back();
  const std::string& want = f.node->atom;
  if (f.text.empty() && c != '\\') {
    if (c == '"') return f.k == want.size() ? (complete(), true) : die();
    if (f.k >= want.size() || want[f.k] != c) return die();
    ++f.k;
    return true;
  }
  f.text.push_back(c);
  std::string decoded;
  size_t consumed = 0;
  bool closed = false;
  if (!json_string_prefix("\"" + f.text, decoded, &consumed, &closed)) return die();
  if (consumed <= 1) return true;  // the escape is not whole yet
  if (want.compare(f.k, decoded.size(), decoded) != 0 || f.k + decoded.size() > want.size()) return die();
  f.k += static_cast<uint32_t>(decoded.size());
  // what the escape did not take (a quote or the next byte after a lone surrogate) is read again
  const std::string rest = f.text.substr(consumed - 1);
  f.text.clear();
  if (closed) return f.k == want.size() ? (complete(), true) : die();
  for (char r : rest)
    if (!string_byte(r)) return false;
  return true;
}

// A byte of a member's key: some key not written yet begins with the decoded bytes so far; the
// closing quote picks it.
bool Speller::key_byte(char c) {
  Frame& f = stack_.back();
  f.text.push_back(c);
  std::string key;
  size_t consumed = 0;
  bool closed = false;
  if (!json_string_prefix("\"" + f.text, key, &consumed, &closed)) return die();
  if (!closed) return unused_key_begins(f, key) || die();
  const size_t k = unused_key(f, key);
  if (k == f.node->keys.size() || consumed != f.text.size() + 1) return die();
  f.key = static_cast<uint32_t>(k);
  f.phase = Phase::Colon;
  return true;
}

bool read_list(std::string_view text, ListProgress& out) {
  out = ListProgress{};
  for (size_t i = 0;;) {
    i = skip_ws(text, i);
    out.last_from = i;
    if (i == text.size()) return true;
    if (text[i] == ']') {
      out.closed = true;
      return true;
    }
    const Extent e = scan_value(text, i);
    if (e.bad) return false;
    if (!e.complete) return true;
    const size_t j = skip_ws(text, e.end);
    if (j == text.size()) return true;
    if (text[j] == ']') {
      out.closed = true;
      return true;
    }
    if (text[j] != ',') return false;
    out.done.emplace_back();
    if (!canonical_value(text.substr(i, e.end - i), out.done.back())) return false;
    i = j + 1;
  }
}

bool ListLex::read_to_comma(std::string_view bytes) {
  for (char c : bytes) {
    if (in_string) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth < 0) return false;  // the list closed
    } else if (c == ',' && depth == 0) {
      return true;
    }
  }
  return false;
}

bool may_repeat(std::string_view tail, const std::vector<const JsonTree*>& earlier) {
  ListProgress p;
  if (!read_list(tail, p)) return false;  // no JSON list: no item of it is being written
  if (p.closed) return false;
  const std::string_view last = tail.substr(p.last_from);
  for (const JsonTree* t : earlier)
    if (may_spell(last, *t)) return true;
  JsonTree t;
  for (const std::string& canon : p.done)
    if (tree_of_canonical(canon, t) && may_spell(last, t)) return true;
  return false;
}

}  // namespace stencil
