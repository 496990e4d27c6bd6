// The element function of wgc_unary for map.wgsl: OP comes from the
// prelude, alpha and beta from Params. P.n >> 31 is 0 (a launch has fewer
// than 2^31 elements) but unknown to the compiler: wgc_opaque's zero.

fn apply(x: f32) -> f32 {
  return wgc_unary_apply(OP, x, P.alpha, P.beta, P.n >> 31u);
}
