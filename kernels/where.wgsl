// out[i] = cond ? a : b over a contiguous output of up to 8 dimensions, the
// inputs read through per-dimension strides (0 where broadcast). cond is
// true unless +0 or -0, tested on its bits: a NaN compares false with
// everything in WGSL, and an adapter that flushes subnormals must not turn
// a tiny cond false.

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  shape: array<vec4<u32>, 2>,
  sc: array<vec4<u32>, 2>,
  sa: array<vec4<u32>, 2>,
  sb: array<vec4<u32>, 2>,
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var j = 0u; j < 4u; j++) {
    let i = base + j * 256u;
    if (i >= P.count) { return; }
    var rest = i;
    var ic = 0u;
    var ia = 0u;
    var ib = 0u;
    for (var d = P.rank; d > 0u; d--) {
      let q = (d - 1u) / 4u;
      let r = (d - 1u) % 4u;
      let n = P.shape[q][r];
      let idx = rest % n;
      rest = rest / n;
      ic += idx * P.sc[q][r];
      ia += idx * P.sa[q][r];
      ib += idx * P.sb[q][r];
    }
    if ((bitcast<u32>(cond_ld(ic)) << 1u) != 0u) {
      out_st(i, a_ld(ia));
    } else {
      out_st(i, b_ld(ib));
    }
  }
}
