// dst[sum(idx * sd)] = src[sum(idx * ss)] for every index idx of shape, up
// to 8 dimensions, one element per step of the flat index i (row-major in
// shape; dim[d] is (extent, ss, sd, 0) of dimension d, see unravel.wgsl).
// The value moves as loaded: no arithmetic touches it.

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
    let o = wgc_unravel(i);
    dst_st(o.y, src_ld(o.x));
  }
}
