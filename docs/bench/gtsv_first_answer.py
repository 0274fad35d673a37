#!/usr/bin/env python3
"""Where SPIKE's first answer loses accuracy (issue #27): a NumPy model of the solver's
arithmetic, not the product.

The product's GPU solver cuts the rows into partitions of m - 1 interior rows and one
separator row, solves each partition (asymmetric Bunch-Kaufman diagonal pivoting,
src/gtsv/pivoting.rs), forms the tridiagonal separator system, solves that recursively and
substitutes back. On random systems its first answer's relative residual is a few times
LAPACK's, so a refinement step follows. This model asks which part causes that:

  bk  partitions by diagonal pivoting (as the product), pp  by partial pivoting (LAPACK's
  GEPP on each partition, the pivoting tridigpu uses);  m = 8, 16, 32;
  rec  the separator system solved recursively (as the product),  one  by LAPACK dgtsv.

Usage: python3 gtsv_first_answer.py SEED LOG2N   (needs numpy and scipy).
Output: ||A x - b||_2 / ||b||_2 of LAPACK dgtsv and of each first answer, 4 systems.
"""
import sys

import numpy as np
from scipy.linalg import lapack

def bk_solve(a, b, c, F):
    """Batched asymmetric Bunch-Kaufman diagonal pivoting (as pivoting.rs), a,b,c: (P,MI) with
    a[:,0]=0, c[:,-1]=0; F: (P,MI,K). Returns X."""
    P, MI = b.shape
    kappa = 0.6180339887498949
    K = F.shape[2]
    # Row by row, every partition at once (masks say which take a 1x1 or a 2x2 pivot).
    first2 = np.zeros((P,MI), bool); piv = np.zeros((P,MI)); mult = np.zeros((P,MI))
    bt = b[:,0].copy()
    skip = np.zeros(P, bool)
    def g(arr, idx):
        out = np.zeros(P)
        ok = idx < MI
        out[ok] = arr[np.arange(P)[ok], idx[ok]]
        return out
    for step in range(MI):
        # all partitions at row step; skip those in middle of 2x2
        kk = np.full(P, step)
        act = ~skip
        a1 = g(a, kk+1); c0 = g(c, kk); a2 = g(a, kk+2); b1 = g(b, kk+1); c1 = g(c, kk+1); b2 = g(b,kk+2)
        sigma = np.maximum.reduce([abs(a1),abs(a2),abs(b1),abs(c0),abs(c1)])
        one = (kk+1 >= MI) | (abs(bt)*sigma >= kappa*abs(a1*c0))
        o = act & one; t = act & ~one
        piv[o, step] = bt[o]; mult[o, step] = c0[o]/bt[o]
        nbt = bt.copy()
        nbt[o] = b1[o] - a1[o]*c0[o]/bt[o]
        delta = bt*b1 - a1*c0
        first2[t, step] = True; piv[t, step] = bt[t]
        if step+1 < MI: piv[t, step+1] = delta[t]
        mult[t, step] = -(c0[t]*c1[t])/delta[t]
        if step+1 < MI: mult[t, step+1] = bt[t]*c1[t]/delta[t]
        nbt[t] = b2[t] - a2[t]*(bt[t]*c1[t]/delta[t])
        bt = nbt
        skip = t
    # solve
    X = F.copy()
    yprev = np.zeros((P,K)); skip = np.zeros(P,bool)
    for kk in range(MI):
        act = ~skip
        z = X[:,kk,:] - (a[:,kk][:,None]*yprev if kk>0 else 0)
        f2 = first2[:,kk] & act
        o = act & ~f2
        y = np.zeros((P,K))
        y[o] = z[o]/piv[o,kk][:,None]
        X[o,kk,:] = y[o]; yprev = np.where(o[:,None], y, yprev)
        if f2.any():
            z2 = X[f2,kk+1,:]; delta = piv[f2,kk+1][:,None]
            y0 = (b[f2,kk+1][:,None]*z[f2] - c[f2,kk][:,None]*z2)/delta
            y1 = (piv[f2,kk][:,None]*z2 - a[f2,kk+1][:,None]*z[f2])/delta
            X[f2,kk,:] = y0; X[f2,kk+1,:] = y1
            yprev[f2] = y1
        skip = f2
    for kk in range(MI-1,-1,-1):
        nxt = np.where(first2[:,kk], kk+2, kk+1)
        ok = nxt < MI
        idx = np.where(ok)[0]
        X[idx,kk,:] -= mult[idx,kk][:,None]*X[idx, nxt[idx], :]
    return X

