//! The synthetic stand-ins are learnable: a nearest-class-mean classifier
//! fitted on the synthetic training split is far above chance on the
//! synthetic test split ("a small model can actually learn").

use dpaudit_data::synthetic::{generate, SyntheticSpec};
use dpaudit_data::{Dataset, DatasetKind};

/// Accuracy on `test` of the classifier that predicts the class whose
/// training mean is nearest in Euclidean distance.
fn nearest_class_mean_accuracy(train: &Dataset, test: &Dataset) -> f64 {
    let d = train.record_len();
    let k = train.num_classes();
    let mut means = vec![0f64; k * d];
    let counts = train.class_histogram();
    for (i, &l) in train.labels().iter().enumerate() {
        for (m, &x) in means[l as usize * d..(l as usize + 1) * d]
            .iter_mut()
            .zip(train.record(i).unwrap())
        {
            *m += f64::from(x) / counts[l as usize] as f64;
        }
    }
    let correct = (0..test.len())
        .filter(|&i| {
            let x = test.record(i).unwrap();
            let dist = |c: usize| -> f64 {
                means[c * d..(c + 1) * d]
                    .iter()
                    .zip(x)
                    .map(|(m, &v)| (m - f64::from(v)).powi(2))
                    .sum()
            };
            let best = (0..k).min_by(|&a, &b| dist(a).total_cmp(&dist(b))).unwrap();
            best as i64 == test.labels()[i]
        })
        .count();
    correct as f64 / test.len() as f64
}

fn accuracy(kind: DatasetKind, train_per_class: usize, test_per_class: usize) -> f64 {
    let spec = SyntheticSpec {
        seed: 11,
        train_per_class,
        test_per_class,
    };
    let s = generate(kind, &spec).unwrap();
    assert!(s.source().is_synthetic());
    nearest_class_mean_accuracy(&s.train, &s.test)
}

#[test]
fn fmnist_stand_in_is_learnable() {
    // Chance is 0.1 for 10 balanced classes.
    let acc = accuracy(DatasetKind::Fmnist, 50, 30);
    assert!(acc > 0.8, "accuracy {acc}");
}

#[test]
fn cifar10_stand_in_is_learnable() {
    let acc = accuracy(DatasetKind::Cifar10, 50, 30);
    assert!(acc > 0.8, "accuracy {acc}");
}

#[test]
fn purchase100_stand_in_is_learnable() {
    // Chance is 0.01 for 100 balanced classes.
    let acc = accuracy(DatasetKind::Purchase100, 20, 5);
    assert!(acc > 0.8, "accuracy {acc}");
}

#[test]
fn binary_task_of_the_stand_in_is_learnable_but_not_trivial_noise() {
    // The paper's binary task on the stand-in (classes 0 vs 1, Annamalai et al. 2024 §6.1).
    let spec = SyntheticSpec {
        seed: 3,
        train_per_class: 100,
        test_per_class: 100,
    };
    let s = generate(DatasetKind::Fmnist, &spec)
        .unwrap()
        .select_classes(&[0, 1])
        .unwrap();
    let acc = nearest_class_mean_accuracy(&s.train, &s.test);
    assert!(acc > 0.9, "accuracy {acc}");
    // Records of one class differ from each other (noise, shifts, contrast).
    assert_ne!(s.train.record(0), s.train.record(2));
}
