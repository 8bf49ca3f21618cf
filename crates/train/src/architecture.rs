//! The model a config names: [`build_model`] (the one place that maps a
//! [`ModelConfig`] to a model of the zoo).

use tch::Tensor;

use crate::config::ModelConfig;
use crate::error::{Result, TrainError};
use crate::init::Init;
use crate::layers::{ops, PerSampleGrad, Tape};
use crate::models::{ConvNet, LeNet5, Mlp, Model, ResNet18, ShallowCnn, WideResNet};

/// Build the configured model with `M = replicas` on `device`.
pub fn build_model(
    config: &ModelConfig,
    sample_shape: &[usize],
    classes: i64,
    init: &mut Init,
) -> Result<Box<dyn Model>> {
    let shape: Vec<i64> = sample_shape.iter().map(|&d| d as i64).collect();
    let image = |what: &str| -> Result<[i64; 3]> {
        match shape.as_slice() {
            &[c, h, w] => Ok([c, h, w]),
            _ => Err(TrainError::Shape {
                what: what.into(),
                got: shape.clone(),
                expected: "[C, H, W] images".into(),
            }),
        }
    };
    Ok(match config {
        ModelConfig::Mlp { hidden } => {
            let mut widths = vec![shape.iter().product::<i64>()];
            widths.extend(hidden);
            widths.push(classes);
            Box::new(FlatMlp(Mlp::new(init, &widths)?, shape.clone()))
        }
        ModelConfig::Lenet5 => {
            if shape != [1, 28, 28] {
                return Err(TrainError::Shape {
                    what: "LeNet-5 input".into(),
                    got: shape,
                    expected: "[1, 28, 28]".into(),
                });
            }
            Box::new(LeNet5::new(init, classes)?)
        }
        ModelConfig::ShallowCnn => {
            if shape != [3, 32, 32] {
                return Err(TrainError::Shape {
                    what: "shallow CNN input".into(),
                    got: shape,
                    expected: "[3, 32, 32]".into(),
                });
            }
            Box::new(ShallowCnn::new(init, classes)?)
        }
        ModelConfig::Convnet => {
            if shape != [3, 32, 32] {
                return Err(TrainError::Shape {
                    what: "ConvNet input".into(),
                    got: shape,
                    expected: "[3, 32, 32]".into(),
                });
            }
            Box::new(ConvNet::new(init, classes)?)
        }
        ModelConfig::Resnet18 { groups, .. } => Box::new(ResNet18::new(
            init,
            classes,
            *groups,
            image("ResNet-18 input")?,
        )?),
        ModelConfig::Wrn {
            depth,
            width,
            groups,
            ..
        } => Box::new(WideResNet::new(
            init,
            *depth,
            *width,
            classes,
            *groups,
            image("WRN input")?,
        )?),
    })
}

/// An MLP fed with records of any shape, flattened.
#[derive(Debug)]
struct FlatMlp(Mlp, Vec<i64>);

impl Model for FlatMlp {
    fn replicas(&self) -> i64 {
        self.0.replicas()
    }
    fn sample_shape(&self) -> Vec<i64> {
        self.1.clone()
    }
    fn num_classes(&self) -> i64 {
        self.0.num_classes()
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        self.0.forward(&ops::flatten(x)?, tape)
    }
    fn layers(&self) -> Vec<(String, &dyn PerSampleGrad)> {
        self.0.layers()
    }
}
