//! The model zoo. Models are explicit structs of layers, so the engine sees every
//! trainable layer; each file names its paper and states its parameter count.

pub mod convnet;
pub mod lenet5;
pub mod lenet_family;
pub mod mlp;
mod model;
mod residual;
pub mod resnet18;
pub mod shallow_cnn;
pub mod wrn;

pub use convnet::ConvNet;
pub use lenet5::LeNet5;
pub use mlp::Mlp;
pub use model::Model;
pub use resnet18::ResNet18;
pub use shallow_cnn::ShallowCnn;
pub use wrn::WideResNet;
