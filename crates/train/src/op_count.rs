//! How many libtorch operators a piece of code dispatches, and how long it
//! spends inside them.
//!
//! An observer on ATen's `RecordFunction` hook (the one the PyTorch profiler
//! uses; `csrc/op_count.cpp`, since tch does not expose it) counts every
//! operator call and times the *top-level* ones: those entered while no other
//! operator runs on the same thread, i.e. the calls our code and the autograd
//! engine make into the dispatcher. Nested calls (`conv2d` → `convolution` →
//! …) are in [`OpCounts::all`] only. The observer is thread-local: it sees the
//! thread that started the counter and the autograd workers of a backward pass
//! that thread starts (libtorch carries it there), not other threads of the
//! process.
//!
//! Two uses, both in `dpaudit bench --overhead` and `--end-to-end`:
//! - **Operators per step.** On a GPU every top-level operator is at least
//!   one kernel launch and a few microseconds of host time whatever the
//!   tensor sizes, so a count that does not grow with the replicas is what
//!   "constant host work per step" means for libtorch's part.
//! - **Host time on the CPU.** On the CPU an operator runs to completion
//!   before it returns, so the time inside top-level operators is libtorch's
//!   compute, and a step's wall time minus it is host work: ours (sampler,
//!   schedule, noise draw, bookkeeping) and the autograd engine's between its
//!   operators.
//!
//! - **Waits for the device.** [`OpCounts::waits`] counts the points where a
//!   GPU run makes the host wait for everything queued: our read-backs and
//!   the operators that copy a device value to the host. Between two
//!   read-backs the training loop has none, which the tests hold it to.
//!
//! dpaudit's own compute kernels, which run outside the dispatcher (the
//! direct per-sample convolution gradient, `conv2d::PerSampleMethod::Direct`),
//! report each call through `own_kernel`: it counts as one top-level
//! operator with its time, so that the time outside operators stays host work.
//!
//! The observer costs about a microsecond per operator while installed, so it
//! is installed for measurements only ([`OpCounter::start`]) and removed when
//! the counter is dropped. One counter runs at a time in a process.

use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::error::{Result, TrainError};

#[cfg(dpaudit_op_count)]
#[allow(unsafe_code)]
extern "C" {
    fn dpaudit_op_count_install() -> i32;
    fn dpaudit_op_count_read(top: *mut u64, all: *mut u64, ns: *mut u64, waits: *mut u64);
    fn dpaudit_op_count_host_read();
    fn dpaudit_op_count_remove();
    fn dpaudit_op_count_own_kernel(ns: u64);
    fn dpaudit_op_count_names(on: i32);
    fn dpaudit_op_count_names_read(buf: *mut u8, cap: usize, by_pair: i32) -> usize;
}

/// Records one call of a compute kernel of ours that started at `started`
/// and has just returned, if a counter runs on this thread; nothing otherwise.
pub(crate) fn own_kernel(started: Instant) {
    #[cfg(dpaudit_op_count)]
    {
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: touches only the counter's atomics and thread-locals.
        #[allow(unsafe_code)]
        unsafe {
            dpaudit_op_count_own_kernel(ns)
        };
    }
    #[cfg(not(dpaudit_op_count))]
    let _ = started;
}

/// Records one read of device values to the host by our code (a step
/// report's read-back), if a counter runs on this thread: on a GPU the host
/// waits there for everything queued before it. Call it once per read, next
/// to the copy.
pub(crate) fn host_read() {
    #[cfg(dpaudit_op_count)]
    {
        // SAFETY: touches only the counter's atomics and thread-locals.
        #[allow(unsafe_code)]
        unsafe {
            dpaudit_op_count_host_read()
        };
    }
}

/// Operator counts and times of a measured stretch of code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct OpCounts {
    /// Operators entered while no other operator ran on their thread.
    pub top_level: u64,
    /// Every operator call, nested ones included.
    pub all: u64,
    /// Seconds spent inside top-level operators.
    pub inside: f64,
    /// Wall-clock seconds of the stretch.
    pub wall: f64,
    /// Points where a GPU run makes the host wait for the device: our own
    /// read-backs (`host_read`) and the operators that copy a device value
    /// to the host (`_local_scalar_dense`, behind every `item()`) or size
    /// their output from device data (`nonzero`). Copies of whole tensors
    /// by libtorch are not seen. A fraction after [`OpCounts::per`].
    pub waits: f64,
}

