//! xSTEBZ: always hylapack's multisection path (it returns LAPACK's outputs), except for
//! illegal arguments and calls from inside hylapack, which are forwarded.

use crate::{forward, set_info, Inside, FROM_INSIDE, ILLEGAL};
use std::ffi::{c_char, c_int};

type StebzFn<T> = unsafe extern "C" fn(
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
                    let ran = hylapack::api::stebz::interposed::<$t>(
                        $routine, range, order, n, vl, vu, il, iu, abstol, d, e, m, nsplit, w,
                        iblock, isplit,
                    );
                    if let Some(result) = ran {
                        return set_info(info, result);
                    }
                    ILLEGAL
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
