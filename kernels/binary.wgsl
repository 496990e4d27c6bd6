// out[i] = a[ia] OP b[ib] over a contiguous output of up to 8 dimensions;
// ia and ib come from the output index and per-dimension strides (0 where
// an operand is broadcast; dim[d] is (extent, stride of a, of b, 0), see
// unravel.wgsl). RANK and OP come from the prelude, the OP_<NAME>
// constants from wgc.h's WGC_BINARY_OPS (the generated source "binary_ops").
// RANK 1 with unit strides is the plain element-wise case; apply comes
// from binary_apply.wgsl.

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  dim: array<vec4<u32>, 8>,
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var j = 0u; j < 4u; j++) {
    let i = base + j * 256u;
    if (i >= P.count) { return; }
    var o: vec3<u32>;
    if (RANK == 1u) {
      o = i * P.dim[0].yzw;
    } else {
      o = wgc_unravel(i);
    }
    out_st(i, apply(a_ld(o.x), b_ld(o.y)));
  }
}
