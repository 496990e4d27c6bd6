// Shared by gemm_mv_q8 and gemm_mv_q4. A block starts at an even byte
// offset y (34 and 18 bytes: consecutive blocks alternate between the two
// halves of a word). mv_d: its f16 scale d; mv_q(y, t): the t-th word of
// its quants, bytes y + 2 + 4t.., joined from two words where y is at a
// word's start (no branch: the neighbours of a SIMD batch may differ).
fn mv_d(y: u32) -> f32 {
  return mv_f16((b_w(y >> 2u) >> ((y & 2u) * 8u)) & 0xffffu);
}

fn mv_q(y: u32, t: u32) -> u32 {
  let w = (y >> 2u) + t;
  let hi = b_w(w + 1u);
  return select((b_w(w) >> 16u) | (hi << 16u), hi, (y & 2u) != 0u);
}
