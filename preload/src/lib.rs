//! `libhylapack_preload.so`: the library for `LD_PRELOAD` (or for linking before `-llapack`).
//! It will export the standard LAPACK names of the routines hylapack accelerates, each either
//! running hylapack's path or forwarding, untouched, to the next definition of the symbol
//! (`dlsym(RTLD_NEXT, …)`). Until those land it exports only its version, so preloading it
//! changes nothing.

use std::ffi::c_char;

/// The version of the preload library (a static NUL-terminated string).
#[no_mangle]
pub extern "C" fn hylapack_preload_version() -> *const c_char {
    // Keeps the dependency on hylapack explicit: the interposed routines will call into it.
    let _ = hylapack::api::HYLAPACK_INFO_INTERNAL_ERROR;
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_is_a_c_string() {
        let v = unsafe { std::ffi::CStr::from_ptr(super::hylapack_preload_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
