//! Stub
pub mod count;
pub mod gpu;
