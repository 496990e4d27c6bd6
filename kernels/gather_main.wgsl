// gather.wgsl's outputs, four an invocation, 256 apart.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var s = 0u; s < 4u; s++) {
    let i = base + s * 256u;
    if (i >= P.count) { return; }
    let p = gather_pos(i);
    let g = gather_elem(p);
    if (g.y != 0.0) {
      output_st((p.x * P.nidx + p.y) * P.inner + p.z, g.x);
    }
  }
}
