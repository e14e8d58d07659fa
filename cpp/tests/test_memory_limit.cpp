// support/memory_limit.h: charges add up by kind; past the limit one pass frees the least
// recently used grammars' state first, then the shared caches, the grammar in use last, down to
// three quarters of the limit; small grammars are left alone; a matcher call that alone builds
// more than half the limit fails with BudgetError. The limit is the process's: each case
// restores the limit and gives back what it charged.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "stencil/errors.h"
#include "support/memory_limit.h"

using stencil::EvictableCache;
using stencil::MemoryKind;
using stencil::MemoryLimit;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

// A cache holding `bytes`, charged to the limit's count while registered. A grammar's lazy state is
// dropped whole; a shared mask cache trims what it is asked for.
class TestCache : public EvictableCache {
 public:
  TestCache(size_t bytes, uint64_t used, bool grammar)
      : bytes_(bytes),
        used_(used),
        grammar_(grammar),
        kind_(grammar ? stencil::kLexerMemory : stencil::kSharedMaskMemory) {
    MemoryLimit::get().add(this, grammar);
    MemoryLimit::get().charge(kind_, static_cast<int64_t>(bytes));
  }
  ~TestCache() override {
    MemoryLimit::get().remove(this);
    MemoryLimit::get().charge(kind_, -static_cast<int64_t>(bytes_));
  }
  size_t releasable_bytes() const override { return bytes_; }
  uint64_t last_used() const override { return used_; }
  size_t release(size_t want, std::vector<std::shared_ptr<const void>>&) override {
    const size_t got = grammar_ ? bytes_ : std::min(want, bytes_);
    bytes_ -= got;
    released_ += got;
    MemoryLimit::get().charge(kind_, -static_cast<int64_t>(got));
    return got;
  }
  void measure() override { ++measured_; }
  size_t bytes_, released_ = 0, measured_ = 0;

 private:
  uint64_t used_;
  bool grammar_;
  MemoryKind kind_;
};

// Restores the process limit when a case ends, however it ends.
struct LimitGuard {
  size_t old;
  explicit LimitGuard(size_t limit) : old(MemoryLimit::get().set_limit(limit)) {}
  ~LimitGuard() { MemoryLimit::get().set_limit(old); }
};

class Source : public stencil::CallMemorySource {
 public:
  size_t built = 0;
  mutable int64_t counted = 0;
  size_t built_bytes() const override { return built; }
  void count_built(int64_t bytes) const override {
    counted += bytes;
    MemoryLimit::get().charge(stencil::kLexerMemory, bytes);
  }
};

}  // namespace

TEST_CASE(memory_limit_counts_by_kind) {
  MemoryLimit& memory = MemoryLimit::get();
  REQUIRE_EQ(memory.usage().grammars, size_t(0));  // alone under the limit: the sums below are exact
  const size_t before = memory.total();
  LimitGuard limit(512 * kMiB);
  {
    TestCache g(3 * kMiB, 1, true), s(5 * kMiB, 1, false);
    memory.charge(stencil::kGrammarMemory, 7 * kMiB);
    const auto u = memory.usage();
    CHECK_EQ(u.total - before, 15 * kMiB);
    CHECK_EQ(u.bytes[stencil::kSharedMaskMemory], 5 * kMiB);
    CHECK_EQ(u.grammars, size_t(1));
    CHECK_EQ(u.vocabularies, size_t(1));
    CHECK_EQ(u.limit, 512 * kMiB);
    CHECK_EQ(g.measured_, size_t(1));  // usage() measures each grammar afresh
    memory.charge(stencil::kGrammarMemory, -static_cast<int64_t>(7 * kMiB));
  }
  CHECK_EQ(memory.total(), before);
  CHECK_EQ(memory.usage().grammars, size_t(0));
  CHECK_EQ(memory.set_limit(0), 512 * kMiB);  // 0: the default
  CHECK_EQ(memory.limit(), MemoryLimit::default_limit());
}

TEST_CASE(memory_limit_evicts_least_recently_used_first) {
  MemoryLimit& memory = MemoryLimit::get();
  REQUIRE_EQ(memory.total(), size_t(0));
  LimitGuard limit(64 * kMiB);
  const auto before = memory.usage();
  TestCache g1(10 * kMiB, 1, true), g2(10 * kMiB, 2, true), g3(10 * kMiB, 3, true);
  TestCache tiny(kMiB / 2, 0, true);  // under the floor (1 MiB here): never worth dropping
  TestCache shared(10 * kMiB, 4, false);
  memory.enforce();  // 40.5 MiB: under the limit, nothing happens
  CHECK_EQ(g1.released_ + shared.released_, size_t(0));
  TestCache last(20 * kMiB, 9, true);  // 60.5 MiB
  memory.charge(stencil::kLexerMemory, 8 * kMiB);  // 68.5 MiB: over, counted but not releasable
  memory.enforce();
  // Down to 48 MiB of the 60.5 releasable: g1 and g2 whole (least recently used), no more.
  CHECK_EQ(g1.released_, 10 * kMiB);
  CHECK_EQ(g2.released_, 10 * kMiB);
  CHECK_EQ(g3.released_, size_t(0));
  CHECK_EQ(shared.released_ + last.released_ + tiny.released_, size_t(0));
  CHECK(memory.total() <= 64 * kMiB);
  const auto after = memory.usage();
  CHECK_EQ(after.evictions - before.evictions, uint64_t(2));
  memory.charge(stencil::kLexerMemory, -static_cast<int64_t>(8 * kMiB));
}

TEST_CASE(memory_limit_trims_shared_caches_before_the_grammar_in_use) {
  MemoryLimit& memory = MemoryLimit::get();
  REQUIRE_EQ(memory.total(), size_t(0));
  LimitGuard limit(64 * kMiB);
  const auto before = memory.usage();
  TestCache old(10 * kMiB, 1, true), shared(30 * kMiB, 2, false);
  TestCache in_use(30 * kMiB, 5, true);  // 70 MiB: 22 over three quarters of the limit
  memory.enforce();
  CHECK_EQ(old.released_, 10 * kMiB);
  CHECK_EQ(shared.released_, 12 * kMiB);  // what was still missing, no more
  CHECK_EQ(in_use.released_, size_t(0));
  const auto after = memory.usage();
  CHECK_EQ(after.evictions - before.evictions, uint64_t(1));
  CHECK_EQ(after.trims - before.trims, uint64_t(1));
  CHECK_EQ(after.total, 48 * kMiB);
}

TEST_CASE(memory_limit_fails_a_call_that_builds_too_much) {
  MemoryLimit& memory = MemoryLimit::get();
  LimitGuard limit(64 * kMiB);
  stencil::CallMemory::check();  // no call on this thread: nothing to do
  Source source;
  source.built = 4 * kMiB;
  {
    stencil::CallMemory call(&source, "test_call");
    source.built += 2 * kMiB;
    stencil::CallMemory::check();  // 2 MiB built: charged, fine
    CHECK_EQ(source.counted, int64_t(2 * kMiB));
    CHECK(!call.tripped());
    source.built += 31 * kMiB;  // 33 MiB in this call: over half the limit
    std::string what;
    try {
      stencil::CallMemory::check();
    } catch (const stencil::BudgetError& e) {
      what = e.what();
    }
    CHECK(what.rfind("test_call built 33 MB", 0) == 0);
    CHECK(call.tripped());
  }
  stencil::CallMemory::check();  // the call is over: nothing watches this thread any more
  CHECK_EQ(source.counted, int64_t(33 * kMiB));
  memory.charge(stencil::kLexerMemory, -source.counted);
}
