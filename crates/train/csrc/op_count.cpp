// Counts the libtorch operators a piece of Rust code dispatches, and the time
// spent inside them, through ATen's RecordFunction observer API (the hook the
// PyTorch profiler uses). tch does not expose it, hence this file.
//
// It also counts the operators after which the host must wait for a GPU: on
// CUDA, `_local_scalar_dense` (every `item()`, and so `is_nonzero`, `equal`,
// `repeat_interleave` without a size...) copies a value to the host, and
// `nonzero` (boolean indexing, `masked_select`) sizes its output from the
// device's data. The same operators run on the CPU, so a CPU run shows where
// a GPU run would wait. Copies of whole tensors to the host are not seen
// here (telling them apart needs the operators' inputs); dpaudit's own
// read-backs report themselves (`dpaudit_op_count_host_read`).
//
// "Top-level" operators are those entered while no other operator is running
// on the same thread: the calls our code (or the autograd engine, for the
// backward) makes into the dispatcher. Operators they call internally are
// counted in `all` only. The time inside top-level operators is what libtorch
// spends; on the CPU the rest of a step's wall time is host work of our own.
#include <ATen/record_function.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace {

std::atomic<uint64_t> top_level{0};
std::atomic<uint64_t> all_ops{0};
std::atomic<uint64_t> inside_ns{0};
std::atomic<uint64_t> waits{0};
std::atomic<bool> installed{false};
at::CallbackHandle handle = 0;

// Top-level operators by name, while naming is on (`dpaudit_op_count_names`):
// a lock per operator, so only for measurements of what a step dispatches.
// Each name also gets the host time before its calls: from the end of the
// previous top-level operator on the same thread to its start, i.e. the time
// outside operators, charged to the operator that ends it. The same time is
// also kept by pair "previous -> this": the host code between two operators
// is what runs between them, so a pair points at it.
struct Named {
  uint64_t count = 0;
  uint64_t before_ns = 0;
};
std::atomic<bool> naming{false};
std::mutex names_lock;
std::map<std::string, Named> names;
std::map<std::string, Named> pairs;
// Bumped each time naming starts: a thread whose last operator was named in
// an earlier stretch (e.g. an autograd worker on a GPU, whose thread-locals
// the starting thread cannot reset) does not charge the time since then.
std::atomic<uint64_t> naming_stretch{0};

thread_local int depth = 0;
thread_local bool observing = false;  // on the thread that installed the observer
thread_local std::chrono::steady_clock::time_point entered;
// End of the last top-level operator on this thread while naming; none
// (epoch) until one has run.
thread_local std::chrono::steady_clock::time_point left{};
thread_local std::string previous;     // its name
thread_local uint64_t left_stretch = 0;  // the naming stretch it ran in

bool waits_for_device(const char* name) {
  return std::strcmp(name, "aten::_local_scalar_dense") == 0 ||
         std::strcmp(name, "aten::nonzero") == 0;
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  all_ops.fetch_add(1, std::memory_order_relaxed);
  if (waits_for_device(fn.name())) waits.fetch_add(1, std::memory_order_relaxed);
  if (depth++ == 0) {
    top_level.fetch_add(1, std::memory_order_relaxed);
    if (naming.load(std::memory_order_relaxed)) {
      auto now = std::chrono::steady_clock::now();
      uint64_t stretch = naming_stretch.load(std::memory_order_relaxed);
      if (left_stretch != stretch) {
        left = {};
        previous.clear();
        left_stretch = stretch;
      }
      uint64_t before = 0;
      if (left.time_since_epoch().count() != 0) {
        before = static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - left).count());
      }
      std::lock_guard<std::mutex> guard(names_lock);
      Named& named = names[fn.name()];
      ++named.count;
      named.before_ns += before;
      if (!previous.empty()) {
        Named& pair = pairs[previous + " -> " + fn.name()];
        ++pair.count;
        pair.before_ns += before;
      }
      previous = fn.name();
    }
    entered = std::chrono::steady_clock::now();
  }
  return nullptr;
}

void on_exit(const at::RecordFunction&, at::ObserverContext*) {
  if (depth > 0 && --depth == 0) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now() - entered)
                  .count();
    inside_ns.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
    if (naming.load(std::memory_order_relaxed)) left = std::chrono::steady_clock::now();
  }
}

}  // namespace

extern "C" {

// Installs the observer on the calling thread (libtorch carries thread-local
// observers into the autograd engine's worker threads for a backward pass
// started here) and zeroes the totals. One observer at a time: the Rust side
// serialises counters. Returns 0 on success, 1 if libtorch refused it.
int dpaudit_op_count_install() {
  top_level = 0;
  all_ops = 0;
  inside_ns = 0;
  waits = 0;
  {
    std::lock_guard<std::mutex> guard(names_lock);
    names.clear();
    pairs.clear();
    naming = false;
  }
  if (installed.exchange(true)) return 1;
  try {
    handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&on_enter, &on_exit)
            .needsInputs(false)
            .needsOutputs(false)
            .needsIds(false)
            .scopes({at::RecordScope::FUNCTION}));
  } catch (...) {
    installed = false;
    return 1;
  }
  observing = true;
  return 0;
}

// One call of a compute kernel of ours that runs outside the dispatcher (the
// direct per-sample convolution gradient), `ns` long: counted as one
// top-level operator with its time, so that the time outside operators stays
// host work. Counted on the installing thread only, as the observer counts.
void dpaudit_op_count_own_kernel(uint64_t ns) {
  if (!observing || depth != 0) return;
  top_level.fetch_add(1, std::memory_order_relaxed);
  all_ops.fetch_add(1, std::memory_order_relaxed);
  inside_ns.fetch_add(ns, std::memory_order_relaxed);
}

// A read of device values to the host by dpaudit's own code (a step
// report's read-back): counted as one wait, on the installing thread only.
void dpaudit_op_count_host_read() {
  if (!observing) return;
  waits.fetch_add(1, std::memory_order_relaxed);
}

void dpaudit_op_count_read(uint64_t* top, uint64_t* all, uint64_t* ns, uint64_t* w) {
  *top = top_level.load(std::memory_order_relaxed);
  *all = all_ops.load(std::memory_order_relaxed);
  *ns = inside_ns.load(std::memory_order_relaxed);
  *w = waits.load(std::memory_order_relaxed);
}

// Starts (on != 0) or stops counting top-level operators by name; starting
// clears the names counted before and starts a new stretch on every thread.
void dpaudit_op_count_names(int on) {
  std::lock_guard<std::mutex> guard(names_lock);
  if (on) {
    names.clear();
    pairs.clear();
    naming_stretch.fetch_add(1, std::memory_order_relaxed);
  }
  naming = on != 0;
}

// The names (`by_pair` == 0) or pairs counted so far as lines
// "count<TAB>ns before<TAB>name\n", written to `buf` if they fit in `cap`
// bytes; returns their length either way.
size_t dpaudit_op_count_names_read(char* buf, size_t cap, int by_pair) {
  std::string text;
  {
    std::lock_guard<std::mutex> guard(names_lock);
    for (const auto& [name, named] : by_pair ? pairs : names) {
      text += std::to_string(named.count);
      text += '\t';
      text += std::to_string(named.before_ns);
      text += '\t';
      text += name;
      text += '\n';
    }
  }
  if (text.size() <= cap) std::memcpy(buf, text.data(), text.size());
  return text.size();
}

// Removes the observer; call it on the thread that installed it.
void dpaudit_op_count_remove() {
  observing = false;
  naming = false;
  if (installed.exchange(false)) at::removeCallback(handle);
}

}  // extern "C"
