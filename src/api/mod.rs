//! The exported C and Fortran functions: argument checks, INFO, `xerbla_`, the panic
//! boundary and the conversion of raw pointers to Rust slices. Nothing here computes.
//!
//! Two conventions per routine (see DESIGN.md): the Fortran name (`dstebz_gpu_`) takes LAPACK's
//! exact argument list by reference with the hidden CHARACTER lengths last; the C name
//! (`dstebz_gpu`) has LAPACKE's shape and returns INFO.

pub mod gtsv;
pub mod interval;
pub mod stebz;
pub mod stein;
pub mod syev;
pub mod syrdb;

use std::any::Any;
use std::ffi::{c_char, c_int};

/// INFO returned when hylapack itself failed (a bug caught at the boundary, never a user error).
/// The message is printed on stderr. Distinct from every LAPACK INFO value.
pub const HYLAPACK_INFO_INTERNAL_ERROR: c_int = -1000;

/// INFO returned by a routine that takes device pointers when no usable GPU is present or the
/// GPU failed (the reason is logged). Distinct from every LAPACK INFO value.
pub const HYLAPACK_INFO_NO_GPU: c_int = -1001;

/// Reports the illegal argument `-info` of `routine` (an upper-case name) through `xerbla_`.
pub(crate) fn report_illegal_argument(routine: &str, info: c_int) {
    let arg = -info;
    // Some xerbla_ implementations (OpenBLAS's) print the name with %s, so it must also be
    // NUL-terminated although its length is passed.
    let name = std::ffi::CString::new(routine).unwrap_or_default();
    match crate::lapack::symbols::xerbla() {
        // SAFETY: xerbla_ reads `srname_len` bytes of the NUL-terminated name and the integer.
        Some(xerbla) => unsafe { xerbla(name.as_ptr(), &arg, routine.len()) },
        None => eprintln!(" ** On entry to {routine} parameter number {arg} had an illegal value"),
    }
}

/// Prints what a caught panic said, so a bug is visible even though the host program goes on.
pub(crate) fn report_panic(routine: &str, payload: &(dyn Any + Send)) {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    eprintln!("hylapack: internal error in {routine}: {msg}; returning INFO = {HYLAPACK_INFO_INTERNAL_ERROR}");
}

/// Runs `body` so that no panic crosses the FFI boundary: a panic becomes `on_panic`.
macro_rules! ffi_boundary {
    ($routine:expr, $on_panic:expr, $body:block) => {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| $body)) {
            Ok(value) => value,
            Err(payload) => {
                $crate::api::report_panic($routine, payload.as_ref());
                $on_panic
            }
        }
    };
}
pub(crate) use ffi_boundary;

/// Reads a Fortran CHARACTER argument: its first character (as LAPACK's LSAME does, whatever
/// the hidden length says: C callers may not pass one), or a blank if the pointer is null.
///
/// # Safety
/// `p` is null or points to at least one readable byte.
pub unsafe fn fortran_char(p: *const c_char) -> u8 {
    if p.is_null() {
        b' '
    } else {
        *p as u8
    }
}

/// Reads a scalar passed by reference; `None` for a null pointer.
///
/// # Safety
/// `p` is null or valid for reads.
pub(crate) unsafe fn scalar<T: Copy>(p: *const T) -> Option<T> {
    (!p.is_null()).then(|| *p)
}

/// An input array of `len` entries; `None` if it is needed and null.
///
/// # Safety
/// `p` is null or valid for `len` reads.
pub(crate) unsafe fn input<'a, T>(p: *const T, len: usize) -> Option<&'a [T]> {
    if len == 0 {
        Some(&[])
    } else if p.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts(p, len))
    }
}

/// An output array of `len` entries; `None` if it is needed and null.
///
/// # Safety
/// `p` is null or valid for `len` writes, and aliases no other argument.
pub(crate) unsafe fn output<'a, T>(p: *mut T, len: usize) -> Option<&'a mut [T]> {
    if len == 0 {
        Some(&mut [])
    } else if p.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts_mut(p, len))
    }
}

/// The library version, e.g. "0.1.0" (a static NUL-terminated string).
#[no_mangle]
pub extern "C" fn hylapack_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// 1 if a usable GPU was found (driver, device and NVRTC present), else 0. The first call
/// discovers the GPU; it never fails or aborts on a host without CUDA.
#[no_mangle]
pub extern "C" fn hylapack_gpu_available() -> c_int {
    ffi_boundary!("hylapack_gpu_available", 0, {
        crate::device::gpu().is_ok() as c_int
    })
}
