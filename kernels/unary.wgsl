// The element functions of wgc_unary: wgc_unary_apply(op, x, alpha, beta,
// z) is op (a wgc_unary_op; the OP_<NAME> constants come from wgc.h's
// WGC_UNARY_OPS, the generated source "unary_ops") of x with the
// parameters of wgc_unary_params. It reads no bindings or Params, so any
// kernel may call it: list "math+unary_ops+unary" before its own file.
// z must be a zero the compiler cannot see (e.g. a uniform's field shifted
// out): EXP, GELU_TANH, SOFTPLUS and ELU compute in extended
// precision that constant folding of z would undo (see wgc_opaque).

fn wgc_unary_apply(op: u32, x: f32, alpha: f32, beta: f32, z: u32) -> f32 {
  switch op {
    case OP_RELU: { if (wgc_is_nan(x)) { return x; } return max(x, 0.0f); }
    case OP_SIGMOID: { return wgc_sigmoid(x); }
    case OP_TANH: { return wgc_tanh(x); }
    case OP_EXP: { return wgc_exp_ext(x, z); }
    case OP_LOG: { return wgc_log(x); }
    case OP_SQRT: { if (x < 0.0f) { return wgc_nan(); } return sqrt(x); }
    case OP_ABS: { return abs(x); }
    case OP_NEG: { return -x; }
    case OP_GELU: { return wgc_gelu(x); }
    case OP_SILU: { return x * wgc_sigmoid(x); }
    case OP_GELU_TANH: { return wgc_gelu_tanh(x, z); }
    case OP_ERF: { return wgc_erf(x); }
    case OP_RECIPROCAL: { return wgc_reciprocal(x); }
    case OP_FLOOR: { return floor(x); }
    case OP_CEIL: { return ceil(x); }
    case OP_ROUND: { return round(x); } // ties to even, by the WGSL spec
    case OP_SIN: { return wgc_sincos(x, 0u); }
    case OP_COS: { return wgc_sincos(x, 1u); }
    case OP_SOFTPLUS: { return wgc_softplus(x, z); }
    case OP_LEAKY_RELU: { return select(x, alpha * x, x < 0.0f); }
    case OP_ELU: { return select(x, alpha * wgc_expm1(x, z), x < 0.0f); }
    case OP_HARD_SIGMOID: {
      // alpha*x of finite operands is finite even where f32 overflows it:
      // an infinite beta decides (not inf - inf = NaN)
      let finite = !wgc_is_inf(alpha) && !wgc_is_nan(alpha) &&
                   !wgc_is_inf(x) && !wgc_is_nan(x);
      let y = select(alpha * x + beta, beta, wgc_is_inf(beta) && finite);
      if (wgc_is_nan(y)) { return y; }
      return clamp(y, 0.0f, 1.0f);
    }
    case OP_CLIP: { // numpy.clip: NaN anywhere wins; min > max gives max
      if (wgc_is_nan(x) || wgc_is_nan(alpha) || wgc_is_nan(beta)) {
        return wgc_nan();
      }
      return min(max(x, alpha), beta);
    }
    default: { return wgc_nan(); } // not an op: the front end rejects it
  }
}