impl OpCounts {
    /// Wall time not spent inside a libtorch operator (seconds, ≥ 0).
    pub fn outside(&self) -> f64 {
        (self.wall - self.inside).max(0.0)
    }

    /// These counts divided by `n` (per step).
    pub fn per(&self, n: usize) -> OpCounts {
        let n = n.max(1);
        OpCounts {
            top_level: self.top_level / n as u64,
            all: self.all / n as u64,
            inside: self.inside / n as f64,
            wall: self.wall / n as f64,
            waits: self.waits / n as f64,
        }
    }
}

/// How often a top-level operator ran, and the host time before it
/// ([`OpCounter::names`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedCount {
    /// libtorch's name of the operator, e.g. `aten::index_select`.
    pub name: String,
    /// Calls.
    pub count: u64,
    /// Seconds outside operators right before its calls, summed: from the
    /// end of the previous top-level operator on the same thread to the
    /// start of this one (none before the first operator named). Where the
    /// time outside operators goes, by the operator that ends it.
    pub before: f64,
}

/// Lines `count<TAB>ns before<TAB>name` of the observer's names or pairs.
fn parse_names(text: &str) -> Vec<NamedCount> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, '\t');
            let count = fields.next()?.parse().ok()?;
            let before_ns: u64 = fields.next()?.parse().ok()?;
            Some(NamedCount {
                name: fields.next()?.to_string(),
                count,
                before: before_ns as f64 * 1e-9,
            })
        })
        .collect()
}

/// One counter at a time: the totals are process-wide.
static ACTIVE: Mutex<()> = Mutex::new(());

/// Counts libtorch operators from [`OpCounter::start`] until
/// [`OpCounter::finish`] on the thread that started it; the observer is
/// removed when it is dropped (it is not `Send`, so on that same thread).
#[derive(Debug)]
pub struct OpCounter {
    _guard: std::sync::MutexGuard<'static, ()>,
    started: Instant,
}

impl OpCounter {
    /// Installs the observer and zeroes the totals. Waits for any other
    /// counter to finish. Fails when this build has no observer (libtorch's
    /// headers were not found at build time) or libtorch refuses it.
    pub fn start() -> Result<OpCounter> {
        let guard = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        install()?;
        Ok(OpCounter {
            _guard: guard,
            started: Instant::now(),
        })
    }

    /// From now on, also count the top-level operators by name (read them
    /// with [`OpCounter::names`]). It takes a lock per operator: for seeing
    /// what a step dispatches, not in timed or counted stretches.
    pub fn name_operators(&self) {
        names_on();
    }

    /// The top-level operators since [`OpCounter::name_operators`] by name,
    /// the most frequent first (ties by name); empty if naming was not
    /// started.
    pub fn names(&self) -> Vec<NamedCount> {
        let mut out = parse_names(&read_names(false));
        out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        out
    }

    /// The host time between consecutive top-level operators since
    /// [`OpCounter::name_operators`], by pair `"previous -> next"` (the
    /// host code that ran between them), the longest first (ties by name);
    /// empty if naming was not started.
    pub fn gaps(&self) -> Vec<NamedCount> {
        let mut out = parse_names(&read_names(true));
        out.sort_by(|a, b| {
            b.before
                .total_cmp(&a.before)
                .then_with(|| a.name.cmp(&b.name))
        });
        out
    }

    /// The totals since [`OpCounter::start`].
    pub fn finish(self) -> OpCounts {
        let wall = self.started.elapsed().as_secs_f64();
        let (top_level, all, ns, waits) = read();
        OpCounts {
            top_level,
            all,
            inside: ns as f64 * 1e-9,
            wall,
            waits: waits as f64,
        }
    }
}

impl Drop for OpCounter {
    fn drop(&mut self) {
        remove();
    }
}

#[cfg(dpaudit_op_count)]
#[allow(unsafe_code)]
fn install() -> Result<()> {
    // SAFETY: installs a RecordFunction callback that touches only atomics and
    // thread-locals of its own; idempotent.
    match unsafe { dpaudit_op_count_install() } {
        0 => Ok(()),
        _ => Err(unavailable("libtorch refused the RecordFunction callback")),
    }
}

