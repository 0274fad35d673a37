! legacy_dense.f90 — a "legacy" Fortran program that knows nothing of hylapack,
! linked against plain LAPACK only: DGTSV on a random diagonally dominant
! system (n = 100000, 2 right-hand sides) and DSYEV / DSYEVR (JOBZ = 'N') on
! tridiag(-1, 2, -1) stored dense (n = 400), whose eigenvalues are
! 2 - 2 cos(k pi / (n + 1)). CTest runs it as is and under
! LD_PRELOAD=libhylapack_preload.so (gfortran passes the hidden CHARACTER
! lengths). Each failed check prints a line starting with "FAIL"; the last line
! is "legacy_dense_f: all <n> checks passed" when nothing failed.
program legacy_dense_f
  implicit none

  interface
    subroutine dgtsv(n, nrhs, dl, d, du, b, ldb, info)
      integer, intent(in) :: n, nrhs, ldb
      double precision, intent(inout) :: dl(*), d(*), du(*), b(ldb, *)
      integer, intent(out) :: info
    end subroutine dgtsv
    subroutine dsyev(jobz, uplo, n, a, lda, w, work, lwork, info)
      character(len=1), intent(in) :: jobz, uplo
      integer, intent(in) :: n, lda, lwork
      double precision, intent(inout) :: a(lda, *)
      double precision, intent(out) :: w(*), work(*)
      integer, intent(out) :: info
    end subroutine dsyev
    subroutine dsyevr(jobz, range, uplo, n, a, lda, vl, vu, il, iu, abstol, m, w, z, ldz, &
                      isuppz, work, lwork, iwork, liwork, info)
      character(len=1), intent(in) :: jobz, range, uplo
      integer, intent(in) :: n, lda, il, iu, ldz, lwork, liwork
      double precision, intent(inout) :: a(lda, *)
      double precision, intent(in) :: vl, vu, abstol
      integer, intent(out) :: m, isuppz(*), iwork(*), info
      double precision, intent(out) :: w(*), z(ldz, *), work(*)
    end subroutine dsyevr
  end interface

  integer, parameter :: ng = 100000, ne = 400
  double precision, parameter :: pi = 3.14159265358979323846d0
  double precision, allocatable :: dl(:), d(:), du(:), b(:, :), x(:, :), a(:, :), w(:), work(:), z(:, :)
  double precision, allocatable :: adl(:), ad(:), adu(:)
  integer, allocatable :: isuppz(:), iwork(:)
  integer :: info, i, k, m, checks, failures
  double precision :: r, worst, tol, dummy(1, 1)
  integer :: seed_size
  integer, allocatable :: seed(:)

  checks = 0
  failures = 0
  call random_seed(size=seed_size)
  allocate(seed(seed_size))
  seed = 20261122
  call random_seed(put=seed)

  ! ---- DGTSV: diagonally dominant random system, residual check
  allocate(dl(ng - 1), d(ng), du(ng - 1), b(ng, 2), x(ng, 2), adl(ng - 1), ad(ng), adu(ng - 1))
  call random_number(dl)
  call random_number(du)
  call random_number(d)
  call random_number(b)
  dl = dl - 0.5d0
  du = du - 0.5d0
  d = d + 2.0d0
  adl = dl
  ad = d
  adu = du
  x = b
  call dgtsv(ng, 2, dl, d, du, x, ng, info)
  worst = 0.0d0
  do k = 1, 2
    do i = 1, ng
      r = ad(i) * x(i, k) - b(i, k)
      if (i > 1) r = r + adl(i - 1) * x(i - 1, k)
      if (i < ng) r = r + adu(i) * x(i + 1, k)
      worst = max(worst, abs(r))
    end do
  end do
  call check(info == 0 .and. worst <= 1.0d-12, 'dgtsv residual')

  ! ---- DSYEV and DSYEVR (JOBZ = 'N') on tridiag(-1, 2, -1)
  allocate(a(ne, ne), w(ne), work(26 * ne), z(1, 1), isuppz(2 * ne), iwork(10 * ne))
  tol = 64.0d0 * ne * epsilon(1.0d0) * 4.0d0
  call fill(a)
  call dsyev('N', 'U', ne, a, ne, w, work, 26 * ne, info)
  worst = 0.0d0
  do k = 1, ne
    worst = max(worst, abs(w(k) - (2.0d0 - 2.0d0 * cos(k * pi / (ne + 1)))))
  end do
  call check(info == 0 .and. worst <= tol, 'dsyev eigenvalues')

  call fill(a)
  call dsyevr('N', 'I', 'L', ne, a, ne, 0.0d0, 0.0d0, 11, 60, 0.0d0, m, w, dummy, 1, &
              isuppz, work, 26 * ne, iwork, 10 * ne, info)
  worst = 0.0d0
  do k = 1, m
    worst = max(worst, abs(w(k) - (2.0d0 - 2.0d0 * cos((k + 10) * pi / (ne + 1)))))
  end do
  call check(info == 0 .and. m == 50 .and. worst <= tol, 'dsyevr eigenvalues 11..60')

  if (failures == 0) then
    write (*, '(a, i0, a)') 'legacy_dense_f: all ', checks, ' checks passed'
  else
    write (*, '(a, i0, a)') 'legacy_dense_f: ', failures, ' checks FAILED'
    error stop 1
  end if

contains

  subroutine fill(mat)
    double precision, intent(out) :: mat(:, :)
    integer :: j
    mat = 0.0d0
    do j = 1, size(mat, 2)
      mat(j, j) = 2.0d0
    end do
    do j = 1, size(mat, 2) - 1
      mat(j + 1, j) = -1.0d0
      mat(j, j + 1) = -1.0d0
    end do
  end subroutine fill

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (.not. ok) then
      failures = failures + 1
      write (*, '(a, a)') 'FAIL: ', what
    end if
  end subroutine check

end program legacy_dense_f
