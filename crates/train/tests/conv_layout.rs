//! The convolution's memory layout changes speed, not numbers: the same layer
//! gives the same output in both layouts, the channels-last layout is really
//! used where it is chosen, and `Auto` resolves as documented. (The per-sample
//! gradients, norms and clipped sums in each layout are checked against the
//! one-sample-at-a-time oracle in `layer_oracle.rs`.)
//!
//! One test function, because the process-wide layout is shared by every
//! thread of this test binary.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::layers::conv2d::{conv_layout, set_conv_layout, ConvLayout};
use dpaudit_train::layers::{Conv2d, Conv2dConfig, PerSampleGrad, Tape};
use dpaudit_train::testing::normal_tensor;
use dpaudit_train::Init;
use tch::{Device, Kind, Tensor};

/// A LeNet-5 conv2-like layer (6 → 16, 5×5) for `m` replicas.
fn layer(m: usize, layout: ConvLayout) -> Conv2d {
    let mut init = Init::new(3, m, Device::Cpu);
    let mut conv = Conv2d::new(&mut init, Conv2dConfig::new(6, 16, 5).padding(1)).unwrap();
    conv.layout = layout;
    conv
}

/// Whether `t` (`[N, C, H, W]`) is stored channels last.
fn is_channels_last(t: &Tensor) -> bool {
    let (s, st) = (t.size(), t.stride());
    st[1] == 1 && st[3] == s[1] && st[2] == s[1] * s[3] && st[0] == s[1] * s[2] * s[3]
}

#[test]
fn layouts_agree_and_auto_resolves_as_documented() {
    let x = normal_tensor(&[5, 3, 6, 9, 9], 17).unwrap();
    let outputs: Vec<Tensor> = [ConvLayout::Contiguous, ConvLayout::ChannelsLast]
        .into_iter()
        .map(|layout| {
            let conv = layer(3, layout);
            let mut tape = Tape::recording();
            let y = conv.forward(&x, &mut tape).unwrap();
            let recs = tape.into_records();
            assert_eq!(recs.len(), 1);
            // What the convolution saw and gave, as `[B, M·C, H, W]`.
            assert_eq!(
                is_channels_last(&recs[0].input),
                layout == ConvLayout::ChannelsLast,
                "{layout:?} input"
            );
            assert_eq!(
                is_channels_last(&recs[0].output),
                layout == ConvLayout::ChannelsLast,
                "{layout:?} output"
            );
            y
        })
        .collect();
    assert_eq!(outputs[0].size(), vec![5, 3, 16, 7, 7]);
    let diff = (&outputs[0] - &outputs[1]).abs().max().double_value(&[]);
    let scale = outputs[0].abs().max().double_value(&[]);
    assert!(
        diff <= 1e-5 * scale,
        "layouts differ by {diff} (scale {scale})"
    );
    assert_eq!(outputs[1].kind(), Kind::Float);

    // Auto: channels last for the replica-stacked convolution on the CPU,
    // contiguous for a single ungrouped model; a process-wide layout wins.
    assert_eq!(conv_layout(), None);
    let (one, three) = (layer(1, ConvLayout::Auto), layer(3, ConvLayout::Auto));
    assert_eq!(one.layout_for(Device::Cpu), ConvLayout::Contiguous);
    assert_eq!(three.layout_for(Device::Cpu), ConvLayout::ChannelsLast);
    assert_eq!(three.layout_for(Device::Cuda(0)), ConvLayout::Contiguous);
    let mut wide = Init::new(3, 3, Device::Cpu);
    let wide = Conv2d::new(&mut wide, Conv2dConfig::new(16, 16, 3)).unwrap();
    assert_eq!(wide.layout_for(Device::Cpu), ConvLayout::Contiguous);
    let mut grouped = Init::new(3, 1, Device::Cpu);
    let grouped = Conv2d::new(&mut grouped, Conv2dConfig::new(4, 4, 3).groups(2)).unwrap();
    assert_eq!(grouped.layout_for(Device::Cpu), ConvLayout::ChannelsLast);
    set_conv_layout(Some(ConvLayout::Contiguous));
    assert_eq!(three.layout_for(Device::Cpu), ConvLayout::Contiguous);
    set_conv_layout(Some(ConvLayout::ChannelsLast));
    assert_eq!(one.layout_for(Device::Cpu), ConvLayout::ChannelsLast);
    assert_eq!(one.layout_for(Device::Cuda(0)), ConvLayout::ChannelsLast);
    // A layer's own choice is not overridden.
    assert_eq!(
        layer(1, ConvLayout::Contiguous).layout_for(Device::Cpu),
        ConvLayout::Contiguous
    );
    set_conv_layout(None);
    assert_eq!(conv_layout(), None);
    // The names `dpaudit bench --conv-layout` takes.
    assert_eq!("channels-last".parse(), Ok(ConvLayout::ChannelsLast));
    assert_eq!("contiguous".parse(), Ok(ConvLayout::Contiguous));
    assert_eq!("auto".parse(), Ok(ConvLayout::Auto));
    let err = "nhwc".parse::<ConvLayout>().unwrap_err();
    assert!(
        err.contains("`nhwc`") && err.contains("channels-last"),
        "{err}"
    );
    assert_eq!(three.layout_for(Device::Cpu), ConvLayout::ChannelsLast);

    // A strided 1×1 kernel stays contiguous on the CPU whatever was chosen
    // (libtorch's oneDNN weight backward for it corrupts the heap channels
    // last: Conv2d::cpu_channels_last_unsafe); CUDA keeps the choice.
    let mut init = Init::new(3, 3, Device::Cpu);
    let mut shortcut = Conv2d::new(&mut init, Conv2dConfig::new(3, 2, 1).stride(2)).unwrap();
    assert!(shortcut.cpu_channels_last_unsafe());
    for chosen in [ConvLayout::Auto, ConvLayout::ChannelsLast] {
        shortcut.layout = chosen;
        assert_eq!(shortcut.layout_for(Device::Cpu), ConvLayout::Contiguous);
    }
    assert_eq!(
        shortcut.layout_for(Device::Cuda(0)),
        ConvLayout::ChannelsLast
    );
    set_conv_layout(Some(ConvLayout::ChannelsLast));
    assert_eq!(shortcut.layout_for(Device::Cpu), ConvLayout::Contiguous);
    set_conv_layout(None);
    let mut init = Init::new(3, 3, Device::Cpu);
    let unstrided = Conv2d::new(&mut init, Conv2dConfig::new(3, 2, 1)).unwrap();
    assert!(!unstrided.cpu_channels_last_unsafe());
    assert_eq!(unstrided.layout_for(Device::Cpu), ConvLayout::ChannelsLast);
}
