// LayerNorm's scale and bias side by side, sb[2r] = scale[r] and
// sb[2r + 1] = bias[r], so that the output launches bind four operands
// (x, records, sb, y) (host: src/webgpu/norm.c).

struct Params {
  off: vec4<u32>,
  n: u32,
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let r = wg_linear_group(wid, nwg) * 256u + li;
  if (r >= P.n) { return; }
  sb_st(2u * r, s_ld(r));
  sb_st(2u * r + 1u, b_ld(r));
}
