// RotaryEmbedding for rows longer than a binding window (host:
// src/webgpu/rotary.c): a launch rotates a run of pairs of one row, whose
// two halves are bound apart. Invocation t rotates (x1[t * step],
// x2[t * step]) by c[t] and s[t]; step is 1 for pairs (k, k + half) and 2
// for interleaved pairs, where x2 starts one element after x1.

struct Params {
  off: vec4<u32>,
  off2: vec4<u32>, // operands 4 and 5: y1, y2
  n: u32,          // pairs in this launch
  step: u32,
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  if (t >= P.n) { return; }
  let i = t * P.step;
  let cv = c_ld(t);
  let sv = s_ld(t);
  let x1 = x1_ld(i);
  let x2 = x2_ld(i);
  y1_st(i, cv * x1 - sv * x2);
  y2_st(i, sv * x1 + cv * x2);
}
