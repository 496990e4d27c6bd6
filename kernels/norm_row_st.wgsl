// norm_row.wgsl's row, element by element.
fn norm_write(e0: u32, st: vec4<f32>) {
  var e = e0;
  for (var r = 0u; r < P.rows; r++) {
    y_st(e, norm_out(e, r, st));
    e += P.in_sr;
  }
}
