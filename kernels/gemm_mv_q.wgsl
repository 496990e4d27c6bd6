// Shared by gemm_mv_q8 and gemm_mv_q4. A block starts at an even byte
// offset y (34 and 18 bytes: consecutive blocks alternate between the two
// halves of a word), so its words are read once each, in order from word
// y >> 2: mv_d takes the first and gives the block's f16 scale d; mv_q(lo,
// hi, y) gives the quants' word that follows lo (joined from lo's high
// half and hi's low half where y is at a word's start, else hi itself; no
// branch: the neighbours of a SIMD batch may differ).
fn mv_d(first: u32, y: u32) -> f32 {
  return mv_f16((first >> ((y & 2u) * 8u)) & 0xffffu);
}

fn mv_q(lo: u32, hi: u32, y: u32) -> u32 {
  return select((lo >> 16u) | (hi << 16u), hi, (y & 2u) != 0u);
}

// Whether a block's scale is infinite (f32's largest finite value written
// out: Tint rejects a constant inf).
fn mv_inf(d: f32) -> bool {
  return abs(d) > 3.4028234663852886e38;
}
