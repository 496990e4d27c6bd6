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

fn wgc_log(x: f32) -> f32 {
  if (wgc_is_nan(x) || x < 0.0f) { return wgc_nan(); }
  if (x == 0.0f) { return -wgc_inf(); }
  if (wgc_is_inf(x)) { return x; }
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

// powf's special cases (C99 F.9.4.4), then exp2(y*log2|x|).
fn wgc_pow(x: f32, y: f32) -> f32 {
  if (y == 0.0f || x == 1.0f) { return 1.0f; }
  if (wgc_is_nan(x) || wgc_is_nan(y)) { return wgc_nan(); }
  let ax = abs(x);
  let odd = wgc_is_odd_integer(y);
  let negative = x < 0.0f || (x == 0.0f && (bitcast<u32>(x) >> 31u) == 1u);
  if (wgc_is_inf(y)) {
    if (ax == 1.0f) { return 1.0f; }
    if ((ax > 1.0f) == (y > 0.0f)) { return wgc_inf(); }
    return 0.0f;
  }
  if (x < 0.0f && floor(y) != y) { return wgc_nan(); }
  var r: f32;
  if (ax == 0.0f) {
    r = select(0.0f, wgc_inf(), y < 0.0f);
  } else if (wgc_is_inf(ax)) {
    r = select(wgc_inf(), 0.0f, y < 0.0f);
  } else {
    let e = y * log2(ax);
    if (e > 128.0f) { r = wgc_inf(); }
    else if (e < -150.0f) { r = 0.0f; }
    else { r = exp2(e); }
  }
  return select(r, -r, negative && odd);
}
