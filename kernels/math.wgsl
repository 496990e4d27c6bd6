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

// ---- more element-wise functions ----------------------------------------

// sigmoid with the accurate exp: GELU-tanh calls it at |x| up to 100 or so,
// where the builtin exp may be off by 200 ulp.
fn wgc_sigmoid_ext(x: f32, z: u32) -> f32 {
  if (x >= 0.0f) { return 1.0f / (1.0f + wgc_exp_ext(-x, z)); }
  let e = wgc_exp_ext(x, z); // also NaN for NaN
  return e / (1.0f + e);
}

// 0.5x(1 + tanh(u)) as x*sigmoid(2u): no cancellation for negative x. x^3
// may overflow to inf, which sigmoid takes to 0 or 1 as the limit is.
fn wgc_gelu_tanh(x: f32, z: u32) -> f32 {
  let u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x * wgc_sigmoid_ext(2.0f * u, z);
}

// erf: Taylor series near 0, where 1 - erfc(x) would lose the relative
// accuracy (terms to x^17: below 1e-9 relative for |x| < 0.5), else
// 1 - erfc(x) (at |x| >= 0.5, erf is at least 0.52: no cancellation).
fn wgc_erf(x: f32) -> f32 {
  if (wgc_is_nan(x)) { return x; }
  if (abs(x) < 0.5f) {
    let s = x * x;
    let p = 1.0f + s * (-0.33333333333f + s * (0.1f + s * (-0.023809523810f +
        s * (0.0046296296296f + s * (-0.00075757575758f +
        s * (0.00010683760684f + s * (-0.000013227513228f +
        s * 0.0000014589169000f)))))));
    return x * (1.1283791670955126f * p);
  }
  return 1.0f - wgc_erfc(x);
}

// 1/x. WGSL bounds the error of a division only for divisors in
// [2^-126, 2^126], so others are first scaled into it by 4 (exactly).
fn wgc_reciprocal(x: f32) -> f32 {
  if (wgc_is_nan(x)) { return x; }
  let sign = bitcast<u32>(x) & 0x80000000u;
  if (wgc_is_inf(x)) { return bitcast<f32>(sign); }
  let a = abs(x);
  // below 2^-128 (or flushed) the quotient overflows
  if (a < 2.9387359e-39f) { return bitcast<f32>(sign | 0x7f800000u); }
  if (a < 1.1754944e-38f) { return 4.0f * (1.0f / (4.0f * x)); }
  if (a > 8.5070592e37f) { return 0.25f * (1.0f / (0.25f * x)); }
  return 1.0f / x;
}

// e^x - 1: Taylor series for |x| < 0.5 (to x^9: below 1e-9 relative),
// where e^x - 1 would cancel.
fn wgc_expm1(x: f32, z: u32) -> f32 {
  if (abs(x) < 0.5f) {
    return x * (1.0f + x * (0.5f + x * (0.16666666667f +
        x * (0.041666666667f + x * (0.0083333333333f +
        x * (0.0013888888889f + x * (0.00019841269841f +
        x * (0.000024801587302f + x * 0.0000027557319224f))))))));
  }
  return wgc_exp_ext(x, z) - 1.0f;
}

// log(1 + t) for t in [0, 1] as 2 atanh(s), s = t/(2 + t) <= 1/3: the
// odd series to s^17 is within 2e-9 relative, and small t keeps its
// digits (the builtin log has only 2^-21 absolute accuracy near 1).
fn wgc_log1p_unit(t: f32) -> f32 {
  let s = t / (2.0f + t);
  let q = s * s;
  return 2.0f * s * (1.0f + q * (0.33333333333f + q * (0.2f +
      q * (0.14285714286f + q * (0.11111111111f + q * (0.090909090909f +
      q * (0.076923076923f + q * (0.066666666667f +
      q * 0.058823529412f))))))));
}

// log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): never overflows.
fn wgc_softplus(x: f32, z: u32) -> f32 {
  if (wgc_is_nan(x)) { return x; }
  return max(x, 0.0f) + wgc_log1p_unit(wgc_exp_ext(-abs(x), z));
}

