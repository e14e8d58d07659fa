// The batch mask calls: fill_next_token_bitmasks (many matchers' rows at once, on the core's
// threads, the GIL released once) and fill_next_token_bitmasks_async (the same started on a
// thread of its own, so that the caller can run the forward pass meanwhile without handing the
// GIL back and forth: on a GPU, launching the forward pass is Python work).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

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
  // Taken as handles: a Matcher* list would let None through as a null pointer.
  b.matchers.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    Matcher* mt = nullptr;
    if (!nb::try_cast<Matcher*>(items[i], mt) || mt == nullptr)
      throw nb::type_error(("matchers[" + std::to_string(i) + "] is " +
                            std::string(nb::type_name(items[i].type()).c_str()) + ", not a stencil.Matcher")
                               .c_str());
    b.matchers.push_back(mt);
  }
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
  std::vector<Matcher*> sorted = b.matchers;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw UsageError("the same matcher appears twice in one batch");
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
}
