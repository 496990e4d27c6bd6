// Shared by the GEMM kernels (gemm, gemm_small, gemm_reduce, gemm_scale and
// the output stages gemm_out_c, gemm_out_part). One launch covers a region
// of the strided form of internal.h: nb batches of an m x n block of C, and
// a k range of length k, cut into nslices slices of kslice (split-K) when
// the output goes to partial sums. Element strides are u32 (0 where a
// dimension has length 1); batch t of the launch adds t*ba (bb, bc).
struct Params {
  off: vec4<u32>,
  m: u32, n: u32, k: u32, nb: u32,
  rs_a: u32, cs_a: u32, rs_b: u32, cs_b: u32,
  rs_c: u32, cs_c: u32, ba: u32, bb: u32,
  bc: u32, kslice: u32, nslices: u32, total: u32,
  alpha: f32, beta: f32,
  // 1 unless beta == 0 exactly, decided on the host: shader compilers may
  // assume floats are never NaN and fold `beta != 0` to false for a NaN
  // beta, which must make C NaN rather than skip it.
  use_c: u32,
}

// Element idx of the launch's [slice][batch][row][col] order (gemm_out_part
// lays partial sums out the same way) as (col, row, batch, slice).
fn gemm_coords(idx: u32) -> vec4<u32> {
  let r = idx / P.n;
  let b = r / P.m;
  return vec4<u32>(idx % P.n, r % P.m, b % P.nb, b / P.nb);
}
