! legacy_dstebz.f90 — a "legacy" Fortran program: it knows nothing of
! hylapack and is linked against plain LAPACK only. CTest runs it as is and
! under LD_PRELOAD=libhylapack_preload.so; both runs must give right answers.
!
! DSTEBZ with RANGE = 'A' and 'I' (ORDER 'E' and 'B') on
!   * tridiag(-1, 2, -1), whose eigenvalues are 2 - 2 cos(k pi / (n + 1)),
!   * a random symmetric tridiagonal matrix that splits into three blocks,
!     checked against DSTERF (QL/QR, which hylapack does not intercept) and
!     the trace, with NSPLIT / ISPLIT / IBLOCK checked exactly.
! Sizes reach n = 1000, above hylapack's GPU threshold in auto mode (256).
!
! Each failed check prints a line starting with "FAIL"; the last line is
! "legacy_dstebz_f: all <n> checks passed" when nothing failed.
! Seed of the random matrix: 20261122, or HYLAPACK_TEST_SEED.
program legacy_dstebz_f
  implicit none

  interface
    subroutine dstebz(range, order, n, vl, vu, il, iu, abstol, d, e, m, nsplit, &
                      w, iblock, isplit, work, iwork, info)
      character(len=1), intent(in) :: range, order
      integer, intent(in) :: n, il, iu
      double precision, intent(in) :: vl, vu, abstol
      double precision, intent(in) :: d(*), e(*)
      integer, intent(out) :: m, nsplit, info
      double precision, intent(out) :: w(*), work(*)
      integer, intent(out) :: iblock(*), isplit(*), iwork(*)
    end subroutine dstebz
    subroutine dsterf(n, d, e, info)
      integer, intent(in) :: n
      double precision, intent(inout) :: d(*), e(*)
      integer, intent(out) :: info
    end subroutine dsterf
  end interface

  integer, parameter :: dp = kind(1.0d0)
  integer, parameter :: i8 = selected_int_kind(18)
  integer, parameter :: toeplitz_sizes(6) = [1, 2, 10, 100, 300, 1000]
  integer :: failures, checks, seed, i
  integer :: envlen, envstat
  character(len=32) :: env
  integer(kind=i8) :: state

  failures = 0
  checks = 0
  seed = 20261122
  call get_environment_variable('HYLAPACK_TEST_SEED', env, envlen, envstat)
  if (envstat == 0 .and. envlen > 0) read (env, *) seed
  write (*, '(a,i0)') 'legacy_dstebz_f: seed ', seed
  state = int(seed, kind(state))

  do i = 1, size(toeplitz_sizes)
    call toeplitz_all(toeplitz_sizes(i))
  end do
  call toeplitz_index(1000, 100, 199)
  call toeplitz_index(300, 1, 300)
  call toeplitz_index(300, 150, 150)
  call random_blocks(600)
  call random_blocks(37)

  if (failures /= 0) then
    write (*, '(a,i0,a,i0,a)') 'legacy_dstebz_f: ', failures, ' of ', checks, ' checks failed'
    error stop 1
  end if
  write (*, '(a,i0,a)') 'legacy_dstebz_f: all ', checks, ' checks passed'

