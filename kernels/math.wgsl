// Scalar math shared by the element-wise kernels. NaN and infinity are
// tested on the bit pattern: compilers may fold `x != x` away.

fn wgc_is_nan(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
fn wgc_is_inf(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}
// Through a var: a constant bitcast to inf/NaN is a shader-creation error
// in Tint.
fn wgc_inf() -> f32 { var b = 0x7f800000u; return bitcast<f32>(b); }
fn wgc_nan() -> f32 { var b = 0x7fc00000u; return bitcast<f32>(b); }

// exp that saturates to +inf / 0 instead of relying on overflow behaviour.
fn wgc_exp(x: f32) -> f32 {
  if (wgc_is_nan(x)) { return x; }
  if (x > 88.72283f) { return wgc_inf(); }
  if (x < -103.97208f) { return 0.0f; }
  return exp(x);
}

// ---- extended precision ------------------------------------------------
// pow needs y*log2|x| to about 2^-40 relative (pow(0.999, -5000) loses
// 3e-4 relative with f32 log2), so log2 is computed as an unevaluated sum
// hi + lo of two f32. The code must survive what WGSL allows: fma() and
// a*b+c may or may not be fused, subnormals may be flushed, and some
// compilers simplify (a + b) - a to b. Hence products are split on the bit
// pattern (Dekker), so every partial product is exact and fusing cannot
// change it; x is decomposed with integer operations; and error terms pass
// through wgc_opaque, an xor with a zero the compiler cannot see (z, from a
// uniform), so that it cannot be reassociated away.

fn wgc_opaque(x: f32, z: u32) -> f32 {
  return bitcast<f32>(bitcast<u32>(x) ^ z);
}

// a + b as hi + lo, exactly. The sum itself is opaque too: Mesa rewrites
// (a + b) - a as b.
fn wgc_two_sum(a: f32, b: f32, z: u32) -> vec2<f32> {
  let s = wgc_opaque(a + b, z);
  let bb = wgc_opaque(s - a, z);
  let aa = wgc_opaque(s - bb, z);
  return vec2<f32>(s, (a - aa) + (b - bb));
}

// a as the sum of two halves of at most 12 significant bits each.
fn wgc_split(a: f32) -> vec2<f32> {
  let hi = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
  return vec2<f32>(hi, a - hi);
}

// a * b as hi + lo, exactly (for normal a, b and product): every partial
// product is exact, so a fused or unfused multiply-add gives the same. The
// rounded product is opaque: fused into a later add (Mesa fuses a*b+c even
// when a*b has other uses), it would count the error term twice.
fn wgc_two_prod(a: f32, b: f32, z: u32) -> vec2<f32> {
  let p = wgc_opaque(a * b, z);
  let sa = wgc_split(a);
  let sb = wgc_split(b);
  let e1 = wgc_opaque(sa.x * sb.x - p, z);
  let e2 = wgc_opaque(e1 + sa.x * sb.y, z);
  let e3 = wgc_opaque(e2 + sa.y * sb.x, z);
  return vec2<f32>(p, e3 + sa.y * sb.y);
}

// log2(a) as hi + lo (|error| below 2^-40 relative) for finite a > 0;
// a subnormal a is taken at its value (decoded as an integer).
fn wgc_log2_ext(a: f32, z: u32) -> vec2<f32> {
  var b = bitcast<u32>(a);
  var k = -127;
  if (b < 0x00800000u) { // subnormal: mant * 2^-149, mant < 2^23 exact
    b = bitcast<u32>(f32(b));
    k = k - 149;
  }
  k = k + i32(b >> 23u);
  var m = bitcast<f32>((b & 0x007fffffu) | 0x3f800000u); // [1, 2)
  if (m > 1.41421356f) {
    m = m * 0.5f;
    k = k + 1;
  }
  // ln m = 2 atanh(f), f = u / (2 + u), u = m - 1 (exact); f as fh + fl.
  let u = m - 1.0f;
  let d = wgc_two_sum(2.0f, u, z);
  let fh = u / d.x;
  let r = wgc_two_prod(fh, d.x, z);
  let fl = ((u - r.x) - r.y - fh * d.y) / d.x;
  // 2 atanh(f) = 2f + 2f^3 (1/3 + f^2/5 + ...); |f| <= 0.172, so the tail
  // is below 1% of 2f and f32 is enough there.
  let f2 = fh * fh;
  let tail = f2 * (0.3333333333f + f2 * (0.2f + f2 * (0.1428571429f +
      f2 * (0.1111111111f + f2 * (0.0909090909f + f2 * 0.0769230769f)))));
  let lnh = 2.0f * fh;
  let lnl = 2.0f * fl + lnh * tail;
  // times 1/ln 2 = ch + cl
  let ch = 1.44269502163f;
  let cl = 1.925962989e-8f;
  let p = wgc_two_prod(lnh, ch, z);
  let pl = p.y + (lnh * cl + lnl * ch);
  // plus k (exact; |p| < 0.51 <= |k| unless k == 0)
  let s = wgc_two_sum(f32(k), p.x, z);
  return wgc_two_sum(s.x, s.y + pl, z);
}

// 2^(h + l) for |h + l| up to about 151, the result rounded once.
fn wgc_exp2_ext(h: f32, l: f32) -> f32 {
  if (h > 129.0f) { return wgc_inf(); }
  if (h < -152.0f) { return 0.0f; }
  let n = floor(h + 0.5f);
  let t = (h - n) + l; // h - n is exact; |t| <= 0.5 or so
  // 2^t = e^(t ln 2), Taylor to degree 8: error below 2e-10 relative
  let w = t * 0.693147180560f;
  let e = 1.0f + w * (1.0f + w * (0.5f + w * (0.16666666667f +
      w * (0.041666666667f + w * (0.0083333333333f + w * (0.0013888888889f +
      w * (0.00019841269841f + w * 0.000024801587302f)))))));
  // 2^n as two normal factors, so that 2^128 or 2^-150 needs no special
  // case: only the last product rounds (to inf or a subnormal).
  let n1 = i32(n) / 2;
  let n2 = i32(n) - n1;
  let f1 = bitcast<f32>(u32(n1 + 127) << 23u);
  let f2 = bitcast<f32>(u32(n2 + 127) << 23u);
  return (e * f1) * f2;
}

// exp for the exp op: the builtin's error grows with |x| (WGSL allows
// 3 + 2|x| ulp, 1.1e-5 relative at x = 88, and x*log2(e) rounded in f32
// alone costs up to 4e-6 there), so x*log2(e) is formed exactly and 2^(h+l)
// evaluated as wgc_exp2_ext does.
fn wgc_exp_ext(x: f32, z: u32) -> f32 {
  if (wgc_is_nan(x)) { return x; }
  if (x > 88.72284f) { return wgc_inf(); }
  if (x < -103.97208f) { return 0.0f; }
  // log2(e) = 1.44269502162933349609375 + 1.925962989e-8
  let e = wgc_two_prod(x, 1.44269502163f, z);
  return wgc_exp2_ext(e.x, e.y + x * 1.925962989e-8f);
}

// log with the special cases. A subnormal x gives its own log (about -92.1
// for 1e-40; the builtin gives about -88 there), decoded from its bits as
// (integer mantissa) * 2^-149, or -inf where the compare flushes it to 0.
fn wgc_log(x: f32) -> f32 {
  if (wgc_is_nan(x) || x < 0.0f) { return wgc_nan(); }
  if (x == 0.0f) { return -wgc_inf(); }
  if (wgc_is_inf(x)) { return x; }
  let b = bitcast<u32>(x);
  if (b < 0x00800000u) { // f32(b) is exact and normal
    return log(f32(b)) - 103.27892990343185f; // 149 ln 2
  }
  return log(x);
}

fn wgc_sigmoid(x: f32) -> f32 {
  if (x >= 0.0f) { return 1.0f / (1.0f + wgc_exp(-x)); }
  let e = wgc_exp(x);
  return e / (1.0f + e);
}

fn wgc_tanh(x: f32) -> f32 {
  let a = abs(x);
  if (a < 0.625f) { return tanh(x); }
  let t = wgc_exp(-2.0f * a);
  let r = (1.0f - t) / (1.0f + t);
  return select(r, -r, x < 0.0f);
}

// erfc with fractional error below 1.2e-7 (Chebyshev fit, Numerical
// Recipes' erfcc coefficients), accurate in the far tails where 1 + erf(x)
// would cancel.
fn wgc_erfc(x: f32) -> f32 {
  let z = abs(x);
  let t = 1.0f / (1.0f + 0.5f * z);
  let poly = -1.26551223f + t * (1.00002368f + t * (0.37409196f +
      t * (0.09678418f + t * (-0.18628806f + t * (0.27886807f +
      t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f +
      t * 0.17087277f))))))));
  let r = t * wgc_exp(-z * z + poly);
  return select(r, 2.0f - r, x < 0.0f);
}

