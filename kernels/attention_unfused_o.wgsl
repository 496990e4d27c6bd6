// PV's output of an f32 O (attention_unfused_pv.wgsl): the launch's sum
// added to O in place, from the row's first keys on.
fn uf_put(r: u32, d: u32, x: f32) {
  let at = r * P.os + d;
  var y = x;
  if (P.first == 0u) {
    y += o_ld(at);
  }
  o_st(at, y);
}
