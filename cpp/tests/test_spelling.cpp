// json/spelling.h against brute force. may_spell must never say no to a prefix of a spelling of
// the value (a "no" is final: the guard then lets the item go on), and should say no to what no
// spelling begins with (else the guard searches where it need not). Numbers: every number text
// up to 5 bytes against values, judged by trying every continuation up to 4 bytes. Whole values:
// random values, written in random spellings (white space, member order, escapes, number forms).
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "json/canon.h"
#include "json/spelling.h"

using stencil::JsonTree;

namespace {

const std::string kNumberBytes = "-015.eE+";  // the digits of the values below, and 0

// All strings over kNumberBytes of length n.
void strings_of(size_t n, std::vector<std::string>& out) {
  std::vector<std::string> level{""};
  for (size_t k = 0; k < n; ++k) {
    std::vector<std::string> next;
    for (const std::string& s : level)
      for (char c : kNumberBytes) next.push_back(s + c);
    level.swap(next);
  }
  out.insert(out.end(), level.begin(), level.end());
}

// Whether s begins some JSON number: the number grammar's states, byte by byte.
bool number_prefix(const std::string& s) {
  enum { Start, Minus, Zero, Int, Dot, Frac, Exp, ExpSign, ExpDigits } st = Start;
  for (char c : s) {
    const bool d = c >= '0' && c <= '9';
    switch (st) {
      case Start:
        st = c == '-' ? Minus : c == '0' ? Zero : d ? Int : ExpDigits;
        if (!d && c != '-') return false;
        break;
      case Minus:
        if (!d) return false;
        st = c == '0' ? Zero : Int;
        break;
      case Zero:
      case Int:
        if (d && st == Int) break;
        if (c == '.')
          st = Dot;
        else if (c == 'e' || c == 'E')
          st = Exp;
        else
          return false;
        break;
      case Dot:
      case Frac:
        if (d)
          st = Frac;
        else if (st == Frac && (c == 'e' || c == 'E'))
          st = Exp;
        else
          return false;
        break;
      case Exp:
        if (c == '+' || c == '-')
          st = ExpSign;
        else if (d)
          st = ExpDigits;
        else
          return false;
        break;
      case ExpSign:
      case ExpDigits:
        if (!d) return false;
        st = ExpDigits;
        break;
    }
  }
  return true;
}

// Whether s is a whole JSON number (the grammar of RFC 8259), by its own reading.
bool json_number(const std::string& s) {
  size_t i = 0;
  auto digits = [&] {
    size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (!(i < s.size() && s[i] >= '1' && s[i] <= '9') || !digits()) {
    return false;
  }
  if (i < s.size() && s[i] == '.' && (++i, !digits())) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

JsonTree tree(const std::string& json) {
  std::string canon;
  JsonTree t;
  CHECK(stencil::canonical_value(json, canon));
  CHECK(stencil::tree_of_canonical(canon, t));
  return t;
}

}  // namespace

TEST_CASE(may_spell_numbers_agree_with_brute_force) {
  std::vector<std::string> texts, tails;
  for (size_t n = 0; n <= 5; ++n) strings_of(n, texts);
  texts.erase(std::remove_if(texts.begin(), texts.end(), [](const std::string& t) { return !number_prefix(t); }),
              texts.end());
  for (size_t n = 0; n <= 3; ++n) strings_of(n, tails);
  const std::vector<std::string> values = {"0", "5", "-5", "15", "0.5", "150", "-0.015", "1e3", "10"};
  size_t said_yes = 0, checked = 0;
  for (const std::string& v : values) {
    const JsonTree want = tree(v);
    std::string want_canon;
    stencil::canonical_value(v, want_canon);
    for (const std::string& text : texts) {
      bool reaches = false;
      for (const std::string& tail : tails) {
        std::string canon;
        if (json_number(text + tail) && stencil::canonical_value(text + tail, canon) && canon == want_canon) {
          reaches = true;
          break;
        }
      }
      ++checked;
      const bool says = stencil::may_spell(text, want);
      said_yes += says;
      // never "no" where a continuation spells it; "yes" only where a longer one does
      CHECK_MSG(!reaches || says, "'" + text + "' can spell " + v + " but may_spell says no");
      if (says && !reaches) {
        // then a longer continuation spells it: digits, then an exponent of any size
        bool longer = false;
        static std::vector<std::string> mids;
        if (mids.empty())
          for (size_t n = 0; n <= 4; ++n) strings_of(n, mids);
        for (const std::string& mid : mids)
          for (int x = -12; x <= 12 && !longer; ++x)
            for (const std::string& e :
                 {std::string(), "e" + std::to_string(x), std::to_string(x), "+" + std::to_string(x)}) {
              std::string canon;
              const std::string whole = text + mid + e;
              if (json_number(whole) && stencil::canonical_value(whole, canon) && canon == want_canon) longer = true;
            }
        CHECK_MSG(longer, "'" + text + "' cannot spell " + v + " but may_spell says yes");
      }
    }
  }
  CHECK(checked > 5000);
  CHECK(said_yes > 100);
}

namespace {

struct Writer {
  std::mt19937 rng;
  std::string ws() {
    static const char* const kWs[] = {"", "", "", " ", "\n  ", "\t"};
    return kWs[rng() % 6];
  }
  std::string number(const std::string& digits, int exp, bool neg) {
    // digits x 10^exp, spelled one of several ways
    std::string out = neg ? "-" : "";
    switch (rng() % 4) {
      case 0:
        return out + digits + "e" + std::to_string(exp);
      case 1:
        return out + digits + "0e" + std::to_string(exp - 1);
      case 2:
        return out + digits + (exp == 0 ? "" : "E" + std::to_string(exp));
      default:
        return out + "0." + digits + "e" + std::to_string(exp + static_cast<int>(digits.size()));
    }
  }
  std::string string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (rng() % 3 == 0) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned char>(c));
        out += hex;
      } else if (c == '"' || c == '\\') {
        out += std::string("\\") + c;
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  // A random value (as compact JSON, for canonical_value) and one random spelling of it.
  void value(int depth, std::string& json, std::string& spelled) {
    const unsigned kind = rng() % (depth > 2 ? 4 : 6);
    if (kind == 0) {
      static const char* const kWords[] = {"true", "false", "null"};
      json = spelled = kWords[rng() % 3];
    } else if (kind == 1) {
      const std::string digits = std::to_string(1 + rng() % 99);
      const int exp = static_cast<int>(rng() % 5) - 2;
      const bool neg = rng() % 2;
      json = (neg ? "-" : "") + digits + "e" + std::to_string(exp);
      spelled = number(digits, exp, neg);
    } else if (kind == 2 || kind == 3) {
      std::string s;
      for (unsigned n = rng() % 4; n > 0; --n) s += "ab\"\\c"[rng() % 5];
      std::string esc;
      for (char c : s) esc += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
      json = "\"" + esc + "\"";
      spelled = string(s);
    } else if (kind == 4) {
      json = "[";
      spelled = "[" + ws();
      for (unsigned n = rng() % 3, k = 0; k < n; ++k) {
        std::string j, s;
        value(depth + 1, j, s);
        json += (k ? "," : "") + j;
        spelled += (k ? "," + ws() : "") + s + ws();
      }
      json += "]";
      spelled += "]";
    } else {
      std::vector<std::pair<std::string, std::string>> members;
      for (unsigned n = rng() % 3, k = 0; k < n; ++k) {
        std::string j, s;
        value(depth + 1, j, s);
        members.emplace_back("\"" + std::string(1, static_cast<char>('a' + k)) + "\":" + j,
                             string(std::string(1, static_cast<char>('a' + k))) + ws() + ":" + ws() + s);
      }
      json = "{";
      for (size_t k = 0; k < members.size(); ++k) json += (k ? "," : "") + members[k].first;
      json += "}";
      std::shuffle(members.begin(), members.end(), rng);
      spelled = "{" + ws();
      for (size_t k = 0; k < members.size(); ++k) spelled += (k ? "," + ws() : "") + members[k].second + ws();
      spelled += "}";
    }
  }
};

}  // namespace

TEST_CASE(may_spell_every_prefix_of_every_spelling_and_no_other_value) {
  Writer w{std::mt19937(7)};
  std::vector<std::pair<JsonTree, std::string>> written;
  for (int i = 0; i < 400; ++i) {
    std::string json, spelled;
    w.value(0, json, spelled);
    const JsonTree t = tree(json);
    std::string canon;
    REQUIRE(stencil::canonical_value(spelled, canon));
    for (size_t n = 0; n <= spelled.size(); ++n)
      CHECK_MSG(stencil::may_spell(std::string_view(spelled).substr(0, n), t),
                "prefix " + spelled.substr(0, n) + " of a spelling of " + json);
    written.emplace_back(t, spelled);
  }
  // a whole spelling of another value is no spelling of this one
  size_t other = 0;
  for (size_t i = 0; i + 1 < written.size(); ++i) {
    std::string a, b;
    stencil::canonical_value(written[i].second, a);
    stencil::canonical_value(written[i + 1].second, b);
    if (a == b) continue;
    ++other;
    CHECK_MSG(!stencil::may_spell(written[i + 1].second, written[i].first),
              written[i + 1].second + " spells " + written[i].second);
  }
  CHECK(other > 300);
}

// Speller::peek, which the item guard's search asks of every byte before it copies a speller:
// where it answers (not -1), feeding the byte to a copy answers the same, at every prefix of
// random spellings and of other values' spellings, for all 256 bytes; and it answers most of them.
TEST_CASE(speller_peek_agrees_with_feed) {
  Writer w{std::mt19937(11)};
  std::vector<std::pair<JsonTree, std::string>> written;
  for (int i = 0; i < 150; ++i) {
    std::string json, spelled;
    w.value(0, json, spelled);
    written.emplace_back(tree(json), spelled);
  }
  size_t asked = 0, answered = 0;
  for (size_t i = 0; i < written.size(); ++i)
    for (const std::string* text : {&written[i].second, &written[(i + 1) % written.size()].second})
      for (size_t n = 0; n <= text->size(); ++n) {
        stencil::Speller s(written[i].first);
        if (!s.feed(std::string_view(*text).substr(0, n))) break;
        for (int b = 0; b < 256; ++b) {
          const char c = static_cast<char>(b);
          const int said = s.peek(c);
          ++asked;
          if (said < 0) continue;
          ++answered;
          stencil::Speller t = s;
          CHECK_MSG(said == static_cast<int>(t.feed(c)),
                    "peek of byte " + std::to_string(b) + " after '" + text->substr(0, n) + "'");
        }
      }
  CHECK(asked > 100'000);
  CHECK(answered > asked * 2 / 3);
}

TEST_CASE(may_repeat_reads_items_across_commas) {
  std::vector<JsonTree> earlier = {tree("true"), tree("{\"a\":1}")};
  std::vector<const JsonTree*> e = {&earlier[0], &earlier[1]};
  CHECK(stencil::may_repeat("t", e));
  CHECK(stencil::may_repeat(" tru", e));
  CHECK(!stencil::may_repeat("f", e));
  CHECK(stencil::may_repeat("false, f", e));  // the tail's own complete item counts
  CHECK(!stencil::may_repeat("false, n", e));
  CHECK(!stencil::may_repeat("false]", e));  // the list closed
  CHECK(stencil::may_repeat("{\"a\" : 1.0", e));
  CHECK(!stencil::may_repeat("{\"a\":1,", e));
  CHECK(stencil::may_repeat("\"x,y\", {\"a", e));  // a comma inside a string ends no item
  stencil::ListLex lex;
  CHECK(!lex.read_to_comma("\"a,b"));
  CHECK(lex.in_string);
  CHECK(lex.read_to_comma("\", "));
  stencil::ListLex nested;
  CHECK(!nested.read_to_comma("[1,2"));
  CHECK(!nested.read_to_comma("]]"));  // closes the list before any comma
}