#[cfg(not(dpaudit_op_count))]
fn install() -> Result<()> {
    Err(unavailable(
        "this build has no operator counter (libtorch's headers were not found when it was built)",
    ))
}

fn unavailable(reason: &str) -> TrainError {
    TrainError::Unsupported {
        layer: "operator counting".into(),
        reason: reason.into(),
    }
}

#[cfg(dpaudit_op_count)]
#[allow(unsafe_code)]
fn read() -> (u64, u64, u64, u64) {
    let (mut top, mut all, mut ns, mut waits) = (0u64, 0u64, 0u64, 0u64);
    // SAFETY: the four pointers are valid for writes of one u64 each.
    unsafe { dpaudit_op_count_read(&mut top, &mut all, &mut ns, &mut waits) };
    (top, all, ns, waits)
}

#[cfg(not(dpaudit_op_count))]
fn read() -> (u64, u64, u64, u64) {
    (0, 0, 0, 0)
}

#[cfg(dpaudit_op_count)]
#[allow(unsafe_code)]
fn names_on() {
    // SAFETY: takes the names' lock and clears them; touches no Rust memory.
    unsafe { dpaudit_op_count_names(1) }
}

#[cfg(not(dpaudit_op_count))]
fn names_on() {}

#[cfg(dpaudit_op_count)]
#[allow(unsafe_code)]
fn read_names(by_pair: bool) -> String {
    // The names may grow between the two calls (autograd workers): retry
    // with the larger size.
    let mut buf: Vec<u8> = Vec::new();
    loop {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes; the callee
        // writes only if the text fits.
        let len =
            unsafe { dpaudit_op_count_names_read(buf.as_mut_ptr(), buf.len(), i32::from(by_pair)) };
        if len <= buf.len() {
            buf.truncate(len);
            return String::from_utf8_lossy(&buf).into_owned();
        }
        buf.resize(len + 256, 0);
    }
}

#[cfg(not(dpaudit_op_count))]
fn read_names(_by_pair: bool) -> String {
    String::new()
}

#[cfg(dpaudit_op_count)]
#[allow(unsafe_code)]
fn remove() {
    // SAFETY: removes the callback installed above, if any.
    unsafe { dpaudit_op_count_remove() }
}

