// The batch mask calls: fill_next_token_bitmasks (many matchers' rows at once, on the core's
// threads, the GIL released once), fill_next_token_bitmasks_async (the same started on a
// thread of its own, so that the caller can run the forward pass meanwhile without handing the
// GIL back and forth: on a GPU, launching the forward pass is Python work), and
// fill_draft_bitmasks (the rows of every draft position of a speculative step in one call).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

#include "bindings/args.h"
#include "bindings/bindings.h"
#include "bindings/mask_args.h"
#include "matcher/batch.h"
#include "stencil/errors.h"
#include "stencil/matcher.h"

namespace nb = nanobind;
using namespace stencil;
using stencil::bindings::bitmask_row;
using stencil::bindings::check_bitmask;
using stencil::bindings::check_remaining;
using stencil::bindings::int_arg;
using stencil::bindings::MaskRows;

namespace {

// The Python exception object that `e` becomes at the boundary, by the same translators: it is
// thrown out of a throwaway bound function and caught as the Python error it turned into.
nb::object python_exception(const std::exception_ptr& e) {
  nb::object raise = nb::cpp_function([e]() { std::rethrow_exception(e); });
  try {
    raise();
  } catch (nb::python_error& err) {
    return nb::borrow(err.value());
  }
  return nb::none();  // unreachable: raise() always throws
}

nb::list python_errors(const std::vector<std::exception_ptr>& errors) {
  nb::list out;
  for (const auto& e : errors) out.append(e ? python_exception(e) : nb::none());
  return out;
}

// The matchers of a batch call, each a Matcher, none twice.
std::vector<Matcher*> check_matchers(const std::vector<nb::handle>& items) {
  std::vector<Matcher*> out;
  // Taken as handles: a Matcher* list would let None through as a null pointer.
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    Matcher* mt = nullptr;
    if (!nb::try_cast<Matcher*>(items[i], mt) || mt == nullptr)
      throw nb::type_error(("matchers[" + std::to_string(i) + "] is " +
                            std::string(nb::type_name(items[i].type()).c_str()) + ", not a stencil.Matcher")
                               .c_str());
    out.push_back(mt);
  }
  std::vector<Matcher*> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw UsageError("the same matcher appears twice in one batch");
  return out;
}

// fill_draft_bitmasks' requests, checked: token ids in the vocabulary, drafts within what each
// matcher can roll back, every row in the bitmask and no row shared by two requests.
std::vector<DraftRows> check_drafts(const std::vector<Matcher*>& matchers, const std::vector<nb::handle>& drafts,
                                    const std::vector<int64_t>& first_rows, const std::vector<nb::handle>& remaining,
                                    const MaskRows& bm) {
  const size_t n = matchers.size();
  if (drafts.size() != n || first_rows.size() != n || (!remaining.empty() && remaining.size() != n))
    throw UsageError("drafts, first_rows and remaining_tokens need one entry per matcher (" + std::to_string(n) +
                     "), got " + std::to_string(drafts.size()) + ", " + std::to_string(first_rows.size()) + " and " +
                     std::to_string(remaining.size()));
  std::vector<DraftRows> out(n);
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (size_t i = 0; i < n; ++i) {
    DraftRows& r = out[i];
    r.matcher = matchers[i];
    if (!nb::isinstance<nb::sequence>(drafts[i]) || nb::isinstance<nb::str>(drafts[i]))
      throw nb::type_error(("drafts[" + std::to_string(i) + "] must be a list of token ids").c_str());
    for (nb::handle t : drafts[i]) {
      r.draft.push_back(int_arg(t, "drafts", "an int in [0, vocab_size)", static_cast<int64_t>(i)));
      r.matcher->grammar().vocab().check_id(r.draft.back());
    }
    const int keep = r.matcher->max_rollback();
    if (keep >= 0 && r.draft.size() > static_cast<size_t>(keep))
      throw UsageError("drafts[" + std::to_string(i) + "] has " + std::to_string(r.draft.size()) +
                       " tokens, more than the matcher's max_rollback=" + std::to_string(keep));
    r.first_row = first_rows[i];
    r.remaining = remaining.empty() ? -1 : check_remaining(remaining[i]);
    const int64_t last = r.first_row + static_cast<int64_t>(r.draft.size());
    bitmask_row(bm, r.first_row);
    bitmask_row(bm, last);
    spans.emplace_back(r.first_row, last);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first <= spans[i - 1].second)
      throw UsageError("two requests of one batch would fill the same bitmask row (" + std::to_string(spans[i].first) +
                       ")");
  return out;
}

