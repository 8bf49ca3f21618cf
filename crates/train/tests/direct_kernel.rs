//! The direct per-sample convolution kernel (`PerSampleMethod::Direct`)
//! splits samples over threads, and a replayable run must be bit-identical on
//! the same machine whatever the thread count: each sample's gradient is
//! computed by one thread in a fixed order. (Its values are checked against
//! the one-sample-at-a-time oracle in `layer_oracle.rs` and
//! `model_oracle.rs`.)
//!
//! Its own binary: the thread count is process-wide.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::layers::conv2d::{ConvLayout, PerSampleMethod};
use dpaudit_train::layers::{Conv2d, Conv2dConfig, PerSampleGrad, Tape};
use dpaudit_train::testing::normal_tensor;
use dpaudit_train::Init;
use tch::{Device, Tensor};

#[test]
fn per_sample_gradients_do_not_depend_on_the_thread_count() {
    // 3 replicas × 1 → 16 channels, 5×5, padding 2, B = 70: 210 (sample,
    // replica) pairs, split unevenly over 2 and 3 threads (at least 16 per
    // thread), in both layouts.
    let x = normal_tensor(&[70, 3, 1, 12, 12], 5).unwrap();
    let d = normal_tensor(&[70, 3 * 16, 12, 12], 6).unwrap();
    for layout in [ConvLayout::Contiguous, ConvLayout::ChannelsLast] {
        let mut conv = Conv2d::new(
            &mut Init::new(1, 3, Device::Cpu),
            Conv2dConfig::new(1, 16, 5).padding(2),
        )
        .unwrap();
        conv.per_sample_method = PerSampleMethod::Direct;
        conv.layout = layout;
        let mut tape = Tape::recording();
        let _output = conv.forward(&x, &mut tape).unwrap();
        let rec = tape.into_records().remove(0);
        let grads = |threads: i32| -> Vec<Tensor> {
            tch::set_num_threads(threads);
            conv.per_sample_grads(&rec, &d).unwrap()
        };
        let one = grads(1);
        for threads in [2, 3] {
            let many = grads(threads);
            assert_eq!(one.len(), many.len());
            for (a, b) in one.iter().zip(&many) {
                assert_eq!(a.size(), b.size());
                assert!(
                    a.equal(b),
                    "{layout:?}: {threads} threads differ from one in some bit"
                );
            }
        }
        // Not all zero: the comparison compared something.
        assert!(one[0].abs().sum(tch::Kind::Float).double_value(&[]) > 1.0);
    }
}
