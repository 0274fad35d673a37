#!/usr/bin/python3
"""scipy_client.py — Debian's own SciPy (python3-scipy, linked against the
system LAPACK) as a real client of libhylapack_preload.so.

    /usr/bin/python3 -I scipy_client.py --preload /path/to/libhylapack_preload.so

runs the same workload twice in child processes of the system Python: once
plain (LD_PRELOAD removed) and once with LD_PRELOAD=<lib> HYLAPACK_LOG=info,
then checks

  * scipy.linalg.eigvalsh_tridiagonal(d, e, lapack_driver='stebz'), all
    eigenvalues and select='i', on a random n = 1000 matrix: preloaded ==
    plain within 1e-12 ||T||, and both == numpy's eigvalsh of the dense T
    within 1e-12 ||T||;
  * scipy.linalg.lapack.dstebz directly (RANGE 'A', ORDER 'B') on a matrix
    that splits: M, NSPLIT, IBLOCK, ISPLIT equal, W within 1e-12 ||T||;
  * scipy.linalg.lapack.dgtsv (intercepted: hylapack's path on the GPU, else
    forwarded to the system LAPACK, with a log line either way): small
    residual, same solution as the plain run;
  * scipy.linalg.eigvalsh / eigh on a small dense matrix: same as the plain run;
    eigvalsh's DSYEVR (JOBZ = 'N') is intercepted (forwarded below the size
    threshold, with a log line)
    (the subset_by_index calls reach dstebz_ from inside LAPACK's DSYEVR/DSYEVX;
    whether that nested call is interposed too is reported, not required);
  * the preloaded run's stderr has one "hylapack: DSTEBZ n=1000 backend=..."
    line per tridiagonal call, the "n=600" line of the direct call and one
    "hylapack: DGTSV n=1000 backend=..." line; the plain run's has none.

Seed: HYLAPACK_TEST_SEED (default 20261122), printed. Exit status 0 on success;
every failed check prints a line starting with "FAIL".
"""
import os
import re
import subprocess
import sys
import tempfile

SEED = int(os.environ.get("HYLAPACK_TEST_SEED") or 20261122)
N_TRIDIAG = 1000
SELECT = (100, 399)  # 0-based, inclusive: eigenvalues 101..400
N_SPLIT = 600
N_GTSV = 1000
N_DENSE = 50
TIMEOUT_S = 600


def tridiag_inputs():
    import numpy as np

    rng = np.random.default_rng(SEED)
    d = rng.standard_normal(N_TRIDIAG)
    e = rng.standard_normal(N_TRIDIAG - 1)
    # A matrix that splits into blocks (exact zeros in e) for the direct call.
    ds = rng.uniform(-2.0, 2.0, N_SPLIT)
    es = rng.uniform(-1.0, 1.0, N_SPLIT - 1)
    es[[99, 299, 300, 450]] = 0.0
    # A general tridiagonal system for dgtsv.
    gl = rng.standard_normal(N_GTSV - 1)
    gd = rng.standard_normal(N_GTSV)
    gu = rng.standard_normal(N_GTSV - 1)
    gb = rng.standard_normal((N_GTSV, 2))
    # A small dense symmetric matrix.
    a = rng.standard_normal((N_DENSE, N_DENSE))
    a = a + a.T
    return d, e, ds, es, gl, gd, gu, gb, a


def tnorm(d, e):
    """max row sum of |T| (T symmetric tridiagonal)."""
    import numpy as np

    ae = np.abs(e)
    rows = np.abs(d).copy()
    rows[:-1] += ae
    rows[1:] += ae
    return float(rows.max())


