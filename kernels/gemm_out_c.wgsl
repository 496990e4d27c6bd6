// Output stage: C[t,i,j] := alpha*acc + beta*C[t,i,j]; with beta == 0 C is
// not read (NaN in C does not propagate); use_c (see Params) says which.
fn gemm_out(t: u32, s: u32, i: u32, j: u32, acc: f32) {
  let ci = t * P.bc + i * P.rs_c + j * P.cs_c;
  var v = P.alpha * acc;
  if (P.use_c != 0u) {
    v = v + P.beta * c_ld(ci);
  }
  c_st(ci, v);
}
