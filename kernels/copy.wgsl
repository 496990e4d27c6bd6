// dst[i] = src[i]: a copy within one buffer, which WebGPU's buffer copy
// cannot do. 4 elements per invocation.

struct Params {
  off: vec4<u32>,
  n: u32,
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var j = 0u; j < 4u; j++) {
    let i = base + j * 256u;
    if (i < P.n) {
      dst_st(i, src_ld(i));
    }
  }
}
