//! Dataset parsers into host buffers, deterministic synthetic stand-ins, and
//! samplers as index streams.
//!
//! This crate never depends on tch. Datasets come as [`Dataset`]: flat `f32`
//! features, `i64` labels and a per-record shape (see [`dataset`] for the
//! layout), tagged with their [`Source`] (real files with SHA-256, or
//! synthetic with its seed).
//!
//! - Readers: [`fmnist`] (IDX, gzip or raw), [`cifar10`] (binary batches),
//!   [`purchase`] (text); [`load()`] picks real files or the [`synthetic`]
//!   stand-in.
//! - Transformations on [`Dataset`]: class subsets with relabelling,
//!   seeded downsampling and splits; [`Normalization`].
//! - [`fetch`]: download from the official URL, verify SHA-256, unpack.
//! - [`atomic`]: files written whole or not at all, with the mode an
//!   ordinary new file gets (the workspace's one atomic writer).

pub mod atomic;
pub mod cifar10;
pub mod dataset;
pub mod error;
pub mod fetch;
pub mod files;
pub mod fmnist;
pub mod idx;
pub mod load;
pub mod purchase;
pub mod sampler;
pub mod seed;
pub mod synthetic;

pub use dataset::{
    Dataset, DatasetKind, Normalization, Source, SourceFile, Splits, CIFAR10_CLASSES,
    FMNIST_CLASSES,
};
pub use error::{DataError, Position, Result};
pub use load::{load, load_dir};
