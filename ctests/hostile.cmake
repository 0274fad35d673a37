# hostile.cmake — bad input for every exported name (issue #23), under ASan and UBSan.
#
# hostile.c calls each C and Fortran entry point of hylapack.h with illegal arguments, zero and
# INT_MAX sizes, NaN/Inf/-0/subnormal/huge values and a seeded fuzzer, and compares INFO with
# the system LAPACK's routine of the same contract. Included from CMakeLists.txt.
set(HYLAPACK_SANITIZE -fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)

add_executable(test_hostile hostile.c)
set_target_properties(test_hostile PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON
                                              C_EXTENSIONS OFF)
# alarm() and write() are POSIX, not C99.
target_compile_definitions(test_hostile PRIVATE _POSIX_C_SOURCE=200809L)
target_compile_options(test_hostile PRIVATE ${HYLAPACK_C_WARNINGS} ${HYLAPACK_SANITIZE} -g)
# Linking with -fsanitize=address puts the ASan runtime first, before libhylapack.so.
target_link_options(test_hostile PRIVATE ${HYLAPACK_SANITIZE})
target_link_libraries(test_hostile PRIVATE hylapack::hylapack LAPACK::LAPACK m)

add_test(NAME hostile COMMAND test_hostile)
set_tests_properties(hostile PROPERTIES
  ENVIRONMENT "HYLAPACK_DEVICE=cpu;ASAN_OPTIONS=detect_leaks=0:abort_on_error=0;UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1"
  PASS_REGULAR_EXPRESSION "hostile: [0-9]+ passed, 0 failed"
  FAIL_REGULAR_EXPRESSION "FAIL|ERROR: AddressSanitizer|runtime error:"
  TIMEOUT 120)

# The same harness without sanitizers. ASan checks only instrumented code: a write past an
# array by the Rust library or by the system LAPACK lands in ASan's redzones unseen, while in a
# plain build it breaks glibc's heap, whose checks then abort (perturb: freed memory is filled,
# so a read of it shows too).
add_executable(test_hostile_plain hostile.c)
set_target_properties(test_hostile_plain PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON
                                                    C_EXTENSIONS OFF)
target_compile_definitions(test_hostile_plain PRIVATE _POSIX_C_SOURCE=200809L)
target_compile_options(test_hostile_plain PRIVATE ${HYLAPACK_C_WARNINGS})
target_link_libraries(test_hostile_plain PRIVATE hylapack::hylapack LAPACK::LAPACK m)
add_test(NAME hostile_plain COMMAND test_hostile_plain)
set_tests_properties(hostile_plain PROPERTIES
  ENVIRONMENT "HYLAPACK_DEVICE=cpu;GLIBC_TUNABLES=glibc.malloc.perturb=165"
  PASS_REGULAR_EXPRESSION "hostile: [0-9]+ passed, 0 failed"
  FAIL_REGULAR_EXPRESSION "FAIL"
  TIMEOUT 120)
