//! One module per subcommand. Each exposes clap argument structs and `run*`.

pub mod account;
pub mod bench;
pub mod bgm;
pub mod counts;
pub mod data;
pub mod demo;
pub mod doctor;
pub mod estimate;
pub mod merge;
pub mod panoramia;
pub mod run;
pub mod selftest;
pub mod slurm;
pub mod train;
