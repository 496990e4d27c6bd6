// Output stage with the epilogue of wgc_gemm_ex: as gemm_out_c, then the
// bias and the activation ACT (activation.wgsl), before C is stored. The
// prelude's BIAS says where the bias goes: 0 nowhere, 1 per column
// (bias_ld(j)), 2 per row (bias_ld(i)); the bias operand starts at the
// launch's first column (row).
fn gemm_out(t: u32, s: u32, i: u32, j: u32, acc: f32) {
  let ci = t * P.bc + i * P.rs_c + j * P.cs_c;
  var v = P.alpha * acc;
  if (P.use_c != 0u) {
    v = v + P.beta * c_ld(ci);
  }
  if (BIAS == 1u) {
    v = v + bias_ld(j);
  } else if (BIAS == 2u) {
    v = v + bias_ld(i);
  }
  c_st(ci, wgc_activate(v));
}
