// The element function of wgc_unary for map.wgsl; OP (a wgc_unary_op)
// comes from the prelude, the OP_<NAME> constants from wgc.h's
// WGC_UNARY_OPS (the generated source "unary_ops"). P.n >> 31 is 0 (a
// launch has fewer than 2^31 elements) but unknown to the compiler:
// wgc_opaque's zero.

fn apply(x: f32) -> f32 {
  switch OP {
    case OP_RELU: { if (wgc_is_nan(x)) { return x; } return max(x, 0.0f); }
    case OP_SIGMOID: { return wgc_sigmoid(x); }
    case OP_TANH: { return wgc_tanh(x); }
    case OP_EXP: { return wgc_exp_ext(x, P.n >> 31u); }
    case OP_LOG: { return wgc_log(x); }
    case OP_SQRT: { if (x < 0.0f) { return wgc_nan(); } return sqrt(x); }
    case OP_ABS: { return abs(x); }
    case OP_NEG: { return -x; }
    case OP_GELU: { return wgc_gelu(x); }
    case OP_SILU: { return x * wgc_sigmoid(x); }
    default: { return wgc_nan(); } // not an op: the front end rejects it
  }
}