// A batch's arguments, checked: every matcher a Matcher, once; every row in range, once.
struct Batch {
  std::vector<Matcher*> matchers;
  std::vector<int64_t> rows;
  MaskRows bm;
  std::vector<int64_t> remaining;
};

Batch check_batch(const std::vector<nb::handle>& items, nb::handle bitmask, std::vector<int64_t> indices,
                  const std::vector<nb::handle>& remaining_tokens) {
  Batch b;
  b.matchers = check_matchers(items);
  if (indices.empty())
    for (size_t i = 0; i < b.matchers.size(); ++i) indices.push_back(static_cast<int64_t>(i));
  if (indices.size() != b.matchers.size())
    throw UsageError("indices has " + std::to_string(indices.size()) + " entries for " +
                     std::to_string(b.matchers.size()) + " matchers");
  if (!remaining_tokens.empty() && remaining_tokens.size() != b.matchers.size())
    throw UsageError("remaining_tokens has " + std::to_string(remaining_tokens.size()) + " entries for " +
                     std::to_string(b.matchers.size()) + " matchers");
  for (const auto& r : remaining_tokens) b.remaining.push_back(check_remaining(r));
  b.bm = check_bitmask(bitmask);
  for (int64_t i : indices) bitmask_row(b.bm, i);
  std::vector<int64_t> seen_rows = indices;
  std::sort(seen_rows.begin(), seen_rows.end());
  if (std::adjacent_find(seen_rows.begin(), seen_rows.end()) != seen_rows.end())
    throw UsageError("two matchers of one batch would fill the same bitmask row");
  b.rows = std::move(indices);
  return b;
}

// A batch fill running on a thread of its own. It holds the matchers' exclusive use and the
// Python objects it reads and writes (the matchers, the bitmask) until it has finished; its
// destructor waits for it (the thread never takes the GIL, so waiting with it held is safe).
class PendingFill {
 public:
  PendingFill(Batch batch, int num_threads, nb::object keep_matchers, nb::object keep_bitmask)
      : batch_(std::move(batch)), keep_matchers_(std::move(keep_matchers)), keep_bitmask_(std::move(keep_bitmask)) {
    for (Matcher* mt : batch_.matchers) uses_.emplace_back(*mt);
    worker_ = std::thread([this, num_threads] {
      const auto t0 = std::chrono::steady_clock::now();
      try {
        fill_masks_parallel(batch_.matchers, batch_.rows, batch_.bm.data, batch_.bm.words, num_threads,
                            batch_.remaining, &errors_);
      } catch (...) {  // only the bookkeeping can throw here (out of memory): wait() raises it
        fatal_ = std::current_exception();
      }
      seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      done_.store(true, std::memory_order_release);
    });
  }
  ~PendingFill() { join(); }
  PendingFill(const PendingFill&) = delete;
  PendingFill& operator=(const PendingFill&) = delete;

  nb::list wait() {
    {
      nb::gil_scoped_release release;
      join();
    }
    if (fatal_) std::rethrow_exception(fatal_);
    return python_errors(errors_);
  }
  bool done() const { return done_.load(std::memory_order_acquire); }
  double seconds() const { return done() ? seconds_ : 0.0; }

 private:
  void join() {
    if (worker_.joinable()) worker_.join();
    uses_.clear();  // the matchers are free again once the fill is over
  }
  Batch batch_;
  nb::object keep_matchers_, keep_bitmask_;
  std::deque<Matcher::Exclusive> uses_;
  std::vector<std::exception_ptr> errors_;
  std::exception_ptr fatal_;
  double seconds_ = 0;
  std::atomic<bool> done_{false};
  std::thread worker_;
};

}  // namespace

