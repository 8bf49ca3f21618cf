//! Dataset parsers into host buffers, deterministic synthetic stand-ins, and
//! samplers as index streams.
//!
//! This crate never depends on tch.
