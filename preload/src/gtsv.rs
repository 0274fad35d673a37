//! xGTSV: hylapack's SPIKE path where the route says so (then DL, D and DU hold SPIKE's
//! factors, not LAPACK's LU factors: LAPACK documents them as overwritten), else forwarded.

use crate::{forward, route, run_logged, set_info, Inside, Route, FROM_INSIDE, ILLEGAL, NULL_ARG};
use hylapack::dispatch::{Backend, Family};
use hylapack::gtsv::{self, GtsvReport, Options};
use hylapack::lapack::signatures::GtsvFn;
use hylapack::lapack::{span, Lapack};
use std::ffi::c_int;

/// Runs hylapack's path for a legal xGTSV call with N ≥ 1 on `backend`; returns INFO.
#[allow(clippy::too_many_arguments)]
unsafe fn solve_here<T: Lapack>(
    routine: &str,
    backend: Backend,
    n: usize,
    nrhs: usize,
    dl: *mut T,
    d: *mut T,
    du: *mut T,
    b: *mut T,
    ldb: usize,
) -> c_int {
    let dl = std::slice::from_raw_parts_mut(dl, n - 1);
    let d = std::slice::from_raw_parts_mut(d, n);
    let du = std::slice::from_raw_parts_mut(du, n - 1);
    let b: &mut [T] = if nrhs == 0 {
        &mut []
    } else {
        std::slice::from_raw_parts_mut(b, span(n, nrhs, ldb))
    };
    // On the CPU, SPIKE at every order (the library's default leaves small ones to LAPACK).
    let options = Options {
        cpu_min_n: 2,
        ..Options::default()
    };
    let solved = run_logged(
        routine,
        n,
        || gtsv::gtsv_with(&options, dl, d, du, b, ldb, nrhs, backend),
        |r: &GtsvReport| (r.info, r.backend, r.note.clone()),
    );
    solved.map_or_else(|info| info, |r| r.info)
}

macro_rules! interpose_gtsv {
    ($name:ident, $t:ty, $routine:literal) => {
        /// LAPACK's xGTSV, interposed.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            n: *const c_int,
            nrhs: *const c_int,
            dl: *mut $t,
            d: *mut $t,
            du: *mut $t,
            b: *mut $t,
            ldb: *const c_int,
            info: *mut c_int,
        ) {
            let why = match Inside::enter() {
                None => FROM_INSIDE.to_string(),
                Some(_inside) => match (n.as_ref(), nrhs.as_ref(), ldb.as_ref()) {
                    (Some(&n_), Some(&nrhs_), Some(&ldb_)) => {
                        if gtsv::check_args(n_, nrhs_, ldb_) != 0 {
                            ILLEGAL.to_string()
                        } else if n_ == 0 {
                            "N = 0".to_string()
                        } else {
                            match route(Family::Gtsv, n_ as usize) {
                                Route::Here(backend) => {
                                    let r = solve_here::<$t>(
                                        $routine,
                                        backend,
                                        n_ as usize,
                                        nrhs_ as usize,
                                        dl,
                                        d,
                                        du,
                                        b,
                                        ldb_ as usize,
                                    );
                                    return set_info(info, r);
                                }
                                Route::Forward(why) => why,
                            }
                        }
                    }
                    _ => NULL_ARG.to_string(),
                },
            };
            forward!(
                $name,
                GtsvFn<$t>,
                $routine,
                n,
                &why,
                info,
                (n, nrhs, dl, d, du, b, ldb, info)
            )
        }
    };
}

interpose_gtsv!(dgtsv_, f64, "DGTSV");
interpose_gtsv!(sgtsv_, f32, "SGTSV");
