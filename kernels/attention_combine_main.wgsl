// attention_combine.wgsl's entry point: one invocation per (row, dim),
// writing O (last == 1) or the merged state.

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  if (t >= P.rows * P.hd) { return; }
  let row = t / P.hd;
  let d = t % P.hd;
  let rs = 5u * P.hd + 2u;
  let r = cmb_row(row);
  let c = cmb_dim(row, d, r.m);
  if (P.last == 1u) {
    o_st(cmb_o_row(row) + d, cmb_o(r, c));
  } else {
    if (c.fixed || !cmb_finite(c.acc)) {
      let x = row * rs + P.hd + 2u + 4u * d;
      o_st(row * rs + d, cmb_nan());
      o_st(x, c.acc);
      o_st(x + 1u, c.top.x);
      o_st(x + 2u, c.top.y);
      o_st(x + 3u, c.top.z);
    } else {
      o_st(row * rs + d, c.acc);
    }
    if (d == 0u) {
      var mo = r.m;
      var lo = c.l;
      if (r.keys && !r.seen) { mo = cmb_neg_inf(); }
      if (r.bad) { lo = cmb_nan(); }
      o_st(row * rs + P.hd, mo);
      o_st(row * rs + P.hd + 1u, lo);
    }
  }
}
