//! The commands that need no libtorch, one module each: the clap argument
//! structs and `run*`. The `dpaudit` binary runs them in its own process.

pub mod account;
pub mod compare;
pub mod counts;
pub mod data;
pub mod estimate;
pub mod merge;
pub mod slurm;
