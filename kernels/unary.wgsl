// The element function of wgc_unary for map.wgsl; OP (a wgc_unary_op)
// comes from the prelude. P.n >> 31 is 0 (a launch has fewer than 2^31
// elements) but unknown to the compiler: wgc_opaque's zero.

fn apply(x: f32) -> f32 {
  switch OP {
    case 0u: { if (wgc_is_nan(x)) { return x; } return max(x, 0.0f); }
    case 1u: { return wgc_sigmoid(x); }
    case 2u: { return wgc_tanh(x); }
    case 3u: { return wgc_exp_ext(x, P.n >> 31u); }
    case 4u: { return wgc_log(x); }
    case 5u: { if (x < 0.0f) { return wgc_nan(); } return sqrt(x); }
    case 6u: { return abs(x); }
    case 7u: { return -x; }
    case 8u: { return wgc_gelu(x); }
    default: { return x * wgc_sigmoid(x); }
  }
}
