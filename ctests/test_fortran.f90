! test_fortran.f90 — hylapack's DSTEBZ_GPU called from Fortran through its
! Fortran name, exactly as a LAPACK user calls DSTEBZ (CHARACTER arguments,
! so gfortran appends the hidden lengths), compared with the system LAPACK.
!
! Seed: from the clock, printed; set HYLAPACK_TEST_SEED to repeat a run.
program test_fortran
  implicit none

  interface
    subroutine dstebz_gpu(range, order, n, vl, vu, il, iu, abstol, d, e, m, nsplit, &
                          w, iblock, isplit, work, iwork, info)
      character(len=1), intent(in) :: range, order
      integer, intent(in) :: n, il, iu
      double precision, intent(in) :: vl, vu, abstol
      double precision, intent(in) :: d(*), e(*)
      integer, intent(out) :: m, nsplit, info
      double precision, intent(out) :: w(*), work(*)
      integer, intent(out) :: iblock(*), isplit(*), iwork(*)
    end subroutine dstebz_gpu
  end interface
  external :: dstebz     ! the system LAPACK, called the legacy way

  integer, parameter :: dp = kind(1.0d0)
  integer :: failures, checks, seed, nsize, k, r
  integer, parameter :: sizes(5) = [1, 2, 9, 100, 700]
  character(len=1), parameter :: ranges(3) = ['A', 'I', 'V']
  character(len=1), parameter :: orders(2) = ['E', 'B']
  character(len=32) :: env
  integer :: envlen, envstat
  integer :: clock

  failures = 0
  checks = 0

  call get_environment_variable('HYLAPACK_TEST_SEED', env, envlen, envstat)
  if (envstat == 0 .and. envlen > 0) then
    read (env, *) seed
  else
    call system_clock(clock)
    seed = mod(abs(clock), 2000000000)
  end if
  write (*, '(a,i0,a,i0,a)') 'test_fortran: seed ', seed, &
      ' (set HYLAPACK_TEST_SEED=', seed, ' to repeat)'
  call seed_rng(seed)

  do nsize = 1, size(sizes)
    do r = 1, size(ranges)
      do k = 1, size(orders)
        call run_case(sizes(nsize), ranges(r), orders(k))
      end do
    end do
  end do
  call check_bad_n()

  write (*, '(a,i0,a,i0,a)') 'test_fortran: ', checks, ' checks, ', failures, ' failed'
  if (failures /= 0) error stop 1

contains

  subroutine seed_rng(s)
    integer, intent(in) :: s
    integer :: nseed, i
    integer, allocatable :: put(:)
    call random_seed(size=nseed)
    allocate (put(nseed))
    do i = 1, nseed
      put(i) = s + 7919 * i
    end do
    call random_seed(put=put)
  end subroutine seed_rng

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (.not. ok) then
      failures = failures + 1
      write (*, '(a,a)') 'FAIL: ', what
    end if
  end subroutine check

  subroutine run_case(n, range, order)
    integer, intent(in) :: n
    character(len=1), intent(in) :: range, order
    real(dp), allocatable :: d(:), e(:), w0(:), w1(:), work(:)
    integer, allocatable :: ib0(:), ib1(:), is0(:), is1(:), iwork(:)
    real(dp) :: vl, vu, abstol, tnorm, tol
    integer :: il, iu, m0, m1, ns0, ns1, info0, info1, i
    character(len=64) :: tag

    allocate (d(n), e(max(n, 1)), w0(n), w1(n), work(4*n), ib0(n), ib1(n), is0(n), is1(n), &
              iwork(3*n))
    call random_number(d)
    call random_number(e)
    d = 2.0_dp*d - 1.0_dp
    e = 2.0_dp*e - 1.0_dp
    do i = 1, n - 1, 13
      e(i) = 0.0_dp          ! force some splits
    end do
    tnorm = maxval(abs(d))
    if (n > 1) tnorm = max(tnorm, maxval(abs(e(1:n-1))))
    tol = 4.0_dp*max(n, 1)*epsilon(1.0_dp)*max(tnorm, 1.0_dp)
    vl = -0.2917_dp*tnorm
    vu = 0.4433_dp*tnorm
    il = 1
    iu = n
    if (n >= 4) then
      il = n/4 + 1
      iu = (3*n)/4
    end if
    abstol = 0.0_dp

    call dstebz(range, order, n, vl, vu, il, iu, abstol, d, e, m0, ns0, w0, ib0, is0, &
                work, iwork, info0)
    call dstebz_gpu(range, order, n, vl, vu, il, iu, abstol, d, e, m1, ns1, w1, ib1, is1, &
                    work, iwork, info1)

    write (tag, '(a,i0,a,a,a,a)') 'n=', n, ' range=', range, ' order=', order
    call check(info1 == info0, trim(tag)//': INFO differs from LAPACK')
    call check(m1 == m0, trim(tag)//': M differs from LAPACK')
    call check(ns1 == ns0, trim(tag)//': NSPLIT differs from LAPACK')
    if (ns1 == ns0 .and. ns0 >= 0 .and. ns0 <= n) then
      call check(all(is1(1:ns0) == is0(1:ns0)), trim(tag)//': ISPLIT differs')
    end if
    if (m1 == m0 .and. m0 >= 1 .and. m0 <= n) then
      call check(all(ib1(1:m0) == ib0(1:m0)), trim(tag)//': IBLOCK differs')
      call check(maxval(abs(w1(1:m0) - w0(1:m0))) <= tol, trim(tag)//': W differs beyond tol')
    end if
  end subroutine run_case

  subroutine check_bad_n()
    real(dp) :: d(1), e(1), w(1), work(4)
    integer :: m, nsplit, iblock(1), isplit(1), iwork(3), info
    d = 1.0_dp
    e = 0.0_dp
    info = 0
    ! N = -1: INFO = -3 (the library's XERBLA prints a message; that is expected).
    call dstebz_gpu('A', 'E', -1, 0.0_dp, 1.0_dp, 1, 1, 0.0_dp, d, e, m, nsplit, w, &
                    iblock, isplit, work, iwork, info)
    call check(info == -3, 'DSTEBZ_GPU(N=-1): INFO /= -3')
  end subroutine check_bad_n

end program test_fortran
