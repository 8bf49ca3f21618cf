//! The training loop's batches: [`DeviceData::batch`] (its lists laid out as the loops' step table for [`DeviceData::batch_of_step`]; the dataset uploaded
//! once, each step gathered on the device from one index tensor, gradient
//! overrides as one table) lays out exactly the batch the host gather
//! ([`gather_slots`], per-slot overrides) builds, and a DP-SGD step on either
//! gives bit-identical parameters: both go through the same batched override
//! code in the engine, which adds each replica's overrides in listing order.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_data::dataset::{Dataset, DatasetKind, Source};
use dpaudit_data::sampler::SlotTable;
use dpaudit_train::gather::{gather_slots, DeviceData, Extra, RowOverride};
use dpaudit_train::models::Mlp;
use dpaudit_train::testing::normal_tensor;
use dpaudit_train::{
    Batch, DpSgd, DpSgdConfig, Init, Model, NoiseStreams, Normaliser, Override, SlotOverride,
};
use tch::{Device, Tensor};

/// `n` records of 5 features (distinct values, so a wrong index shows), 3 classes.
fn dataset(n: usize, offset: f32) -> Dataset {
    let features: Vec<f32> = (0..n * 5).map(|i| offset + i as f32 * 0.01).collect();
    let labels: Vec<i64> = (0..n as i64).map(|i| i % 3).collect();
    Dataset::new(
        DatasetKind::Purchase100,
        features,
        labels,
        vec![5],
        vec!["a".into(), "b".into(), "c".into()],
        Source::Synthetic { seed: 0 },
    )
    .unwrap()
}

fn same(a: &Tensor, b: &Tensor) -> bool {
    a.size() == b.size() && a.equal(b)
}

/// Replica 0: 3 records, an extra record, a gradient slot; replica 1: 1
/// record and two gradient slots; replica 2: nothing but one extra record;
/// plus an override of replica 0's last genuine slot (listed after its extras).
fn layout() -> (Vec<Vec<usize>>, Vec<Vec<Extra>>) {
    let batches = vec![vec![4, 0, 7], vec![2], vec![]];
    let extras = vec![
        vec![Extra::Record(1), Extra::Gradient(0)],
        vec![Extra::Gradient(2), Extra::Gradient(1)],
        vec![Extra::Record(0)],
    ];
    (batches, extras)
}

#[test]
fn device_batches_equal_the_host_layout_and_train_bit_identically() {
    tch::set_num_threads(1);
    let data = dataset(9, 0.0);
    let canaries = dataset(2, 100.0);
    let model_of = || Mlp::new(&mut Init::new(4, 3, Device::Cpu), &[5, 4, 3]).unwrap();
    let p = model_of().num_parameters();
    // Gradient table: 3 canary-like rows and a 4th (a "−ĝ").
    let table = normal_tensor(&[4, p], 9).unwrap() * 0.3;
    let (batches, extras) = layout();

    // Host: per-slot overrides, the extra `more` override pushed after.
    let mut host = gather_slots(
        &data,
        &batches,
        Some(&canaries),
        Some(&table.narrow(0, 0, 3)),
        &extras,
        Device::Cpu,
    )
    .unwrap();
    host.overrides.push(SlotOverride {
        slot: 2,
        replica: 0,
        kind: Override::Gradient(table.get(3)),
    });

    let device = DeviceData::upload(&data, Some(&canaries), Device::Cpu).unwrap();
    let more = [RowOverride {
        slot: 2,
        replica: 0,
        row: 3,
    }];
    let dev = device
        .batch(
            &batches,
            &extras.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            Some(&table),
            &more,
        )
        .unwrap();

    assert!(same(&dev.inputs, &host.inputs), "inputs differ");
    assert!(same(&dev.targets, &host.targets), "targets differ");
    assert!(
        same(dev.mask.as_ref().unwrap(), host.mask.as_ref().unwrap()),
        "masks differ"
    );
    let rows = dev.gradient_rows.as_ref().unwrap();
    // Rank-major: first overrides (0: slot 4, 1: slot 1), then second ones.
    assert_eq!(rows.host, vec![(4, 0), (1, 1), (2, 0), (2, 1)]);
    let expected_rows = Tensor::stack(&[table.get(0), table.get(2), table.get(3), table.get(1)], 0);
    assert!(same(&rows.rows, &expected_rows), "override rows differ");

    let config = DpSgdConfig {
        noise_multiplier: 1.0,
        max_grad_norm: 0.5,
        learning_rate: 0.1,
        normaliser: Normaliser::FixedBatchSize(4),
        momentum: 0.0,
        weight_decay: 0.0,
    };
    let trained = |batch: &Batch| {
        let model = model_of();
        let mut dp = DpSgd::new(config.clone(), NoiseStreams::replayable(5, 3)).unwrap();
        let report = dp.step(&model, batch).unwrap();
        let params: Vec<Tensor> = model
            .named_parameters()
            .into_iter()
            .map(|(_, t)| t.detach().copy())
            .collect();
        (report.samples, report.clipped_fraction, params)
    };
    let (a, b) = (trained(&host), trained(&dev));
    assert_eq!(a.0, b.0);
    assert_eq!(a.1, b.1);
    assert!(
        a.2.iter().zip(&b.2).all(|(x, y)| same(x, y)),
        "parameters differ"
    );
    // Computed slots: replica 0's records 4 and 0 (its slot 2 is overridden)
    // and its extra record, replica 1's record, replica 2's extra record.
    assert_eq!(a.0, 5.0);
}

#[test]
fn out_of_range_indices_and_rows_without_a_table_are_refused() {
    let data = dataset(4, 0.0);
    let device = DeviceData::upload(&data, None, Device::Cpu).unwrap();
    let err = device.batch(&[vec![4]], &[], None, &[]).unwrap_err();
    assert!(err.to_string().contains("below 4"), "{err}");
    let err = device
        .batch(&[vec![0]], &[&[Extra::Record(0)]], None, &[])
        .unwrap_err();
    assert!(err.to_string().contains("extra records"), "{err}");
    let err = device
        .batch(&[vec![0]], &[&[Extra::Gradient(0)]], None, &[])
        .unwrap_err();
    assert!(err.to_string().contains("table of gradients"), "{err}");
    // The loops' form: extra slots listed by replica, each replica below M.
    let step = SlotTable::from_batches(&[vec![0], vec![1]]).unwrap();
    let unsorted = [(1, Extra::Record(0)), (0, Extra::Record(0))];
    let err = device
        .batch_of_step(step.view(), &unsorted, None, &[])
        .unwrap_err();
    assert!(err.to_string().contains("listed by replica"), "{err}");
    let err = device
        .batch_of_step(step.view(), &[(2, Extra::Record(0))], None, &[])
        .unwrap_err();
    assert!(err.to_string().contains("below 2"), "{err}");
}
