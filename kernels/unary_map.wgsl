// The element function of wgc_unary for map.wgsl: unary_op (the op's
// function of unary.wgsl) comes from the prelude, alpha and beta from
// Params. P.n >> 31 is 0 (a launch has fewer than 2^31 elements) but
// unknown to the compiler: wgc_opaque's zero.

fn apply(x: f32) -> f32 {
  return unary_op(x, P.alpha, P.beta, P.n >> 31u);
}
