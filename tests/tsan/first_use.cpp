// kgen-first-use-tests: the library's first calls come from many host
// threads at once.  The registry index, the tuning catalog and the database
// chosen per device are built lazily on first use; the contract is that this
// is safe from any number of threads and that everything is immutable after.
// Run plain it checks the results (every thread sees the same registry and
// the same selections; each thread reads back its own error message); built
// with -Db_sanitize=thread it also lets ThreadSanitizer watch the lazy
// initialisation race (.ci/run does both).  Needs no GPU: selection runs on
// a described device, and the public entry points are called with fake
// pointers, so they stop before any launch.
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kgen/kgen.h"
#include "permute/problem.hpp"
#include "reduce/problem.hpp"
#include "registry.hpp"
#include "select.hpp"
#include "softmax/problem.hpp"
#include "topk/problem.hpp"
#include "tuning/db.hpp"

namespace {

constexpr int kThreads = 16;

// std::latch is C++20; a reusable barrier from a mutex and a condition
// variable, so that all threads leave each wait together.
class Barrier {
 public:
  explicit Barrier(int count) : count_(count), waiting_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(m_);
    const int gen = generation_;
    if (--waiting_ == 0) {
      ++generation_;
      waiting_ = count_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return gen != generation_; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  const int count_;
  int waiting_;
  int generation_ = 0;
};

// Fake device addresses: selection reads only their alignment.
const void* addr(uintptr_t offset_bytes) { return reinterpret_cast<const void*>(uintptr_t{1} << 32 | offset_bytes); }
void* out_addr(uintptr_t offset_bytes) { return const_cast<void*>(addr(uintptr_t{1} << 30 | offset_bytes)); }

// A described H100.  Its ordinal is one no test machine has, so that the
// database chosen for it (once per ordinal) is not the one a real GPU 0
// gets through the public entry points.
const kgen::DeviceInfo& fake_device() {
  static const kgen::DeviceInfo dev = [] {
    kgen::DeviceInfo d;
    d.ordinal = 63;
    return d;
  }();
  return dev;
}

// The dtype a family is compiled for (f32 when it is, else its first
// variant's): a -Ddtypes filter may leave out any one dtype.
kgen_dtype_t dtype_of(kgen::Family f) {
  int first = -1;
  for (const kgen::VariantInfo* v : kgen::Registry::all()) {
    if (v->family != f) continue;
    if (v->element == KGEN_FLOAT32) return KGEN_FLOAT32;
    if (first < 0) first = v->element;
  }
  return static_cast<kgen_dtype_t>(first < 0 ? KGEN_FLOAT32 : first);
}

std::string named(const kgen::Selection& s) {
  static const char* const kSource[] = {"db", "heuristic", "generic"};
  return std::string(s.variant ? s.variant->name : "(none)") + " from " + kSource[static_cast<int>(s.source)];
}

// What one thread saw; compared across threads afterwards.
struct Seen {
  std::string registry, tuning_db, fake_db;
  std::vector<std::string> selections, public_calls;
  std::vector<std::string> errors;  // own-message mismatches
};

void see_registry(Seen& s) {
  const int64_t n = kgen_variant_count();
  s.registry = std::to_string(n) + ":";
  for (int64_t i = 0; i < n; ++i) s.registry += std::string(kgen_variant_family(i)) + "/" + kgen_variant_name(i) + " ";
  // lookups by name (a different index of the same registry)
  for (int64_t i = 0; i < n; i += 7)
    if (kgen::Registry::find(kgen_variant_name(i)) == nullptr) s.registry += "[lookup failed]";
}

void see_tuning(Seen& s) {
  s.tuning_db = kgen_tuning_database();  // "" without a GPU
  const kgen::tuning::Database* db = kgen::tuning::database_for(fake_device());
  s.fake_db = db ? db->description : "(none)";
}

void see_selections(Seen& s) {
  const kgen::DeviceInfo& dev = fake_device();
  using kgen::Family;
  {
    const kgen_dtype_t d = dtype_of(Family::softmax);
    const int64_t shapes[][3] = {{4096, 128, 1}, {64, 3000, 1}, {8, 100000, 1}, {16, 77, 1}, {32, 64, 49}};
    for (const auto& sh : shapes) {
      kgen::softmax::Problem p{d, false, sh[0], sh[1], addr(0), out_addr(0), &dev, sh[2]};
      s.selections.push_back(named(kgen::select_variant(Family::softmax, d, dev, &p, &kgen::softmax::heuristic)));
      p.dy = addr(1u << 29);
      const kgen_dtype_t db = dtype_of(Family::softmax_backward);
      p.dtype = db;
      s.selections.push_back(
          named(kgen::select_variant(Family::softmax_backward, db, dev, &p, &kgen::softmax::heuristic)));
    }
  }
  {
    const kgen_dtype_t d = dtype_of(Family::reduce);
    const int64_t shapes[][3] = {{16384, 1024, 1}, {8, 1 << 20, 1}, {1, 4096, 1}, {64, 4096, 512}, {3, 7, 5}};
    for (const auto& sh : shapes) {
      kgen::reduce::Problem p{KGEN_REDUCE_SUM, d, sh[0], sh[1], sh[2], addr(0), out_addr(0), nullptr, 0, &dev};
      s.selections.push_back(named(kgen::select_variant(Family::reduce, d, dev, &p, &kgen::reduce::heuristic)));
      p.op = KGEN_REDUCE_ARGMAX;
      s.selections.push_back(named(kgen::select_variant(Family::reduce, d, dev, &p, &kgen::reduce::heuristic)));
    }
  }
  {
    const kgen_dtype_t d = dtype_of(Family::topk);
    const int64_t shapes[][3] = {{16384, 1024, 8}, {4, 1 << 20, 100}, {512, 4096, 64}};
    for (const auto& sh : shapes) {
      kgen::topk::Problem p{d, sh[0], sh[1], sh[2], true, true, addr(0), out_addr(0),
                            static_cast<int64_t*>(out_addr(1u << 28)), nullptr, 0, &dev};
      s.selections.push_back(named(kgen::select_variant(Family::topk, d, dev, &p, &kgen::topk::heuristic)));
    }
  }
  {
    const int64_t shape[] = {64, 128, 256};
    const int perms[][3] = {{0, 2, 1}, {1, 0, 2}, {2, 1, 0}};
    for (const auto& perm : perms) {
      const auto src = reinterpret_cast<uintptr_t>(addr(0)), dst = reinterpret_cast<uintptr_t>(out_addr(0));
      kgen::permute::Problem p{kgen::permute::simplify(3, shape, perm, 4, src, dst, kgen::kMaxMovement), addr(0),
                               out_addr(0), &dev};
      const int element = kgen::movement_key(p.shape.movement);
      s.selections.push_back(
          named(kgen::select_variant(Family::permute, element, dev, &p, &kgen::permute::heuristic)));
    }
  }
}

// Public selection entry points with fake pointers: without a GPU they
// stop at the device query, with one at the pointer checks; either way the
// status and message must be the same in every thread.
void see_public(Seen& s) {
  const char* v = nullptr;
  // reads v after the call has set it (the call is record's argument)
  auto record = [&](kgen_status_t st) {
    s.public_calls.push_back(std::string(kgen_status_string(st)) + " " +
                             (st != KGEN_OK ? kgen_last_error() : v ? v : "(null name)"));
    v = nullptr;
  };
  record(kgen_softmax_selected(0, KGEN_FLOAT32, 64, 1000, addr(0), out_addr(0), &v));
  record(kgen_softmax_dim_selected(1, KGEN_FLOAT32, 8, 100, 33, addr(0), out_addr(0), &v));
  size_t ws = 0;
  record(kgen_reduce_selected(KGEN_REDUCE_MAX, KGEN_FLOAT32, 8, 4096, 1, addr(0), out_addr(0), &v, &ws));
  record(kgen_topk_selected(KGEN_FLOAT32, 16, 1024, 8, 1, 1, addr(0), &v));
  const int64_t shape[] = {32, 48, 64};
  const int perm[] = {2, 0, 1};
  record(kgen_permute_selected(4, 3, shape, perm, addr(0), out_addr(0), &v));
  const int64_t src_shape[] = {32, 1, 64};
  record(kgen_expand_selected(KGEN_FLOAT32, 3, src_shape, 3, shape, addr(0), out_addr(0), &v));
}

// Each thread makes a call that fails with a message of its own, waits
// until every thread has, then reads back its message: a shared buffer
// would hold another thread's by then.
void check_own_errors(int t, Barrier& barrier, Seen& s) {
  auto expect = [&](kgen_status_t st, const std::string& token) {
    barrier.wait();
    const std::string got = kgen_last_error();
    if (st == KGEN_OK || got.find(token) == std::string::npos)
      s.errors.push_back("expected an error with '" + token + "', got " + kgen_status_string(st) + " '" + got + "'");
  };
  expect(kgen_softmax(KGEN_FLOAT32, -(1000 + t), 8, addr(0), out_addr(0), nullptr), "got " + std::to_string(-(1000 + t)));
  const std::string bogus = "no_such_variant_" + std::to_string(t);
  expect(kgen_softmax_variant(bogus.c_str(), 0, KGEN_FLOAT32, 4, 8, addr(0), out_addr(0), nullptr), "'" + bogus + "'");
  expect(kgen_reduce(static_cast<kgen_reduce_op_t>(100 + t), KGEN_FLOAT32, 2, 3, 1, addr(0), out_addr(0), nullptr),
         "value " + std::to_string(100 + t));
  // a success clears this thread's message only
  const int64_t a[] = {3, 1}, b[] = {5};
  const int ranks[] = {2, 1};
  const int64_t* shapes[] = {a, b};
  int out_rank = 0;
  int64_t out_shape[8];
  const kgen_status_t st = kgen_broadcast_shape(2, ranks, shapes, &out_rank, out_shape);
  barrier.wait();
  if (st != KGEN_OK || *kgen_last_error() != '\0')
    s.errors.push_back(std::string("a successful call left '") + kgen_last_error() + "'");
}

void run_thread(int t, Barrier& barrier, Seen& s) {
  barrier.wait();  // every thread makes its first call at once
  // the threads take the lazily built objects in different orders, so that
  // each is first reached through more than one entry point
  void (*steps[])(Seen&) = {see_registry, see_tuning, see_selections, see_public};
  for (int k = 0; k < 4; ++k) steps[(t + k) % 4](s);
  check_own_errors(t, barrier, s);
}

int compare(const char* what, const std::string& a, const std::string& b, int t) {
  if (a == b) return 0;
  std::printf("FAIL: thread %d saw a different %s:\n  %.300s\n  vs thread 0:\n  %.300s\n", t, what, b.c_str(),
              a.c_str());
  return 1;
}

int compare(const char* what, const std::vector<std::string>& a, const std::vector<std::string>& b, int t) {
  if (a.size() != b.size()) return compare(what, std::to_string(a.size()), std::to_string(b.size()), t);
  int failures = 0;
  for (size_t k = 0; k < a.size(); ++k) failures += compare(what, a[k], b[k], t);
  return failures;
}

}  // namespace

int main() {
  Barrier barrier(kThreads);
  std::vector<Seen> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(run_thread, t, std::ref(barrier), std::ref(seen[t]));
  for (std::thread& th : threads) th.join();

  // the same calls once more from one thread, after initialisation
  Seen after;
  see_registry(after);
  see_tuning(after);
  see_selections(after);
  see_public(after);

  int failures = 0;
  for (int t = 0; t < kThreads; ++t) {
    const Seen& ref = t == 0 ? after : seen[0];
    failures += compare("registry", ref.registry, seen[t].registry, t);
    failures += compare("kgen_tuning_database()", ref.tuning_db, seen[t].tuning_db, t);
    failures += compare("database of the described device", ref.fake_db, seen[t].fake_db, t);
    failures += compare("selection", ref.selections, seen[t].selections, t);
    failures += compare("public selection result", ref.public_calls, seen[t].public_calls, t);
    for (const std::string& e : seen[t].errors) std::printf("FAIL: thread %d: %s\n", t, e.c_str()), ++failures;
  }
  for (const std::string& sel : after.selections)
    if (sel.rfind("(none)", 0) == 0) std::printf("FAIL: a selection found no variant: %s\n", sel.c_str()), ++failures;
  if (after.registry.rfind("0:", 0) == 0) std::printf("FAIL: no variant is registered\n"), ++failures;

  std::printf("%d threads: %lld variants, %zu selections, %zu public calls; tuning database '%s', described H100: '%s'\n",
              kThreads, static_cast<long long>(kgen_variant_count()), after.selections.size(), after.public_calls.size(),
              after.tuning_db.c_str(), after.fake_db.c_str());
  for (const std::string& p : after.public_calls) std::printf("  %s\n", p.c_str());
  std::printf("first use: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