void bind_batch(nb::module_& m) {
  m.def(
      "fill_next_token_bitmasks",
      [](const std::vector<nb::handle>& items, nb::handle bitmask, std::vector<int64_t> indices, int num_threads,
         const std::vector<nb::handle>& remaining_tokens, bool return_errors) -> nb::object {
        Batch b = check_batch(items, bitmask, std::move(indices), remaining_tokens);
        std::deque<Matcher::Exclusive> uses;
        for (Matcher* mt : b.matchers) uses.emplace_back(*mt);
        std::vector<std::exception_ptr> errors;
        {
          nb::gil_scoped_release release;
          fill_masks_parallel(b.matchers, b.rows, b.bm.data, b.bm.words, num_threads, b.remaining,
                              return_errors ? &errors : nullptr);
        }
        if (!return_errors) return nb::none();
        return python_errors(errors);
      },
      nb::arg("matchers"), nb::arg("bitmask").none(), nb::arg("indices"), nb::arg("num_threads"),
      nb::arg("remaining_tokens") = std::vector<nb::handle>{}, nb::arg("return_errors") = false,
      nb::sig(
          "def fill_next_token_bitmasks(matchers: collections.abc.Sequence[object], bitmask: numpy.typing.NDArray, "
          "indices: collections.abc.Sequence[int], num_threads: int, remaining_tokens: "
          "collections.abc.Sequence[int | None] = [], return_errors: bool = False) -> list[Exception | None] | None"));

  nb::class_<PendingFill>(m, "PendingFill",
                          "A batch of masks being filled on a thread of the core "
                          "(stencil.fill_next_token_bitmasks_async).")
      .def("wait", &PendingFill::wait,
           "Wait for the fill to end; one entry per matcher: None, or the exception that matcher raised "
           "(its row is then undefined and the matcher is as it was before the call).")
      .def_prop_ro("done", &PendingFill::done, "Whether the fill has ended (wait() then returns at once).")
      .def_prop_ro("seconds", &PendingFill::seconds, "How long the fill took, once done (0.0 before).");

  m.def(
      "fill_next_token_bitmasks_async",
      [](nb::list items, nb::handle bitmask, std::vector<int64_t> indices, int num_threads,
         const std::vector<nb::handle>& remaining_tokens) {
        std::vector<nb::handle> handles;
        for (nb::handle h : items) handles.push_back(h);
        Batch b = check_batch(handles, bitmask, std::move(indices), remaining_tokens);
        return new PendingFill(std::move(b), num_threads, nb::borrow(items), nb::borrow(bitmask));
      },
      nb::arg("matchers"), nb::arg("bitmask").none(), nb::arg("indices"), nb::arg("num_threads"),
      nb::arg("remaining_tokens") = std::vector<nb::handle>{}, nb::rv_policy::take_ownership,
      nb::sig("def fill_next_token_bitmasks_async(matchers: list[object], bitmask: numpy.typing.NDArray, "
              "indices: collections.abc.Sequence[int], num_threads: int, remaining_tokens: "
              "collections.abc.Sequence[int | None] = []) -> PendingFill"));

  m.def(
      "fill_draft_bitmasks",
      [](const std::vector<nb::handle>& items, const std::vector<nb::handle>& drafts, nb::handle bitmask,
         const std::vector<int64_t>& first_rows, int num_threads, const std::vector<nb::handle>& remaining_tokens) {
        const std::vector<Matcher*> matchers = check_matchers(items);
        const MaskRows bm = check_bitmask(bitmask);
        std::vector<DraftRows> requests = check_drafts(matchers, drafts, first_rows, remaining_tokens, bm);
        std::deque<Matcher::Exclusive> uses;
        for (Matcher* mt : matchers) uses.emplace_back(*mt);
        {
          nb::gil_scoped_release release;
          fill_draft_masks(requests, bm.data, bm.words, num_threads);
        }
        nb::list refused;
        for (const DraftRows& r : requests)
          refused.append(r.refused_at < 0 ? nb::object(nb::none()) : nb::object(nb::int_(r.refused_at)));
        return refused;
      },
      nb::arg("matchers"), nb::arg("drafts"), nb::arg("bitmask").none(), nb::arg("first_rows"), nb::arg("num_threads"),
      nb::arg("remaining_tokens") = std::vector<nb::handle>{},
      nb::sig("def fill_draft_bitmasks(matchers: collections.abc.Sequence[object], drafts: "
              "collections.abc.Sequence[collections.abc.Sequence[int]], bitmask: numpy.typing.NDArray, first_rows: "
              "collections.abc.Sequence[int], num_threads: int, remaining_tokens: "
              "collections.abc.Sequence[int | None] = []) -> list[int | None]"));
}
