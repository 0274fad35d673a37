// test_cxx.cpp — hylapack's header and dstebz_gpu used from C++ (the header
// must compile as C++ and carry C linkage), compared with the system LAPACK.
//
// Seed: from the clock, printed; set HYLAPACK_TEST_SEED to repeat a run.
#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hylapack.h"

extern "C" void dstebz_(const char *range, const char *order, const int *n, const double *vl,
                        const double *vu, const int *il, const int *iu, const double *abstol,
                        const double *d, const double *e, int *m, int *nsplit, double *w,
                        int *iblock, int *isplit, double *work, int *iwork, int *info,
                        std::size_t range_len, std::size_t order_len);

namespace {

int failures = 0;
int checks = 0;

void check(bool ok, const std::string &what)
{
    ++checks;
    if (!ok) {
        ++failures;
        std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    }
}

struct Eig {
    int info = -999, m = -999, nsplit = -999;
    std::vector<double> w;
    std::vector<int> iblock, isplit;
    explicit Eig(int n)
        : w(static_cast<std::size_t>(std::max(n, 1))),
          iblock(static_cast<std::size_t>(std::max(n, 1))),
          isplit(static_cast<std::size_t>(std::max(n, 1))) {}
};

void run(std::mt19937_64 &gen, int n, char range, char order)
{
    std::uniform_real_distribution<double> uni(-1.0, 1.0);
    std::vector<double> d(static_cast<std::size_t>(std::max(n, 1)));
    std::vector<double> e(static_cast<std::size_t>(std::max(n, 1)));
    double tnorm = 0.0;
    for (int i = 0; i < n; ++i) {
        d[i] = uni(gen);
        e[i] = (i % 11 == 5) ? 0.0 : uni(gen); // some splits
        tnorm = std::max({tnorm, std::fabs(d[i]), i + 1 < n ? std::fabs(e[i]) : 0.0});
    }
    const double tol = 4.0 * std::max(n, 1) * DBL_EPSILON * (tnorm > 0.0 ? tnorm : 1.0);
    const double vl = -0.2713 * tnorm, vu = 0.6151 * tnorm, abstol = 0.0;
    const int il = n >= 3 ? n / 3 + 1 : 1, iu = n >= 3 ? (2 * n) / 3 : n;

    Eig ref(n), got(n);
    std::vector<double> work(static_cast<std::size_t>(4 * n + 1));
    std::vector<int> iwork(static_cast<std::size_t>(3 * n + 1));
    dstebz_(&range, &order, &n, &vl, &vu, &il, &iu, &abstol, d.data(), e.data(), &ref.m,
            &ref.nsplit, ref.w.data(), ref.iblock.data(), ref.isplit.data(), work.data(),
            iwork.data(), &ref.info, 1, 1);
    got.info = dstebz_gpu(range, order, n, vl, vu, il, iu, abstol, d.data(), e.data(), &got.m,
                          &got.nsplit, got.w.data(), got.iblock.data(), got.isplit.data());

    const std::string tag = "n=" + std::to_string(n) + " range=" + range + " order=" + order;
    check(got.info == ref.info, tag + ": INFO " + std::to_string(got.info) + ", LAPACK " +
                                    std::to_string(ref.info));
    check(got.m == ref.m,
          tag + ": M " + std::to_string(got.m) + ", LAPACK " + std::to_string(ref.m));
    check(got.nsplit == ref.nsplit, tag + ": NSPLIT " + std::to_string(got.nsplit) +
                                        ", LAPACK " + std::to_string(ref.nsplit));
    if (got.nsplit == ref.nsplit && ref.nsplit >= 0 && ref.nsplit <= n)
        check(std::equal(ref.isplit.begin(), ref.isplit.begin() + ref.nsplit,
                         got.isplit.begin()),
              tag + ": ISPLIT differs");
    if (got.m == ref.m && ref.m >= 0 && ref.m <= n) {
        check(std::equal(ref.iblock.begin(), ref.iblock.begin() + ref.m, got.iblock.begin()),
              tag + ": IBLOCK differs");
        double worst = 0.0;
        for (int i = 0; i < ref.m; ++i) {
            const double diff = std::fabs(got.w[i] - ref.w[i]);
            if (!(diff <= worst)) worst = diff; // NaN counts as worst
        }
        check(ref.m == 0 || worst <= tol,
              tag + ": |W - W_lapack| = " + std::to_string(worst) + " > " + std::to_string(tol));
    }
}

} // namespace

int main()
{
    const char *env = std::getenv("HYLAPACK_TEST_SEED");
    const unsigned long long seed =
        env && *env ? std::strtoull(env, nullptr, 0)
                    : static_cast<unsigned long long>(
                          std::chrono::system_clock::now().time_since_epoch().count());
    std::printf("test_cxx: seed %llu (set HYLAPACK_TEST_SEED=%llu to repeat)\n", seed, seed);
    std::mt19937_64 gen(seed);

    const char *version = hylapack_version();
    check(version != nullptr && *version != '\0', "hylapack_version() is empty");

    for (int n : {1, 2, 7, 64, 500})
        for (char range : {'A', 'I', 'V'})
            for (char order : {'E', 'B'}) run(gen, n, range, order);

    // An illegal RANGE through the C name.
    double d[2] = {1.0, 2.0}, e[1] = {0.5}, w[2];
    int m = 0, nsplit = 0, iblock[2], isplit[2];
    const int info = dstebz_gpu('X', 'E', 2, 0.0, 1.0, 1, 1, 0.0, d, e, &m, &nsplit, w, iblock,
                                isplit);
    check(info == -1, "dstebz_gpu(RANGE='X'): INFO " + std::to_string(info) + ", expected -1");

    std::printf("test_cxx: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
