//! `hylapack`: what the library found on this machine (`info`), every routine on a realistic
//! example checked against LAPACK (`demo`), and timings against peers (`bench <family>`).

mod bench;
mod bench_cusolver;
mod bench_gtsv;
mod bench_gtsv_batch;
mod bench_interval;
mod bench_overhead;
mod bench_processes;
mod bench_stein;
mod bench_syev;
mod bench_syev_large;
mod bench_syev_vectors;
mod demo;
mod info;
mod table;
mod tune;

const USAGE: &str = "usage: hylapack <command>
  info                 what was found: GPU, CUDA libraries, LAPACK, thresholds, cache
  demo                 run every routine on a realistic example, check it against LAPACK
  bench stebz [opts]   time tridiagonal eigenvalues against LAPACK (dstebz, dsterf, dstemr)
      --sizes 1000,8000   problem orders (default: 1000,8000,32000,100000)
      --csv FILE          also write the table as CSV
      --quick             small sizes only (a smoke test)
  bench gtsv [opts]    time tridiagonal solves against LAPACK dgtsv and cuSPARSE gtsv2
      --sizes 16,20,24    log2 of the orders (default: 16,20,23,24)
      --host-transfer register,staged,pageable
                          time the host-pointer path under each transfer instead
                          (random systems, NRHS = 1; sizes default to 18,20,22..26)
      --batch             4096 systems of 256 and of 4096 against cuSPARSE's
                          gtsv2StridedBatch and gtsvInterleavedBatch instead
  bench syev [opts]    time dense symmetric eigenvalues (band reduction) against cuSOLVER
                       Dsytrd/Dsyevd and LAPACK dsyevd, dsytrd_sy2sb+sb2st+dsterf
      --sizes 4096,8192   problem orders (default: 4096,8192,16384,32768)
      --ooc-max N         out-of-core runs up to order N (default: 16384)
      --ooc-uplo L|U      the triangle the out-of-core rows read (default: L)
      --vectors           eigenvectors instead: dsyev_ooc/dsyevx_ooc JOBZ=V (per-stage times)
                          against cuSOLVER Dsyevd/Dsyevdx, LAPACK dsyevd/dsyevr (default
                          sizes 4096,8192,16384; --lapack-limit S, --uplo L|U, --no-peers;
                          --budget-fraction F: again with F x the matrix's bytes on the GPU;
                          --large: only dsyevx_ooc's lowest 1%, on a matrix held once, e.g.
                          --sizes 100000, checked by regenerating its entries)
  bench interval [opts] time dgemm_rounded, digemm and dgesv_verified against cuBLAS DGEMM,
                       cuSOLVER and LAPACK LU solves
      --sizes 1024,8192   orders (default: 1024,2048,4096,8192,16384)
  tune                 measure the GPU/CPU count costs for the stebz model, store them";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("info") => info::run(),
        Some("demo") => demo::run(),
        Some("bench") => bench::run(&args[1..]),
        Some("tune") => tune::run(),
        Some("-h") | Some("--help") | Some("help") => {
            println!("{USAGE}");
            0
        }
        _ => {
            eprintln!("{USAGE}");
            2
        }
    };
    std::process::exit(code);
}