def pp_solve(a, b, c, F):
    P, MI = b.shape
    A = np.zeros((P,MI,MI))
    i = np.arange(MI)
    A[:, i, i] = b
    A[:, i[1:], i[:-1]] = a[:,1:]
    A[:, i[:-1], i[1:]] = c[:,:-1]
    return np.linalg.solve(A, F)

def spike(dl, d, du, f, m, part, base=32, top=True):
    n = d.shape[0]
    if n <= base and not top:
        _,_,_,x,info = lapack.dgtsv(dl.copy(), d.copy(), du.copy(), f.copy())
        return x
    P = -(-n // m)
    N = P*m
    A_ = np.zeros(N); B_ = np.ones(N); C_ = np.zeros(N); F_ = np.zeros(N)
    A_[1:n] = dl; B_[:n] = d; C_[:n-1] = du; F_[:n] = f
    A2 = A_.reshape(P,m); B2 = B_.reshape(P,m); C2 = C_.reshape(P,m); F2 = F_.reshape(P,m)
    MI = m-1
    a = A2[:,:MI].copy(); b = B2[:,:MI]; c = C2[:,:MI].copy()
    aL = a[:,0].copy(); cR = c[:,-1].copy()
    a[:,0] = 0; c[:,-1] = 0
    RHS = np.zeros((P,MI,3))
    RHS[:,:,0] = F2[:,:MI]; RHS[:,0,1] = aL; RHS[:,-1,2] = cR
    S = part(a, b, c, RHS)
    Y, W, V = S[:,:,0], S[:,:,1], S[:,:,2]
    # separators s_j = j*m + m-1, j=0..P-1
    as_ = A2[:,m-1]; ds = B2[:,m-1]; cs = C2[:,m-1]; fs = F2[:,m-1]
    Wt_next = np.append(W[1:,0], 0.0); Vt_next = np.append(V[1:,0], 0.0); Yt_next = np.append(Y[1:,0], 0.0)
    rdl = (-as_ * W[:,-1])[1:]
    rd = ds - as_*V[:,-1] - cs*Wt_next
    rdu = (-cs*Vt_next)[:-1]
    rf = fs - as_*Y[:,-1] - cs*Yt_next
    xs = spike(rdl, rd, rdu, rf, m, part, base, False)
    xL = np.append(0.0, xs[:-1])
    xi = Y - W*xL[:,None] - V*xs[:,None]
    X = np.zeros((P,m)); X[:,:MI] = xi; X[:,m-1] = xs
    return X.reshape(-1)[:n]

def rel(dl,d,du,x,f):
    ax = d*x; ax[1:] += dl*x[:-1]; ax[:-1] += du*x[1:]
    return np.linalg.norm(ax-f)/np.linalg.norm(f)


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    n = 1 << k
    rng = np.random.default_rng(seed)
    print(f"seed {seed}, n = 2^{k}, U(-1,1) entries; ||Ax-b||_2/||b||_2 of the first answer (no refinement)")
    print("lapack  " + "  ".join(f"{p}{m}:rec/one" for p in ("bk", "pp") for m in (8, 16, 32)))
    for trial in range(4):
        dl = rng.uniform(-1, 1, n - 1); d = rng.uniform(-1, 1, n); du = rng.uniform(-1, 1, n - 1)
        f = rng.uniform(-1, 1, n)
        _, _, _, xl, info = lapack.dgtsv(dl.copy(), d.copy(), du.copy(), f.copy())
        row = [f"{rel(dl, d, du, xl, f):.2e}"]
        for part in (bk_solve, pp_solve):
            for m in (8, 16, 32):
                x = spike(dl, d, du, f, m, part)
                x1 = spike(dl, d, du, f, m, part, base=n)
                row.append(f"{rel(dl, d, du, x, f):.2e}/{rel(dl, d, du, x1, f):.2e}")
        print("  ".join(row), flush=True)

main()
