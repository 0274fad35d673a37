//! xSTEBZ: hylapack's multisection path (it returns LAPACK's outputs) from order
//! [`OWN_FROM_N`] up, and at every order with `HYLAPACK_PRELOAD=own`; forwarded otherwise, and
//! for illegal arguments and calls from inside hylapack.

use crate::{forward, mode, set_info, Inside, Mode, FROM_INSIDE, ILLEGAL};
use hylapack::dispatch::{self, Backend, Family};
use hylapack::lapack::signatures::StebzFn;
use std::ffi::{c_char, c_int};

/// Below this order xSTEBZ is forwarded in `auto` mode: the multisection's fixed start-up
/// (buffers for 63 points per interval) cost 12–58 µs per call at n = 2–8 on the CPU, where
/// LAPACK takes 0.6–12 µs; at n = 32 it took 76 µs against LAPACK's 201 µs (`hylapack bench
/// overhead`, 2-core host, 2026-11-26).
const OWN_FROM_N: c_int = 16;

/// Why a call of order `n` is forwarded in `auto` mode, if it is (never when the dispatch
/// sends it to the GPU).
unsafe fn too_small(n: *const c_int) -> Option<&'static str> {
    let small = mode() == Mode::Auto
        && n.as_ref().is_some_and(|&n| {
            (0..OWN_FROM_N).contains(&n)
                && dispatch::decide(Family::Stebz, n as usize).backend == Backend::Cpu
        });
    small.then_some("below the order where hylapack's multisection pays on the CPU")
}

macro_rules! interpose_stebz {
    ($name:ident, $t:ty, $routine:literal) => {
        /// LAPACK's xSTEBZ, interposed: hylapack's multisection path, or forwarded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            range: *const c_char,
            order: *const c_char,
            n: *const c_int,
            vl: *const $t,
            vu: *const $t,
            il: *const c_int,
            iu: *const c_int,
            abstol: *const $t,
            d: *const $t,
            e: *const $t,
            m: *mut c_int,
            nsplit: *mut c_int,
            w: *mut $t,
            iblock: *mut c_int,
            isplit: *mut c_int,
            work: *mut $t,
            iwork: *mut c_int,
            info: *mut c_int,
            range_len: usize,
            order_len: usize,
        ) {
            let why = match Inside::enter() {
                None => FROM_INSIDE,
                Some(_inside) => {
                    if let Some(why) = too_small(n) {
                        why
                    } else {
                        let ran = hylapack::api::stebz::interposed::<$t>(
                            $routine, range, order, n, vl, vu, il, iu, abstol, d, e, m, nsplit, w,
                            iblock, isplit,
                        );
                        if let Some(result) = ran {
                            return set_info(info, result);
                        }
                        ILLEGAL
                    }
                }
            };
            forward!(
                $name,
                StebzFn<$t>,
                $routine,
                n,
                why,
                info,
                (
                    range, order, n, vl, vu, il, iu, abstol, d, e, m, nsplit, w, iblock, isplit,
                    work, iwork, info, range_len, order_len
                )
            )
        }
    };
}

interpose_stebz!(dstebz_, f64, "DSTEBZ");
interpose_stebz!(sstebz_, f32, "SSTEBZ");
