// The element function of wgc_binary: apply(a, b) is a OP b, with OP from
// the prelude (the OP_<NAME> constants from wgc.h's WGC_BINARY_OPS). Its
// kernel's Params has count, a launch's element count (below 2^31).

fn apply(a: f32, b: f32) -> f32 {
  switch OP {
    case OP_ADD: { return a + b; }
    case OP_SUB: { return a - b; }
    case OP_MUL: { return a * b; }
    case OP_DIV: { return a / b; }
    case OP_MAX: {
      if (wgc_is_nan(a) || wgc_is_nan(b)) { return wgc_nan(); }
      return max(a, b);
    }
    case OP_MIN: {
      if (wgc_is_nan(a) || wgc_is_nan(b)) { return wgc_nan(); }
      return min(a, b);
    }
    case OP_POW: { return wgc_pow(a, b, P.count >> 31u); } // 0, opaque
    default: { return wgc_nan(); } // not an op: the front end rejects it
  }
}
