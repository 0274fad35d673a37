//! The Fortran signatures of the standard LAPACK routines the preload library intercepts
//! (hidden CHARACTER lengths last), for code that calls them through a pointer.

use std::ffi::{c_char, c_int};

/// xSTEBZ.
pub type StebzFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *const T,
    *const T,
    *const c_int,
    *const c_int,
    *const T,
    *const T,
    *const T,
    *mut c_int,
    *mut c_int,
    *mut T,
    *mut c_int,
    *mut c_int,
    *mut T,
    *mut c_int,
    *mut c_int,
    usize,
    usize,
);

/// xGTSV.
pub type GtsvFn<T> = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
);

/// xSYEV and xSYEV_2STAGE.
pub type SyevFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
    usize,
    usize,
);

/// xSYEVD.
pub type SyevdFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
    *const c_int,
    *mut c_int,
    usize,
    usize,
);

/// xSYEVX.
pub type SyevxFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *const T,
    *const T,
    *const c_int,
    *const c_int,
    *const T,
    *mut c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut c_int,
    *mut c_int,
    *mut c_int,
    usize,
    usize,
    usize,
);

/// xSYEVR.
pub type SyevrFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *const T,
    *const T,
    *const c_int,
    *const c_int,
    *const T,
    *mut c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
    *mut T,
    *const c_int,
    *mut c_int,
    *const c_int,
    *mut c_int,
    usize,
    usize,
    usize,
);

/// xSTEIN.
pub type SteinFn<T> = unsafe extern "C" fn(
    *const c_int,
    *const T,
    *const T,
    *const c_int,
    *const T,
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut c_int,
    *mut c_int,
    *mut c_int,
);
