// A small test harness for the core's unit tests (no dependency to install on a fresh machine):
// TEST_CASE registers a function, CHECK* count a check and report a failure with its file:line
// and go on, REQUIRE* end the test case on failure. main.cpp runs the cases (a name filter as its
// arguments) and exits non-zero when a check failed, a case threw, or a case ran past its time.
#pragma once
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>

namespace stencil_test {

using CaseFn = void (*)();
struct Register {
  Register(const char* name, CaseFn fn, const char* file, int line);
};

// Counts a check; reports `what` at file:line when !ok. Returns ok.
bool check(bool ok, const char* file, int line, const std::string& what);
// Thrown by REQUIRE to end the current case (counted as failed already).
struct Abort {};

template <typename T>
std::string show(const T& v) {
  std::ostringstream out;
  if constexpr (std::is_same_v<T, std::string>) {
    out << '"' << v << '"';
  } else if constexpr (std::is_pointer_v<T>) {
    out << static_cast<const void*>(v);
  } else {
    out << v;
  }
  return out.str();
}

template <typename A, typename B>
bool check_eq(const A& a, const B& b, const char* text, const char* file, int line) {
  const bool ok = a == b;
  return check(ok, file, line, ok ? "" : std::string(text) + " : " + show(a) + " != " + show(b));
}

}  // namespace stencil_test

#define STENCIL_TEST_CAT2(a, b) a##b
#define STENCIL_TEST_CAT(a, b) STENCIL_TEST_CAT2(a, b)

#define TEST_CASE(name)                                                                                   \
  static void name();                                                                                     \
  static const stencil_test::Register STENCIL_TEST_CAT(register_, name)(#name, name, __FILE__, __LINE__); \
  static void name()

// Variadic: a condition may hold commas outside parentheses (a braced initializer, a template).
#define CHECK(...) stencil_test::check(static_cast<bool>(__VA_ARGS__), __FILE__, __LINE__, "CHECK(" #__VA_ARGS__ ")")
// With a message that says which of many cases failed (built only on failure).
#define CHECK_MSG(cond, msg)                                  \
  ((cond) ? stencil_test::check(true, __FILE__, __LINE__, "") \
          : stencil_test::check(false, __FILE__, __LINE__, std::string("CHECK(" #cond ") ") + (msg)))
#define CHECK_EQ(a, b) stencil_test::check_eq((a), (b), "CHECK_EQ(" #a ", " #b ")", __FILE__, __LINE__)
#define REQUIRE(...)                                   \
  if (!CHECK(__VA_ARGS__)) throw stencil_test::Abort { \
    }
#define REQUIRE_EQ(a, b)                           \
  if (!CHECK_EQ(a, b)) throw stencil_test::Abort { \
    }

// `expr` must throw an exception of type `type` (or a subclass); any other outcome fails.
#define CHECK_THROWS_AS(expr, type)                                                         \
  do {                                                                                      \
    std::string stencil_test_got = "nothing";                                               \
    try {                                                                                   \
      (void)(expr);                                                                         \
    } catch (const type&) {                                                                 \
      stencil_test_got.clear();                                                             \
    } catch (const std::exception& e) {                                                     \
      stencil_test_got = std::string(typeid(e).name()) + ": " + e.what();                   \
    } catch (...) {                                                                         \
      stencil_test_got = "a non-std exception";                                             \
    }                                                                                       \
    stencil_test::check(stencil_test_got.empty(), __FILE__, __LINE__,                       \
                        "CHECK_THROWS_AS(" #expr ", " #type ") threw " + stencil_test_got); \
  } while (0)
