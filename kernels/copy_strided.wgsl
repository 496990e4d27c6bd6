// dst[sum(idx * sd)] = src[sum(idx * ss)] for every index idx of shape, up
// to 8 dimensions, one element per step of the flat index i (row-major in
// shape). The value moves as loaded: no arithmetic touches it.

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  shape: array<vec4<u32>, 2>,
  ss: array<vec4<u32>, 2>,
  sd: array<vec4<u32>, 2>,
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
    var os = 0u;
    var od = 0u;
    for (var d = P.rank; d > 0u; d--) {
      let q = (d - 1u) / 4u;
      let r = (d - 1u) % 4u;
      let n = P.shape[q][r];
      let idx = rest % n;
      rest = rest / n;
      os += idx * P.ss[q][r];
      od += idx * P.sd[q][r];
    }
    dst_st(od, src_ld(os));
  }
}
