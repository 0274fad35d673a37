#!/usr/bin/env bash
# gpu-pack/run.sh — run hylapack's packed test binaries on a GPU host.
# (Source: scripts/gpu-run.sh; scripts/gpu-check copies it into gpu-pack/.)
#
#   bash gpu-pack/run.sh [ARGS...]     # from the repository root
#
# Needs no Rust toolchain and no network: the library, the test binaries and
# the system libraries they link (OpenBLAS, libgfortran) are in gpu-pack/.
# CUDA (driver, NVRTC, cuBLAS, ...) is found at run time as usual; set
# LD_LIBRARY_PATH if its libraries are not on the loader's path.
#
# Every test binary runs with ARGS (libtest's: a name filter, --nocapture,
# --test-threads=N, ...) and with
#   HYLAPACK_DEVICE=gpu  HYLAPACK_REQUIRE_GPU=1   (override either by setting it)
# then the C hostile-input harness (ctests/hostile, with automatic dispatch), then (with
# HYLAPACK_PACK_TESTERS=1) LAPACK's GT/SEP/SE2 testers under the preload library
# (HYLAPACK_PACK_TESTERS_ONLY="SEP double,GT double" picks some), then `hylapack info` runs.
# HYLAPACK_PACK_ONLY=gtsv,api limits the run to those binaries (and to those named gtsv_...,
# api_...; hostile_c names the C harness). The combined log goes to ${OUT:-/tmp}/gpu-check.log
# and the summary to ${OUT:-/tmp}/gpu-check-summary.txt. Exit status: 0 when
# every binary passed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
out="${OUT:-/tmp}"
mkdir -p "$out"
log="$out/gpu-check.log"
summary="$out/gpu-check-summary.txt"
: >"$log"

export HYLAPACK_DEVICE="${HYLAPACK_DEVICE:-gpu}"
export HYLAPACK_REQUIRE_GPU="${HYLAPACK_REQUIRE_GPU:-1}"
export HYLAPACK_LOG="${HYLAPACK_LOG:-info}"
# Tests that look for files of the repository find it here, not at the path
# it had on the build machine.
export CARGO_MANIFEST_DIR="$repo"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

# Unpack into a scratch folder (large files travel gzip-compressed).
work="$(mktemp -d "${TMPDIR:-/tmp}/hylapack-gpu-pack.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(cd "$here" && find . -type f ! -name run.sh ! -name MANIFEST -print0 | while IFS= read -r -d '' f; do
    mkdir -p "$work/$(dirname "$f")"
    case "$f" in
        *.gz) gzip -dc "$f" >"$work/${f%.gz}" ;;
        *) cp "$f" "$work/$f" ;;
    esac
