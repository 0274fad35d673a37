# check_exports.cmake — run with cmake -P. Checks the dynamic symbol table of
# libhylapack.so:
#   1. it exports no standard LAPACK/BLAS name: every exported name that ends
#      in "_" (a Fortran name) must belong to one of hylapack's own suffixes,
#      so the library can be linked next to any LAPACK;
#   2. every name in EXPECTED is exported.
#
# Variables (-D...): LIB (path to libhylapack.so), NM (the nm program),
#   EXPECTED (;-separated names), ALLOWED_FORTRAN_REGEX (optional override).
if(NOT LIB OR NOT NM)
  message(FATAL_ERROR "usage: cmake -DLIB=... -DNM=... [-DEXPECTED=a;b] -P check_exports.cmake")
endif()

# Fortran names hylapack may export: *_gpu_, *_spike_, *_ooc_, *_rounded_,
# *_verified_, and digemm_. Extend here when a family adds a suffix.
if(NOT ALLOWED_FORTRAN_REGEX)
  set(ALLOWED_FORTRAN_REGEX "(_gpu_|_spike_|_ooc_|_rounded_|_verified_)$|^digemm_$")
endif()

execute_process(
  COMMAND "${NM}" -D --defined-only "${LIB}"
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIB} failed (${rc}): ${err}")
endif()

string(REPLACE "\n" ";" lines "${out}")
set(names "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>[@@VERSION]"; code (T/t/W/i) and data (D/B/R/V) alike
  if(line MATCHES "^[0-9a-fA-F]* +[A-Za-z] +([^ @]+)")
    list(APPEND names "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(LENGTH names count)
if(count EQUAL 0)
  message(FATAL_ERROR "no exported symbols found in ${LIB}")
endif()

set(bad "")
foreach(name IN LISTS names)
  if(name MATCHES "_$" AND NOT name MATCHES "${ALLOWED_FORTRAN_REGEX}")
    list(APPEND bad "${name}")
  endif()
endforeach()

set(missing "")
foreach(name IN LISTS EXPECTED)
  list(FIND names "${name}" idx)
  if(idx EQUAL -1)
    list(APPEND missing "${name}")
  endif()
endforeach()

set(failed 0)
if(bad)
  list(JOIN bad " " bad_s)
  message("FAIL: ${LIB} exports names that could shadow LAPACK/BLAS: ${bad_s}")
  set(failed 1)
endif()
if(missing)
  list(JOIN missing " " missing_s)
  message("FAIL: ${LIB} does not export: ${missing_s}")
  set(failed 1)
endif()
if(failed)
  message(FATAL_ERROR "export check failed")
endif()
list(LENGTH EXPECTED expected_count)
message("check_exports: ${count} exported symbols, none a standard LAPACK name; "
        "all ${expected_count} expected names present")