contains

  subroutine check(ok, what, n)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer, intent(in) :: n
    checks = checks + 1
    if (.not. ok) then
      failures = failures + 1
      write (*, '(a,a,a,i0)') 'FAIL: ', what, ', n = ', n
    end if
  end subroutine check

  ! Uniform in [-1, 1): a 31-bit linear congruential generator, so that the
  ! plain and the preloaded run see the same matrix on every compiler.
  real(dp) function uniform()
    state = modulo(1103515245_i8 * state + 12345_i8, 2147483648_i8)
    uniform = 2.0_dp * real(state, dp) / 2147483648.0_dp - 1.0_dp
  end function uniform

  real(dp) function exact_toeplitz(k, n)
    integer, intent(in) :: k, n
    real(dp), parameter :: pi = 3.14159265358979323846264338327950288_dp
    exact_toeplitz = 2.0_dp - 2.0_dp * cos(real(k, dp) * pi / real(n + 1, dp))
  end function exact_toeplitz

  ! The tolerance for |w - exact|: LAPACK's bisection with ABSTOL = 0 is
  ! accurate to a few ulps of ||T||; 1e-12 ||T|| leaves a wide margin.
  real(dp) function tol_of(tnorm)
    real(dp), intent(in) :: tnorm
    tol_of = 1.0e-12_dp * max(tnorm, tiny(1.0_dp))
  end function tol_of

  subroutine toeplitz_all(n)
    integer, intent(in) :: n
    real(dp) :: d(n), e(n), w(n), work(4 * n), worst
    integer :: iblock(n), isplit(n), iwork(3 * n), m, nsplit, info, k
    d = 2.0_dp
    e = -1.0_dp
    m = -1
    nsplit = -1
    call dstebz('A', 'E', n, 0.0_dp, 0.0_dp, 0, 0, 0.0_dp, d, e, m, nsplit, w, iblock, &
                isplit, work, iwork, info)
    call check(info == 0 .and. m == n .and. nsplit == 1, 'toeplitz A: info/m/nsplit', n)
    if (info /= 0 .or. m /= n) return
    call check(isplit(1) == n .and. all(iblock(1:m) == 1), 'toeplitz A: isplit/iblock', n)
    worst = 0.0_dp
    do k = 1, n
      worst = max(worst, abs(w(k) - exact_toeplitz(k, n)))
    end do
    call check(worst <= tol_of(4.0_dp), 'toeplitz A: eigenvalue error', n)
  end subroutine toeplitz_all

  subroutine toeplitz_index(n, il, iu)
    integer, intent(in) :: n, il, iu
    real(dp) :: d(n), e(n), w(n), work(4 * n), worst
    integer :: iblock(n), isplit(n), iwork(3 * n), m, nsplit, info, k
    d = 2.0_dp
    e = -1.0_dp
    m = -1
    nsplit = -1
    call dstebz('I', 'E', n, 0.0_dp, 0.0_dp, il, iu, 0.0_dp, d, e, m, nsplit, w, iblock, &
                isplit, work, iwork, info)
    call check(info == 0 .and. m == iu - il + 1 .and. nsplit == 1, &
               'toeplitz I: info/m/nsplit', n)
    if (info /= 0 .or. m /= iu - il + 1) return
    call check(isplit(1) == n .and. all(iblock(1:m) == 1), 'toeplitz I: isplit/iblock', n)
    worst = 0.0_dp
    do k = 1, m
      worst = max(worst, abs(w(k) - exact_toeplitz(il + k - 1, n)))
    end do
    call check(worst <= tol_of(4.0_dp), 'toeplitz I: eigenvalue error', n)
  end subroutine toeplitz_index

  ! A random matrix with E(n/6) = E(n/2) = 0: three blocks.
  subroutine random_blocks(n)
    integer, intent(in) :: n
    real(dp) :: d(n), e(n), w(n), ref(n), dq(n), eq(n), work(4 * n), tnorm, tol
    integer :: iblock(n), isplit(n), iwork(3 * n), m, nsplit, info, k, b, il, iu
    integer :: cuts(3), lo, hi
    do k = 1, n
      d(k) = 3.0_dp * uniform()
      e(k) = uniform()
    end do
    cuts = [n / 6, n / 2, n]
    e(cuts(1)) = 0.0_dp
    e(cuts(2)) = 0.0_dp
    e(n) = 0.0_dp
    tnorm = 0.0_dp
    do k = 1, n
      tnorm = max(tnorm, abs(d(k)) + abs(e(k)) + merge(abs(e(max(k - 1, 1))), 0.0_dp, k > 1))
    end do
    tol = tol_of(tnorm)

    ! Reference: DSTERF (ascending), not intercepted by hylapack.
    dq = d
    eq = e
    call dsterf(n, dq, eq, info)
    call check(info == 0, 'random: dsterf reference', n)
    if (info /= 0) return
    ref = dq

    ! RANGE = 'A', ORDER = 'E'
    call dstebz('A', 'E', n, 0.0_dp, 0.0_dp, 0, 0, 0.0_dp, d, e, m, nsplit, w, iblock, &
                isplit, work, iwork, info)
    call check(info == 0 .and. m == n .and. nsplit == 3, 'random A/E: info/m/nsplit', n)
    if (info == 0 .and. m == n .and. nsplit == 3) then
      call check(all(isplit(1:3) == cuts), 'random A/E: isplit', n)
      call check(maxval(abs(w(1:n) - ref)) <= tol, 'random A/E: eigenvalues vs dsterf', n)
      call check(abs(sum(w(1:n)) - sum(d)) <= real(n, dp) * tol, 'random A/E: trace', n)
      call check(all(iblock(1:n) >= 1 .and. iblock(1:n) <= 3), 'random A/E: iblock range', n)
    end if

    ! RANGE = 'A', ORDER = 'B': per block, ascending, block sizes as eigenvalue counts.
    call dstebz('A', 'B', n, 0.0_dp, 0.0_dp, 0, 0, 0.0_dp, d, e, m, nsplit, w, iblock, &
                isplit, work, iwork, info)
    call check(info == 0 .and. m == n .and. nsplit == 3, 'random A/B: info/m/nsplit', n)
    if (info == 0 .and. m == n .and. nsplit == 3) then
      call check(all(isplit(1:3) == cuts), 'random A/B: isplit', n)
      call check(all(iblock(2:n) >= iblock(1:n - 1)), 'random A/B: iblock nondecreasing', n)
      lo = 1
      do b = 1, 3
        hi = cuts(b)
        call check(count(iblock(1:n) == b) == hi - lo + 1, 'random A/B: block count', n)
        lo = hi + 1
      end do
      do k = 2, n
        if (iblock(k) == iblock(k - 1) .and. w(k) < w(k - 1)) then
          call check(.false., 'random A/B: ascending within a block', n)
          exit
        end if
      end do
      call check(abs(sum(w(1:n)) - sum(d)) <= real(n, dp) * tol, 'random A/B: trace', n)
    end if

    ! RANGE = 'I', ORDER = 'E': the il-th to iu-th smallest.
    il = max(1, n / 4)
    iu = max(il, (3 * n) / 4)
    call dstebz('I', 'E', n, 0.0_dp, 0.0_dp, il, iu, 0.0_dp, d, e, m, nsplit, w, iblock, &
                isplit, work, iwork, info)
    call check(info == 0 .and. m == iu - il + 1 .and. nsplit == 3, &
               'random I/E: info/m/nsplit', n)
    if (info == 0 .and. m == iu - il + 1) then
      call check(maxval(abs(w(1:m) - ref(il:iu))) <= tol, 'random I/E: eigenvalues vs dsterf', n)
    end if
  end subroutine random_blocks

end program legacy_dstebz_f