done)
chmod +x "$work"/bin/* "$work"/tests/* "$work"/ctests/* 2>/dev/null || true

ld_extra="$work/lib:$work/syslib"
for d in /usr/local/cuda/lib64 /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    [ -d "$d" ] && ld_extra="$ld_extra:$d"
done
export LD_LIBRARY_PATH="$ld_extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

say() { printf '%s\n' "$*" | tee -a "$log"; }

say "gpu-pack: $(head -n1 "$here/MANIFEST" 2>/dev/null | sed 's/^# //')"
say "host: $(uname -srm); HYLAPACK_DEVICE=$HYLAPACK_DEVICE HYLAPACK_REQUIRE_GPU=$HYLAPACK_REQUIRE_GPU"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$log"
else
    say "nvidia-smi: not found"
fi

cd "$repo" || exit 1
total_pass=0 total_fail=0 total_ign=0
bin_fail=()
bins=()
for t in "$work"/tests/*; do
    [ -f "$t" ] || continue
    # HYLAPACK_PACK_ONLY=gtsv,api runs only these binaries and those whose names extend one
    # of them after an underscore (alloc_failure: alloc_failure_interval, ..._tridiagonal too).
    if [ -n "${HYLAPACK_PACK_ONLY:-}" ]; then
        keep=0
        for want in ${HYLAPACK_PACK_ONLY//,/ }; do
            case "$(basename "$t")" in "$want"-* | "$want"_*-*) keep=1 ;; esac
        done
        ((keep)) || continue
    fi
    bins+=("$t")
done
for t in "${bins[@]}"; do
    name="$(basename "$t")"
    say ""
    say "==> $name $*"
    start=$(date +%s)
    args=("$@")
    case "$name" in
    sbr-*)
        # One test at a time: with four test threads in one process the system LAPACK's own
        # reference calls (ssytrd_sb2st, ssyev) returned INFO > 0 on the GPU host, and the same
        # seeds pass one at a time there and here (session 20).
        args=()
        skip=0
        for a in "$@"; do
            if ((skip)); then skip=0; continue; fi
            case "$a" in
            --test-threads=*) ;;
            --test-threads) skip=1 ;;
            *) args+=("$a") ;;
            esac
        done
        args+=(--test-threads=1)
        ;;
    esac
    "$t" ${args[@]+"${args[@]}"} >"$work/one.log" 2>&1
    rc=$?
    cat "$work/one.log" >>"$log"
    read -r p f g < <(awk '
        /^test result: / {
            for (i = 1; i <= NF; i++) {
                if ($(i+1) ~ /^passed/) p += $i
                if ($(i+1) ~ /^failed/) f += $i
                if ($(i+1) ~ /^ignored/) g += $i
            }
        }
        END { print p + 0, f + 0, g + 0 }' "$work/one.log")
    total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_ign=$((total_ign + g))
    if ((rc != 0)); then
        bin_fail+=("$name")
        ((f > 0)) || total_fail=$((total_fail + 1))   # crashed before its summary
        # A panic's message starts on the line after its location.
        grep -E -A2 '^(test .* FAILED|---- |thread .* panicked)' "$work/one.log" | head -n 60
    fi
    say "$name: rc=$rc, $p passed, $f failed, $g ignored, $(( $(date +%s) - start )) s"
done

# The C hostile-input harness (ctests/hostile.c) as a program on this host runs it: automatic
# dispatch, no GPU required. With HYLAPACK_PACK_ONLY it runs only if the list names hostile_c.
case ",${HYLAPACK_PACK_ONLY:-hostile_c}," in *,hostile_c,*) run_hostile=1 ;; *) run_hostile=0 ;; esac
if ((run_hostile)) && [ -x "$work/ctests/hostile" ]; then
    say ""
    say "==> ctests/hostile (HYLAPACK_DEVICE=auto)"
    start=$(date +%s)
    HYLAPACK_DEVICE=auto HYLAPACK_REQUIRE_GPU=0 HYLAPACK_LOG=off \
        GLIBC_TUNABLES=glibc.malloc.perturb=165 "$work/ctests/hostile" >"$work/one.log" 2>&1
    rc=$?
    cat "$work/one.log" >>"$log"
    grep -E '^FAIL' "$work/one.log" | head -n 30
    line="$(grep -E '^hostile: [0-9]+ passed, [0-9]+ failed' "$work/one.log" | tail -n 1)"
    p=$(echo "$line" | awk '{print $2}') f=$(echo "$line" | awk '{print $4}')
    total_pass=$((total_pass + ${p:-0})) total_fail=$((total_fail + ${f:-1}))
    ((rc == 0 && ${f:-1} == 0)) || bin_fail+=("ctests/hostile")
    say "ctests/hostile: rc=$rc, ${line:-no summary line}, $(( $(date +%s) - start )) s"
fi

# LAPACK's own testers under the preload library, every intercepted call on hylapack's path
# (HYLAPACK_PRELOAD=own; the GPU with HYLAPACK_DEVICE=gpu), at most 4 processes on the GPU.
if [ "${HYLAPACK_PACK_TESTERS:-0}" = 1 ] && [ -d "$work/testers" ]; then
    say ""
    say "==> LAPACK's testers under the preload (HYLAPACK_PRELOAD=own, HYLAPACK_DEVICE=$HYLAPACK_DEVICE)"
    chmod +x "$work"/testers/x* 2>/dev/null
    HYLAPACK_LOG=off python3 "$here/lapack-testers" --dir "$work/testers" \
        --preload "$work/lib/libhylapack_preload.so" --jobs 4 --logs "$out/lapack-testers" \
        ${HYLAPACK_PACK_TESTERS_ONLY:+--only "$HYLAPACK_PACK_TESTERS_ONLY"} \
        2>&1 | tee -a "$log"
    ((PIPESTATUS[0] == 0)) || bin_fail+=("lapack-testers")
fi

say ""
say "==> hylapack info"
"$work/bin/hylapack" info 2>&1 | tee -a "$log"
info_rc=${PIPESTATUS[0]}
((info_rc == 0)) || bin_fail+=("hylapack info")

{
    echo "binaries: ${#bins[@]}, failed: ${#bin_fail[@]}${bin_fail[*]:+ (${bin_fail[*]})}"
    echo "hylapack info: rc=$info_rc"
    echo "gpu-check: $total_pass passed, $total_fail failed, $total_ign skipped"
} | tee "$summary" | tee -a "$log"
echo "log: $log; summary: $summary"
((${#bin_fail[@]} == 0))
