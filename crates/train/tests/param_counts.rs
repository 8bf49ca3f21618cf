//! Every model states its parameter count; these are checked here against the
//! numbers of the papers (Annamalai et al. 2024 §6.1, Cebere et al. 2024 §5.1 and App. D, Table 2) and, for WRN-16-4, the
//! sum of the layer shapes in `models/wrn.rs`.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::models::{ConvNet, LeNet5, Mlp, ResNet18, ShallowCnn, WideResNet};
use dpaudit_train::{Init, Model};
use tch::Device;

fn init(m: usize) -> Init {
    Init::new(0, m, Device::Cpu)
}

#[test]
fn mlp_purchase100_has_22532_parameters() {
    // Annamalai et al. 2024 §6.1: 600 → 32 → 100.
    assert_eq!(
        Mlp::purchase100(&mut init(1)).unwrap().num_parameters(),
        22_532
    );
    // Independent of the number of replicas.
    assert_eq!(
        Mlp::purchase100(&mut init(3)).unwrap().num_parameters(),
        22_532
    );
}

#[test]
fn lenet5_two_classes_has_61026_parameters() {
    // Annamalai et al. 2024 App. C, Table 3.
    assert_eq!(
        LeNet5::new(&mut init(1), 2).unwrap().num_parameters(),
        61_026
    );
}

#[test]
fn shallow_cnn_two_classes_has_549538_parameters() {
    // Annamalai et al. 2024 App. C, Table 2.
    assert_eq!(
        ShallowCnn::new(&mut init(1), 2).unwrap().num_parameters(),
        549_538
    );
}

#[test]
fn convnet_has_62006_parameters() {
    // Cebere et al. 2024 §5.1 and App. D, Table 2.
    assert_eq!(
        ConvNet::new(&mut init(1), 10).unwrap().num_parameters(),
        62_006
    );
}

#[test]
fn resnet18_ten_classes_has_11173962_parameters() {
    // Cebere et al. 2024 §5.1 and App. D, Table 2.
    assert_eq!(
        ResNet18::new(&mut init(1), 10, 32, [3, 32, 32])
            .unwrap()
            .num_parameters(),
        11_173_962
    );
}

#[test]
fn wrn_16_4_ten_classes_has_2748890_parameters() {
    // Layer by layer (models/wrn.rs layout): stem 432; group 1: 32+9,216+128+36,864+1,024
    // + 128+36,864+128+36,864; group 2: 128+73,728+256+147,456+8,192 + 256+147,456+256+147,456;
    // group 3: 256+294,912+512+589,824+32,768 + 512+589,824+512+589,824; norm 512; fc 2,570.
    assert_eq!(
        WideResNet::new(&mut init(1), 16, 4, 10, 16, [3, 32, 32])
            .unwrap()
            .num_parameters(),
        2_748_890
    );
}

#[test]
fn parameter_names_are_pytorch_names() {
    let names: Vec<String> = LeNet5::new(&mut init(1), 2)
        .unwrap()
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        names,
        [
            "conv1.weight",
            "conv1.bias",
            "conv2.weight",
            "conv2.bias",
            "fc1.weight",
            "fc1.bias",
            "fc2.weight",
            "fc2.bias",
            "fc3.weight",
            "fc3.bias"
        ]
    );
    let r = ResNet18::new(&mut init(1), 10, 32, [3, 32, 32]).unwrap();
    let names: Vec<String> = r.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"layer2.0.shortcut.0.weight".to_string()));
    assert!(names.contains(&"layer4.1.bn2.bias".to_string()));
    assert_eq!(names.last().unwrap(), "linear.bias");
}