# ------------------------------------------------------------------- child
def child(out_path):
    import numpy as np
    import scipy
    import scipy.linalg as sl
    from scipy.linalg import lapack

    d, e, ds, es, gl, gd, gu, gb, a = tridiag_inputs()
    res = {}
    res["w_all"] = sl.eigvalsh_tridiagonal(d, e, lapack_driver="stebz")
    res["w_sel"] = sl.eigvalsh_tridiagonal(
        d, e, select="i", select_range=SELECT, lapack_driver="stebz"
    )
    # dstebz(d, e, range, vl, vu, il, iu, tol, order): range 0 = 'A'.
    m, w, iblock, isplit, info = lapack.dstebz(ds, es, 0, 0.0, 1.0, 1, 1, 0.0, "B")
    res["split_m"] = np.array([m, info])
    res["split_w"] = w[:m]
    res["split_iblock"] = iblock[:m]
    res["split_isplit"] = isplit
    du2, dd, du, x, info = lapack.dgtsv(gl, gd, gu, gb)
    res["gtsv_x"] = x
    res["gtsv_info"] = np.array([info])
    res["dense_all"] = sl.eigvalsh(a)
    res["dense_sel_evr"] = sl.eigvalsh(a, subset_by_index=[0, 9])
    res["dense_sel_evx"] = sl.eigvalsh(a, subset_by_index=[5, 14], driver="evx")
    wv, v = sl.eigh(a, subset_by_index=[0, 9])
    res["dense_eigh_w"] = wv
    res["dense_eigh_resid"] = np.array(
        [np.linalg.norm(a @ v - v * wv) / np.linalg.norm(a, 2)]
    )
    np.savez(out_path, **res)
    print(f"child: scipy {scipy.__version__} from {os.path.dirname(scipy.__file__)}")


# ------------------------------------------------------------------ parent
failures = []


def check(ok, what):
    if ok:
        print(f"ok: {what}")
    else:
        failures.append(what)
        print(f"FAIL: {what}")


def run_child(tmp, name, env):
    out = os.path.join(tmp, name + ".npz")
    cmd = [sys.executable, "-I", os.path.abspath(__file__), "--child", out]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    sys.stdout.write(f"--- {name} run: exit {p.returncode}\n{p.stdout}")
    sys.stdout.write("".join(f"[{name} stderr] {l}\n" for l in p.stderr.splitlines()[:40]))
    if p.returncode != 0:
        check(False, f"{name} run exited with {p.returncode}")
        return None, p.stderr
    import numpy as np

    with np.load(out) as z:
        return {k: z[k] for k in z.files}, p.stderr


