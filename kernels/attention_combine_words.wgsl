// attention_combine.wgsl's entry point for a 2-byte O whose rows start
// words of their own (an even head_dim_v and even strides, host:
// src/webgpu/attention.c): invocation t writes dims 2k and 2k + 1 of a
// row, one word, with last == 1.

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  let pairs = P.hd / 2u;
  if (t >= P.rows * pairs) { return; }
  let row = t / pairs;
  let d = 2u * (t - row * pairs);
  let r = cmb_row(row);
  let a = cmb_o(r, cmb_dim(row, d, r.m));
  let b = cmb_o(r, cmb_dim(row, d + 1u, r.m));
  o_stw(((o_lead() + cmb_o_row(row)) >> 1u) + d / 2u, a, b, true, true);
}
