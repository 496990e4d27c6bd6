// out[i] = a[ia] OP b[ib] over a contiguous output of up to 8 dimensions;
// ia and ib come from the output index and per-dimension strides (0 where
// an operand is broadcast). RANK and OP come from the prelude, the OP_<NAME>
// constants from wgc.h's WGC_BINARY_OPS (the generated source "binary_ops").
// RANK 1 with unit strides is the plain element-wise case; apply comes
// from binary_apply.wgsl.

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  shape: array<vec4<u32>, 2>,
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
    var ia = 0u;
    var ib = 0u;
    if (RANK == 1u) {
      ia = i * P.sa[0].x;
      ib = i * P.sb[0].x;
    } else {
      var rest = i;
      for (var d = P.rank; d > 0u; d--) {
        let q = (d - 1u) / 4u;
        let r = (d - 1u) % 4u;
        let n = P.shape[q][r];
        let idx = rest % n;
        rest = rest / n;
        ia += idx * P.sa[q][r];
        ib += idx * P.sb[q][r];
      }
    }
    out_st(i, apply(a_ld(ia), b_ld(ib)));
  }
}