def parent(preload):
    import numpy as np

    print(f"scipy_client: python {sys.executable}, seed {SEED} (set HYLAPACK_TEST_SEED to change)")
    print(f"scipy_client: preload library {preload}")
    check(os.path.isfile(preload), "the preload library exists")

    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "HYLAPACK_LOG")}
    with tempfile.TemporaryDirectory(prefix="hylapack-scipy-") as tmp:
        plain, plain_err = run_child(tmp, "plain", dict(base))
        pre_env = dict(base, LD_PRELOAD=preload, HYLAPACK_LOG="info")
        pre, pre_err = run_child(tmp, "preload", pre_env)
    if plain is None or pre is None:
        return 1

    # ---- the log proves interception
    lines = re.findall(r"^hylapack: DSTEBZ n=(\d+) backend=(\w+).*$", pre_err, re.M)
    by_n = {}
    for n, backend in lines:
        by_n.setdefault(int(n), []).append(backend)
    print(f"scipy_client: intercepted DSTEBZ calls by n: {by_n}")
    check(len(by_n.get(N_TRIDIAG, [])) == 2,
          f"log: 2 'hylapack: DSTEBZ n={N_TRIDIAG} backend=' lines (eigvalsh_tridiagonal all, select='i')")
    check(len(by_n.get(N_SPLIT, [])) == 1,
          f"log: 1 'hylapack: DSTEBZ n={N_SPLIT} backend=' line (lapack.dstebz)")
    gtsv_lines = re.findall(rf"^hylapack: DGTSV n={N_GTSV} backend=(\w+)(.*)$", pre_err, re.M)
    print(f"scipy_client: intercepted DGTSV calls: {gtsv_lines}")
    check(len(gtsv_lines) == 1, f"log: 1 'hylapack: DGTSV n={N_GTSV} backend=' line (lapack.dgtsv)")
    evr = re.findall(rf"^hylapack: DSYEV[RXD]? n={N_DENSE} backend=(\w+)(.*)$", pre_err, re.M)
    print(f"scipy_client: intercepted dense eigenvalue driver calls (n={N_DENSE}): {len(evr)}")
    check(len(evr) >= 1, f"log: eigvalsh's DSYEVR (JOBZ = 'N', n={N_DENSE}) intercepted")
    check("hylapack:" not in plain_err, "plain run: no hylapack log lines")
    nested = len(by_n.get(N_DENSE, []))
    print(f"scipy_client: dstebz_ called from inside LAPACK (DSYEVR/DSYEVX, n={N_DENSE}): "
          f"{'interposed, ' + str(nested) + ' calls' if nested else 'not interposed'}")

    # ---- eigenvalues of the tridiagonal matrix
    d, e, ds, es, gl, gd, gu, gb, a = tridiag_inputs()
    t = tnorm(d, e)
    tol = 1e-12 * t
    dense = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    ref = np.linalg.eigvalsh(dense)
    lo, hi = SELECT

    def close(x, y, tol_, what):
        same_shape = np.shape(x) == np.shape(y)
        err = float(np.max(np.abs(x - y))) if same_shape and np.size(x) else 0.0
        bitwise = same_shape and np.array_equal(x, y)
        check(same_shape and err <= tol_,
              f"{what}: max diff {err:.3g} (tolerance {tol_:.3g}){' (bitwise equal)' if bitwise else ''}")

    close(pre["w_all"], plain["w_all"], tol, "eigvalsh_tridiagonal all: preload vs plain")
    close(pre["w_all"], ref, tol, "eigvalsh_tridiagonal all: preload vs dense eigvalsh")
    close(plain["w_all"], ref, tol, "eigvalsh_tridiagonal all: plain vs dense eigvalsh")
    close(pre["w_sel"], plain["w_sel"], tol, "eigvalsh_tridiagonal select='i': preload vs plain")
    close(pre["w_sel"], ref[lo:hi + 1], tol, "eigvalsh_tridiagonal select='i': preload vs dense")

    # ---- direct dstebz on a split matrix: structure exactly LAPACK's
    check(np.array_equal(pre["split_m"], plain["split_m"]) and pre["split_m"][1] == 0,
          f"lapack.dstebz split: M, INFO {pre['split_m'].tolist()} == plain {plain['split_m'].tolist()}")
    check(np.array_equal(pre["split_isplit"], plain["split_isplit"]),
          "lapack.dstebz split: ISPLIT (and NSPLIT) equal")
    check(np.array_equal(pre["split_iblock"], plain["split_iblock"]),
          "lapack.dstebz split: IBLOCK equal")
    close(pre["split_w"], plain["split_w"], 1e-12 * tnorm(ds, es), "lapack.dstebz split: W")

    # ---- dgtsv (intercepted): still works
    tg = np.diag(gd) + np.diag(gu, 1) + np.diag(gl, -1)
    for name, r in (("plain", plain), ("preload", pre)):
        x = r["gtsv_x"]
        resid = np.linalg.norm(tg @ x - gb) / (np.linalg.norm(tg, 1) * np.linalg.norm(x) + 1e-300)
        check(r["gtsv_info"][0] == 0 and resid <= 1e-12,
              f"lapack.dgtsv {name}: info {r['gtsv_info'][0]}, relative residual {resid:.3g}")
    close(pre["gtsv_x"], plain["gtsv_x"], 1e-10 * float(np.max(np.abs(plain["gtsv_x"]))),
          "lapack.dgtsv: preload vs plain")

    # ---- small dense eigenvalues (eigvalsh, eigh)
    an = float(np.linalg.norm(a, 2))
    dref = np.linalg.eigvalsh(a)
    for key, sl_ in (("dense_all", slice(0, N_DENSE)), ("dense_sel_evr", slice(0, 10)),
                     ("dense_sel_evx", slice(5, 15)), ("dense_eigh_w", slice(0, 10))):
        close(pre[key], plain[key], 1e-12 * an, f"{key}: preload vs plain")
        close(pre[key], dref[sl_], 1e-12 * an, f"{key}: preload vs numpy eigvalsh")
    check(pre["dense_eigh_resid"][0] <= 1e-12,
          f"eigh subset eigenvectors (preload): residual {pre['dense_eigh_resid'][0]:.3g}")

    if failures:
        print(f"scipy_client: {len(failures)} checks FAILED")
        return 1
    print("scipy_client: OK")
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--child":
        child(argv[2])
        return 0
    if len(argv) == 3 and argv[1] == "--preload":
        try:
            import numpy  # noqa: F401
            import scipy.linalg  # noqa: F401
        except ImportError as exc:
            print(f"FAIL: {sys.executable} cannot import numpy/scipy ({exc}); "
                  "install Debian's python3-scipy (scripts/setup does)")
            return 1
        return parent(argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
