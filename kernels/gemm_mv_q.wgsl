// gemm_dot2 of gemm_mv for a Q8_0 or Q4_0 B (pb at a block's start, n
// whole blocks), with gemm_mv_q8 or gemm_mv_q4 giving MV_BLOCK_BYTES and
// mv_quants2, a block of both columns' quants times A. A block starts at
// an even byte offset y (34 and 18 bytes: consecutive blocks alternate
// between the two halves of a word), so its words are read once each, in
// order from word y >> 2: the first holds the f16 scale d (mv_d); mv_q(lo,
// hi, y) gives the quants' word that follows lo (joined from lo's high
// half and hi's low half where y is at a word's start, else hi itself; no
// branch: the neighbours of a SIMD batch may differ). The block's products
// are summed, then scaled; a column with an infinite scale is redone by
// mv_exact, as the elements' own products give NaN where a factor is 0.
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

// A block's products so far in one column, and the word read last.
struct mv_run { s: vec4<f32>, lo: u32 }

// Both columns' sums of a block.
struct mv_pair { x: vec4<f32>, y: vec4<f32> }

fn gemm_dot2(pa: u32, pb0: u32, pb1: u32, n: u32) -> vec2<f32> {
  var x = vec4<f32>(0.0);
  var y = vec4<f32>(0.0);
  var a = pa;
  var inf0 = false;
  var inf1 = false;
  for (var blk = 0u; blk < n / 32u; blk++) {
    let y0 = P.off[1] + (pb0 / 32u + blk) * MV_BLOCK_BYTES;
    let y1 = P.off[1] + (pb1 / 32u + blk) * MV_BLOCK_BYTES;
    let f0 = b_w(y0 >> 2u);
    let f1 = b_w(y1 >> 2u);
    let d0 = mv_d(f0, y0);
    let d1 = mv_d(f1, y1);
    let s = mv_quants2(mv_run(vec4<f32>(0.0), f0), mv_run(vec4<f32>(0.0), f1),
                       y0, y1, a);
    x = fma(vec4<f32>(d0), s.x, x);
    y = fma(vec4<f32>(d1), s.y, y);
    inf0 = inf0 || mv_inf(d0);
    inf1 = inf1 || mv_inf(d1);
    a += 32u * P.cs_a;
  }
  return vec2<f32>(mv_exact(inf0, pa, pb0, n, (x.x + x.y) + (x.z + x.w)),
                   mv_exact(inf1, pa, pb1, n, (y.x + y.y) + (y.z + y.w)));
}
