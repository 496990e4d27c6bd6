// The element functions of wgc_unary, one per op: unary_<name> for each
// X(NAME, name) of wgc.h's WGC_UNARY_OPS (tools/embed.c fails the build
// when one is missing), of x with the parameters of wgc_unary_params. They
// read no bindings or Params, so any kernel may call them: list
// "math+unary" before its own file. A kernel for one op gets it from the
// prelude as unary_op (see src/webgpu/elementwise.c): a function per op,
// not a switch over all of them, so that the shader compiler inlines only
// the op it runs (a switch of every op cost each unary pipeline 2-3x the
// compile time on llvmpipe).
// z must be a zero the compiler cannot see (e.g. a uniform's field shifted
// out): EXP, GELU_TANH, SOFTPLUS and ELU compute in extended
// precision that constant folding of z would undo (see wgc_opaque).

fn unary_relu(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  if (wgc_is_nan(x)) { return x; }
  return max(x, 0.0f);
}
fn unary_sigmoid(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_sigmoid(x);
}
fn unary_tanh(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_tanh(x);
}
fn unary_exp(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_exp_ext(x, z);
}
fn unary_log(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_log(x);
}
fn unary_sqrt(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  if (x < 0.0f) { return wgc_nan(); }
  return sqrt(x);
}
fn unary_abs(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return abs(x);
}
fn unary_neg(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return -x;
}
fn unary_gelu(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_gelu(x);
}
fn unary_silu(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return x * wgc_sigmoid(x);
}
fn unary_gelu_tanh(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_gelu_tanh(x, z);
}
fn unary_erf(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_erf(x);
}
fn unary_reciprocal(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_reciprocal(x);
}
fn unary_floor(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return floor(x);
}
fn unary_ceil(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return ceil(x);
}
fn unary_round(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return round(x); // ties to even, by the WGSL spec
}
fn unary_sin(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_sincos(x, 0u);
}
fn unary_cos(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_sincos(x, 1u);
}
fn unary_softplus(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return wgc_softplus(x, z);
}
fn unary_leaky_relu(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return select(x, alpha * x, x < 0.0f);
}
fn unary_elu(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  return select(x, alpha * wgc_expm1(x, z), x < 0.0f);
}
fn unary_hard_sigmoid(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  // alpha*x of finite operands is finite even where f32 overflows it: an
  // infinite beta decides (not inf - inf = NaN)
  let finite = !wgc_is_inf(alpha) && !wgc_is_nan(alpha) &&
               !wgc_is_inf(x) && !wgc_is_nan(x);
  let y = select(alpha * x + beta, beta, wgc_is_inf(beta) && finite);
  if (wgc_is_nan(y)) { return y; }
  return clamp(y, 0.0f, 1.0f);
}
fn unary_clip(x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  // numpy.clip: NaN anywhere wins; min > max gives max
  if (wgc_is_nan(x) || wgc_is_nan(alpha) || wgc_is_nan(beta)) {
    return wgc_nan();
  }
  return min(max(x, alpha), beta);
}
