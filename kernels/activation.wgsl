// The activation of a GEMM epilogue, a wgc_activation chosen by the
// prelude's const ACT (0 none, 1 relu, 2 gelu, 3 gelu_tanh, 4 silu), on the
// helpers of math.wgsl, as the unary ops compute them. NaN stays NaN.

// 0.5x(1 + tanh(u)) as x*sigmoid(2u): the same function without the
// cancellation of 1 + tanh(u) for negative x (gelu_tanh(-9) keeps its
// digits). x^3 overflowing makes u infinite, which sigmoid takes.
fn act_gelu_tanh(x: f32) -> f32 {
  let u = 0.7978845608f * (x + 0.044715f * x * x * x);
  return x * wgc_sigmoid(2.0f * u);
}

fn wgc_activate(x: f32) -> f32 {
  switch ACT {
    case 1u: { if (wgc_is_nan(x)) { return x; } return max(x, 0.0f); }
    case 2u: { return wgc_gelu(x); }
    case 3u: { return act_gelu_tanh(x); }
    case 4u: { return x * wgc_sigmoid(x); }
    default: { return x; }
  }
}
