//! hylapack: LAPACK-compatible routines that run on NVIDIA GPUs where that pays, and on the
//! CPU (or the system LAPACK) everywhere else. See DESIGN.md in the project's shared folder
//! for the layers; this crate builds `libhylapack.so`, `libhylapack.a` and the Rust library.

pub mod api;
pub mod config;
pub mod device;
pub mod dispatch;
pub mod gtsv;
pub mod host;
pub mod interval;
pub mod lapack;
pub mod log;
pub mod real;
pub mod sbr;
pub mod stebz;
pub mod stein;
pub mod syev;
pub mod testmat;

/// Facts fixed at build time.
#[doc(hidden)]
pub mod build_info {
    /// The C header cbindgen generated from this build's sources (compared with the checked-in
    /// `include/hylapack.h` by a test).
    pub const GENERATED_HEADER: &str = include_str!(concat!(env!("OUT_DIR"), "/hylapack.h"));
}
