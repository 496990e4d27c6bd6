// norm_row.wgsl's row of a 2-byte y, two elements a word (the host picks
// it where every row is contiguous and starts a word of its own: an even
// row length, inner 1, y's element 0 at a word's start).
fn norm_write(e0: u32, st: vec4<f32>) {
  for (var r = 0u; r < P.rows; r += 2u) {
    let e = e0 + r;
    y_stw(e >> 1u, norm_out(e, r, st), norm_out(e + 1u, r + 1u, st), true,
          true);
  }
}
