// Output stage of split-K: the raw partial sum of slice s goes to scratch,
// laid out [slice][batch][row][col] over the launch's region.
fn gemm_out(t: u32, s: u32, i: u32, j: u32, acc: f32) {
  part_st(((s * P.nb + t) * P.m + i) * P.n + j, acc);
}
