//! xSTEIN: hylapack's inverse iteration where the library's own dispatch would run it on the
//! GPU (`dispatch::decide_stein`: with a GPU present, N ≥ `STEIN_MIN_N` and N × M ≥
//! `STEIN_MIN_ENTRIES`, or every size with `HYLAPACK_DEVICE=gpu`), and every call with
//! `HYLAPACK_PRELOAD=own`; forwarded otherwise — with `HYLAPACK_PRELOAD=auto` (the default) on
//! a host without a GPU or with `HYLAPACK_DEVICE=cpu`, every call, at the cost of the decision
//! alone — and for illegal arguments and calls from inside hylapack. On the host LAPACK's own
//! xSTEIN is the reference, so `auto` mode does not replace it there. LAPACK's DSYEVX, DSTEVX,
//! DSPEVX and DSBEVX call xSTEIN themselves, so their calls take the same route.

use crate::{forward, mode, set_info, Inside, Mode, FROM_INSIDE, ILLEGAL};
use hylapack::dispatch::{self, Backend};
use hylapack::lapack::signatures::SteinFn;
use std::ffi::c_int;

/// Why a call is forwarded in `auto` mode, if it is: wherever `dstein_gpu` would run on the
/// host. Illegal N or M are forwarded (LAPACK reports them); NULL ones are left to the checks.
unsafe fn forwarded_in_auto(n: *const c_int, m: *const c_int) -> Option<String> {
    if mode() != Mode::Auto {
        return None;
    }
    let (&n, &m) = (n.as_ref()?, m.as_ref()?);
    if n < 0 || m < 0 || m > n {
        return Some(ILLEGAL.to_string());
    }
    let decision = dispatch::decide_stein(n as usize, m as usize);
    (decision.backend == Backend::Cpu).then(|| decision.why_not_gpu.unwrap_or_default())
}

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
                None => FROM_INSIDE.to_string(),
                Some(_inside) => {
                    if let Some(why) = forwarded_in_auto(n, m) {
                        why
                    } else {
                        let ran = hylapack::api::stein::interposed::<$t>(
                            $routine, n, d, e, m, w, iblock, isplit, z, ldz, ifail,
                        );
                        if let Some(result) = ran {
                            return set_info(info, result);
                        }
                        ILLEGAL.to_string()
                    }
                }
            };
            forward!(
                $name,
                SteinFn<$t>,
                $routine,
                n,
                &why,
                info,
                (n, d, e, m, w, iblock, isplit, z, ldz, work, iwork, ifail, info)
            )
        }
    };
}

interpose_stein!(dstein_, f64, "DSTEIN");
interpose_stein!(sstein_, f32, "SSTEIN");
