// PV's output of a 2-byte O (attention_unfused_pv.wgsl): the sums over a
// row's key windows stay f32 in the scratch x (rows P.xs apart), and O is
// written once, rounded from the whole sum, by the launch of its last keys.
fn uf_put(r: u32, d: u32, x: f32) {
  let ax = r * P.xs + d;
  var y = x;
  if (P.first == 0u) {
    y += x_ld(ax);
  }
  if (P.last == 1u) {
    o_st(r * P.os + d, y);
  } else {
    x_st(ax, y);
  }
}