// a * b as (low, high) 32-bit words.
fn wgc_mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((mid << 16u) | (p00 & 0xffffu),
                   a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// sin(x) for quarter = 0, cos(x) for quarter = 1, within a few ulp of
// the result (absolute) for every finite x. WGSL's builtins are bounded
// only to 2^-11 absolute on [-pi, pi] and not at all outside, so the
// argument is reduced here, exactly: |x| = m 2^e (m a 24-bit integer)
// times 2/pi, modulo 4, is m times the 96 bits of 2/pi that give its
// units and fraction (Payne and Hanek's method), in integer arithmetic;
// the bits beyond weigh below 2^-70. The quadrant is the integer part,
// r = pi/2 (the fraction, rounded to [-1/2, 1/2)); then Taylor polynomials
// on |r| <= pi/4 (terms to r^13, below 1e-11).
fn wgc_sincos(x: f32, quarter: u32) -> f32 {
  if (wgc_is_nan(x) || wgc_is_inf(x)) { return wgc_nan(); }
  let a = abs(x);
  var r = a; // below pi/4: no reduction, so small and zero x keep their bits
  var q = quarter;
  if (a > 0.78539816f) {
    // 2/pi in binary after 32 zero bits (so that windows may start before
    // its point): bit j of the array is bit j - 31 after the point
    var t = array<u32, 9>(0x00000000u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u,
                          0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu,
                          0xdebbc561u);
    let b = bitcast<u32>(a);
    let m = (b & 0x7fffffu) | 0x800000u;
    // |x| = m 2^(e - 150); the bits of 2/pi before bit e - 151 after the
    // point contribute multiples of 4, so the window starts there
    let j0 = (b >> 23u) - 120u; // e - 151 + 31, >= 6 here
    let k = j0 / 32u;
    let sh = j0 % 32u;
    var w: array<u32, 3>;
    for (var i = 0u; i < 3u; i++) {
      let lo = select(t[k + i + 1u] >> (32u - sh), 0u, sh == 0u);
      w[i] = (t[k + i] << sh) | lo;
    }
    // m * w mod 2^96: (u0 u1 u2) holds |x| 2/pi mod 4 in units of 2^-94
    let p2 = wgc_mul_wide(m, w[2]);
    let p1 = wgc_mul_wide(m, w[1]);
    let u1 = p1.x + p2.y;
    let u0 = m * w[0] + p1.y + select(0u, 1u, u1 < p1.x);
    let u2 = p2.x;
    let f1 = (u0 << 2u) | (u1 >> 30u); // the fraction's first 32 bits
    let f2 = (u1 << 2u) | (u2 >> 30u); // and the next 32
    // a fraction of 1/2 or more counts from the next quadrant, negative
    q += (u0 >> 30u) + (f1 >> 31u);
    let hi = f32(bitcast<i32>(f1 & 0xffffff00u)) * 2.3283064e-10f; // 2^-32
    let lo = (f32(f1 & 0xffu) + f32(f2) * 2.3283064e-10f) * 2.3283064e-10f;
    // (hi + lo) pi/2, pi/2 as c1 + c2
    r = hi * 1.57079637f + (hi * -4.3711388e-8f + lo * 1.57079637f);
  }
  let s = r * r;
  var v: f32;
  if ((q & 1u) == 0u) {
    v = r + r * s * (-0.16666666667f + s * (0.0083333333333f +
        s * (-0.00019841269841f + s * (0.0000027557319224f +
        s * (-2.5052108385e-8f + s * 1.6059043837e-10f)))));
  } else {
    v = 1.0f + s * (-0.5f + s * (0.041666666667f + s * (-0.0013888888889f +
        s * (0.000024801587302f + s * (-2.7557319224e-7f +
        s * 2.0876756988e-9f)))));
  }
  // sin is odd (the sign bit: sin(-0) is -0), cos even
  let odd_negative = quarter == 0u && (bitcast<u32>(x) >> 31u) == 1u;
  let negative = ((q & 2u) != 0u) != odd_negative;
  return select(v, -v, negative);
}