#[cfg(not(dpaudit_op_count))]
fn remove() {}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind, Tensor};

    #[test]
    fn counts_the_operators_a_known_sequence_dispatches() {
        let a = Tensor::f_ones([4, 4], (Kind::Float, Device::Cpu)).unwrap();
        let counter = OpCounter::start().unwrap();
        let b = a.f_add(&a).unwrap();
        let c = b.f_mul(&a).unwrap();
        let _d = c.f_matmul(&a).unwrap();
        let counts = counter.finish();
        // add, mul, matmul: three top-level calls; matmul dispatches at
        // least `mm` beneath it.
        assert_eq!(counts.top_level, 3, "{counts:?}");
        assert!(counts.all > counts.top_level, "{counts:?}");
        assert!(
            counts.inside > 0.0 && counts.inside <= counts.wall,
            "{counts:?}"
        );
    }

    #[test]
    fn names_the_top_level_operators_once_asked() {
        let a = Tensor::f_ones([4, 4], (Kind::Float, Device::Cpu)).unwrap();
        let counter = OpCounter::start().unwrap();
        let _before = a.f_add(&a).unwrap();
        assert!(counter.names().is_empty());
        counter.name_operators();
        let b = a.f_add(&a).unwrap();
        let c = b.f_add(&a).unwrap();
        // Host work between two operators: charged to `matmul`, which ends it.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let _d = c.f_matmul(&a).unwrap();
        let names = counter.names();
        let gaps = counter.gaps();
        // add twice, then matmul; what matmul dispatches beneath it (`mm`)
        // is not top-level.
        let expected = [("aten::add", 2), ("aten::matmul", 1)];
        let got: Vec<(&str, u64)> = names.iter().map(|n| (n.name.as_str(), n.count)).collect();
        assert_eq!(got, expected);
        // The sleep is charged to `matmul`, which ran after it; the adds
        // (the first named operator has no time before it) had far less.
        assert!(names[1].before >= 0.05, "{names:?}");
        assert!(names[0].before < names[1].before, "{names:?}");
        let counts = counter.finish();
        assert_eq!(counts.top_level, 4);
        let before: f64 = names.iter().map(|n| n.before).sum();
        assert!(
            before <= counts.wall - counts.inside,
            "{names:?} {counts:?}"
        );
        // By pair: the sleep ran between `add` and `matmul`, and the pairs
        // share out the same host time as the names.
        let got: Vec<(&str, u64)> = gaps.iter().map(|n| (n.name.as_str(), n.count)).collect();
        assert_eq!(
            got,
            [
                ("aten::add -> aten::matmul", 1),
                ("aten::add -> aten::add", 1)
            ]
        );
        assert!(gaps[0].before >= 0.05, "{gaps:?}");
        let by_pair: f64 = gaps.iter().map(|n| n.before).sum();
        assert!((by_pair - before).abs() < 1e-9, "{gaps:?} {names:?}");
        // A new counter starts without names.
        let counter = OpCounter::start().unwrap();
        let _e = a.f_mul(&a).unwrap();
        assert!(counter.names().is_empty());
        assert!(counter.gaps().is_empty());
    }

    #[test]
    fn counts_stop_when_the_counter_is_dropped_and_restart_from_zero() {
        let a = Tensor::f_ones([3], (Kind::Float, Device::Cpu)).unwrap();
        let counter = OpCounter::start().unwrap();
        let _b = a.f_add(&a).unwrap();
        assert_eq!(counter.finish().top_level, 1);
        let _c = a.f_add(&a).unwrap();
        let counter = OpCounter::start().unwrap();
        let _d = a.f_mul(&a).unwrap();
        let _e = a.f_mul(&a).unwrap();
        assert_eq!(counter.finish().top_level, 2);
    }

    #[test]
    fn counts_our_own_kernels_on_the_counting_thread_only() {
        // Without a counter on this thread, nothing is recorded.
        own_kernel(Instant::now());
        let counter = OpCounter::start().unwrap();
        let started = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        own_kernel(started);
        std::thread::spawn(|| own_kernel(Instant::now()))
            .join()
            .unwrap();
        let counts = counter.finish();
        assert_eq!((counts.top_level, counts.all), (1, 1), "{counts:?}");
        assert!(
            counts.inside >= 0.005 && counts.inside <= counts.wall,
            "{counts:?}"
        );
    }

    /// `item()` and boolean indexing are waits on a GPU; arithmetic is not;
    /// our own reads count once each, on the counting thread only.
    #[test]
    fn counts_the_points_where_a_gpu_run_would_wait() {
        let a = Tensor::f_from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let three = Tensor::from(3.0f32);
        let counter = OpCounter::start().unwrap();
        let b = a.f_mul(&a).unwrap().f_add(&a).unwrap();
        let arithmetic = counter.finish();
        assert_eq!(arithmetic.waits, 0.0, "{arithmetic:?}");
        let counter = OpCounter::start().unwrap();
        let _ = b.f_sum(Kind::Float).unwrap().f_double_value(&[]).unwrap();
        let mask = b.f_gt_tensor(&three).unwrap();
        let _ = b.f_masked_select(&mask).unwrap();
        host_read();
        std::thread::spawn(host_read).join().unwrap();
        let counts = counter.finish();
        // item (1), masked_select's nonzero (1), our read (1).
        assert_eq!(counts.waits, 3.0, "{counts:?}");
        assert_eq!(counts.per(2).waits, 1.5);
    }

    #[test]
    fn counts_the_operators_of_a_backward_pass() {
        let w = Tensor::f_ones([8], (Kind::Float, Device::Cpu))
            .unwrap()
            .f_set_requires_grad(true)
            .unwrap();
        let forward = OpCounter::start().unwrap();
        let loss = w.f_mul(&w).unwrap().f_sum(Kind::Float).unwrap();
        let forward = forward.finish();
        let backward = OpCounter::start().unwrap();
        loss.f_backward().unwrap();
        let backward = backward.finish();
        assert_eq!(forward.top_level, 2, "{forward:?}");
        // The gradient of sum(w·w) is 2w: at least the expand of the sum's
        // gradient and the products of mul's backward run as operators.
        assert!(backward.top_level >= 2, "{backward:?}");
    }
}
