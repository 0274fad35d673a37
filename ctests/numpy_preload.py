"""NumPy's own linalg tests (Debian's python3-numpy, run by pytest) plain and under the preload
library: the outcomes must be the same, test by test, test_xerbla_override included (it proves
the program's own xerbla_ still wins).

    python3 numpy_preload.py --preload PATH
Prints "numpy_preload: N passed, N failed" last; exit status 0 when the runs agree."""

import argparse
import os
import re
import subprocess
import sys

import numpy

def outcomes(env):
    tests = os.path.join(os.path.dirname(numpy.__file__), "linalg", "tests")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", tests],
        capture_output=True, text=True, env=env, timeout=1200)
    found = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"^(\S+::\S+)\s+(PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found, proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    args = ap.parse_args()
    base = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    base.pop("LD_PRELOAD", None)
    plain, plain_last = outcomes(base)
    pre, pre_last = outcomes(dict(base, LD_PRELOAD=os.path.abspath(args.preload)))
    print(f"plain:   {plain_last}")
    print(f"preload: {pre_last}")
    differ = sorted(t for t in set(plain) | set(pre) if plain.get(t) != pre.get(t))
    for t in differ:
        print(f"FAIL: {t}: plain {plain.get(t)}, preload {pre.get(t)}")
    checks = {
        "the runs found tests": len(plain) > 0,
        "the same outcome for every test": not differ,
        "no test failed under the preload": "FAILED" not in pre.values() and "ERROR" not in pre.values(),
        "test_xerbla_override passed under the preload": any(
            t.endswith("test_xerbla_override") and o == "PASSED" for t, o in pre.items()),
    }
    for what, ok in checks.items():
        if not ok:
            print(f"FAIL: {what}")
    failed = sum(not ok for ok in checks.values())
    print(f"numpy_preload: {len(checks) - failed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