fn wgc_gelu(x: f32) -> f32 {
  return 0.5f * x * wgc_erfc(-x * 0.70710678118654752f);
}

fn wgc_is_odd_integer(y: f32) -> bool {
  let a = abs(y);
  if (a >= 16777216.0f || floor(a) != a) { return false; }
  return (u32(a) & 1u) == 1u;
}

// powf's special cases (C99 F.9.4.4), then 2^(y*log2|x|) with the exponent
// in extended precision: within 1e-5 relative wherever the result is
// finite and normal. A subnormal x counts as its value, or as a zero of
// its sign where the compare flushes it.
fn wgc_pow(x: f32, y: f32, z: u32) -> f32 {
  if (y == 0.0f || x == 1.0f) { return 1.0f; }
  if (wgc_is_nan(x) || wgc_is_nan(y)) { return wgc_nan(); }
  let ax = abs(x);
  let odd = wgc_is_odd_integer(y);
  let negative = (bitcast<u32>(x) >> 31u) == 1u;
  if (wgc_is_inf(y)) {
    if (ax == 1.0f) { return 1.0f; }
    if ((ax > 1.0f) == (y > 0.0f)) { return wgc_inf(); }
    return 0.0f;
  }
  var r: f32;
  if (ax == 0.0f) {
    r = select(0.0f, wgc_inf(), y < 0.0f);
  } else if (wgc_is_inf(ax)) { // pow(-inf, 0.5) is +inf, as powf
    r = select(wgc_inf(), 0.0f, y < 0.0f);
  } else {
    if (negative && floor(y) != y) { return wgc_nan(); }
    let g = wgc_log2_ext(ax, z);
    let e = wgc_two_prod(y, g.x, z);
    r = wgc_exp2_ext(e.x, e.y + y * g.y);
  }
  return select(r, -r, negative && odd);
}
