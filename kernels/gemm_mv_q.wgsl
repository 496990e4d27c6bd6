// gemm_dot2 of gemm_mv for a Q8_0 or Q4_0 B (pb at a block's start, n
// whole blocks), with gemm_mv_q8 or gemm_mv_q4 giving MV_BLOCK_BYTES,
// mv_word (a word as read), MV_Q_UNIT and mv_quants2, a block of both
// columns' quants times A. A block starts at an even byte offset y (34 and
// 18 bytes: consecutive blocks alternate between the two halves of a
// word), so its words are read once each, in order from word y >> 2: the
// first holds the f16 scale d (mv_d). No shifts (SwiftShader runs a vector
// shift lane by lane): each quant is moved to the top of a word by a
// product and masked, read as an i32 it is q * 2^24 (Q8_0) or q * 2^28
// (Q4_0), exactly, and MV_Q_UNIT takes the power of two out of the scale
// instead. The block's products are summed, then scaled; a column with an
// infinite scale is redone by mv_exact, as the elements' own products give
// NaN where a factor is 0, and so is one whose sum is not finite (from
// about 2^90 on, an element of A can overflow the scaled products where
// the plain ones would not).

// The scale d: the f16 in word first's half at byte y & 2.
fn mv_d(first: u32, y: u32) -> f32 {
  return bitcast<f32>(dt_f16_in(first, (y & 2u) != 0u));
}

// The quants' word that follows word lo (hi the next one read) as two
// words, each holding two of its bytes in its top half: where the block
// starts in a word's high half (al) the quants are word-aligned and both
// come from hi, else the first two bytes are lo's high half. mv_tops_m
// gives the products that move them, once a block.
fn mv_tops_m(al: bool) -> vec2<u32> {
  return select(vec2<u32>(1u, 65536u), vec2<u32>(65536u, 1u), al);
}

fn mv_tops(lo: u32, hi: u32, al: bool, m: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(select(lo, hi, al) * m.x, hi * m.y);
}

// Whether a column's sum is finite (on the bits: comparisons with NaN are
// false).
fn mv_finite(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// Whether a block's scale is infinite (f32's largest finite value written
// out: Tint rejects a constant inf).
fn mv_inf(d: f32) -> bool {
  return abs(d) > 3.4028234663852886e38;
}

// A block's products so far in one column, and the word read last (as
// mv_word gives it).
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
    let s = mv_quants2(mv_run(vec4<f32>(0.0), mv_word(f0)),
                       mv_run(vec4<f32>(0.0), mv_word(f1)), y0, y1, a);
    x = fma(vec4<f32>(d0 * MV_Q_UNIT), s.x, x);
    y = fma(vec4<f32>(d1 * MV_Q_UNIT), s.y, y);
    inf0 = inf0 || mv_inf(d0);
    inf1 = inf1 || mv_inf(d1);
    a += 32u * P.cs_a;
  }
  let dx = (x.x + x.y) + (x.z + x.w);
  let dy = (y.x + y.y) + (y.z + y.w);
  return vec2<f32>(mv_exact(inf0 || !mv_finite(dx), pa, pb0, n, dx),
                   mv_exact(inf1 || !mv_finite(dy), pa, pb1, n, dy));
}
