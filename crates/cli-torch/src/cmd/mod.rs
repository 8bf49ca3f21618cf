//! The commands that need libtorch, one module each (`run*`; their clap
//! argument structs are in `dpaudit_cli::args`), and [`experiment`], what
//! `run`, `bgm` and `panoramia` share.

pub mod bench;
pub mod bgm;
pub mod demo;
pub mod doctor;
pub mod experiment;
pub mod panoramia;
pub mod run;
pub mod selftest;
pub mod slurm;
pub mod train;
