//! xSTEIN: hylapack's inverse iteration with `HYLAPACK_PRELOAD=own`; forwarded in `auto` mode
//! (its GPU path is not yet measured against the program's own DSTEIN at the sizes LAPACK's
//! drivers call it with, and on the host LAPACK's own is the reference), and for illegal
//! arguments and calls from inside hylapack. LAPACK's DSYEVX, DSTEVX, DSPEVX and DSBEVX call
//! xSTEIN themselves, so with `own` those reach this path too.

use crate::{forward, mode, set_info, Inside, Mode, FROM_INSIDE, ILLEGAL};
use hylapack::lapack::signatures::SteinFn;
use std::ffi::c_int;

/// Why a call is forwarded in `auto` mode.
const NO_GPU_PATH: &str = "xSTEIN runs hylapack's path only with HYLAPACK_PRELOAD=own";

macro_rules! interpose_stein {
    ($name:ident, $t:ty, $routine:literal) => {
        /// LAPACK's xSTEIN, interposed.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            n: *const c_int,
            d: *const $t,
            e: *const $t,
            m: *const c_int,
            w: *const $t,
            iblock: *const c_int,
            isplit: *const c_int,
            z: *mut $t,
            ldz: *const c_int,
            work: *mut $t,
            iwork: *mut c_int,
            ifail: *mut c_int,
            info: *mut c_int,
        ) {
            let why = match Inside::enter() {
                None => FROM_INSIDE,
                Some(_) if mode() == Mode::Auto => NO_GPU_PATH,
                Some(_inside) => {
                    let ran = hylapack::api::stein::interposed::<$t>(
                        $routine, n, d, e, m, w, iblock, isplit, z, ldz, ifail,
                    );
                    if let Some(result) = ran {
                        return set_info(info, result);
                    }
                    ILLEGAL
                }
            };
            forward!(
                $name,
                SteinFn<$t>,
                $routine,
                n,
                why,
                info,
                (n, d, e, m, w, iblock, isplit, z, ldz, work, iwork, ifail, info)
            )
        }
    };
}

interpose_stein!(dstein_, f64, "DSTEIN");
interpose_stein!(sstein_, f32, "SSTEIN");
