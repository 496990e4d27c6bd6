// gemm_dot2 of gemm_mv for an f16 or bf16 B (MV_BF16): a u32 word holds
// two elements, b_w4(w) four words from word w on (w a multiple of 4, the
// host makes every column start so), sixteen elements a step.

// bf16: the word's halves are an f32's high bits. f16, exact but for inf
// and NaN: the sign and the 15 bits below it placed at f32's bits 31 and
// 27..13, then scaled by 2^112 (subnormal f16 land on subnormal f32 bits,
// which the product normalises where the device keeps subnormals, and
// flushes to a zero of their sign where it does not, as SPECIAL VALUES
// allow); an exponent of 31 comes out finite, so mv_special finds those
// and mv_exact redoes their columns. No shifts: SwiftShader (Subzero)
// runs a vector shift lane by lane, so the bits move left by products
// and right by dt_down16 (dtype.wgsl).
fn mv_h2(w: u32) -> vec2<f32> {
  if (MV_BF16) {
    return vec2<f32>(bitcast<f32>(w * 65536u), bitcast<f32>(w & 0xffff0000u));
  }
  let lo = ((w & 0x7fffu) * 8192u) | ((w & 0x8000u) * 65536u);
  let hi = (dt_down16(w & 0x7fff0000u) * 8192u) | (w & 0x80000000u);
  return vec2<f32>(bitcast<f32>(lo), bitcast<f32>(hi)) * 5.192296858534828e33;
}

// bit 15 or 31 set where a half's exponent is 31 (f16 inf or NaN); bf16
// decodes them exactly.
fn mv_special(x: vec4<u32>) -> vec4<u32> {
  if (MV_BF16) { return vec4<u32>(0u); }
  return (x & vec4<u32>(0x7c007c00u)) + vec4<u32>(0x04000400u);
}

// Eight elements from the words x, times A from a on.
fn mv_h8(x: vec4<u32>, a0: vec4<f32>, a1: vec4<f32>, acc: vec4<f32>) -> vec4<f32> {
  let b0 = vec4<f32>(mv_h2(x.x), mv_h2(x.y));
  let b1 = vec4<f32>(mv_h2(x.z), mv_h2(x.w));
  return fma(a1, b1, fma(a0, b0, acc));
}

fn gemm_dot2(pa: u32, pb0: u32, pb1: u32, n: u32) -> vec2<f32> {
  var x = vec4<f32>(0.0);
  var y = vec4<f32>(0.0);
  let u0 = (P.off[1] + pb0) >> 1u;
  let u1 = (P.off[1] + pb1) >> 1u;
  let c = 4u * P.cs_a;
  var a = pa;
  var v = 0u;
  var bad0 = vec4<u32>(0u);
  var bad1 = vec4<u32>(0u);
  // sixteen elements of each column a turn, then eight
  for (; v + 1u < n / 8u; v += 2u) {
    let a0 = mv_a4(a);
    let a1 = mv_a4(a + c);
    let a2 = mv_a4(a + 2u * c);
    let a3 = mv_a4(a + 3u * c);
    let p0 = b_w4(u0 + 4u * v);
    let p1 = b_w4(u0 + 4u * v + 4u);
    let q0 = b_w4(u1 + 4u * v);
    let q1 = b_w4(u1 + 4u * v + 4u);
    bad0 |= mv_special(p0) | mv_special(p1);
    bad1 |= mv_special(q0) | mv_special(q1);
    x = mv_h8(p1, a2, a3, mv_h8(p0, a0, a1, x));
    y = mv_h8(q1, a2, a3, mv_h8(q0, a0, a1, y));
    a += 4u * c;
  }
  for (; v < n / 8u; v++) {
    let a0 = mv_a4(a);
    let a1 = mv_a4(a + c);
    let p = b_w4(u0 + 4u * v);
    let q = b_w4(u1 + 4u * v);
    bad0 |= mv_special(p);
    bad1 |= mv_special(q);
    x = mv_h8(p, a0, a1, x);
    y = mv_h8(q, a0, a1, y);
    a += 2u * c;
  }
  var dx = (x.x + x.y) + (x.z + x.w);
  var dy = (y.x + y.y) + (y.z + y.w);
  let m = vec4<u32>(0x80008000u);
  dx = mv_exact(any((bad0 & m) != vec4<u32>(0u)), pa, pb0, 8u * v, dx);
  dy = mv_exact(any((bad1 & m) != vec4<u32>(0u)), pa, pb1, 8u * v, dy);
  for (var e = 8u * v; e < n; e++) {
    let ae = a_ld(a);
    dx = fma(ae, b_ld(pb0 + e), dx);
    dy = fma(ae, b_ld(pb1 + e), dy);
    a += P.cs_a;
  }
  return vec2<f32>(dx, dy);
}
