// gather.wgsl's outputs in a 2-byte output stored by whole words (the host
// picks it where the launch's outputs are contiguous, element i at i):
// each invocation owns up to 4 words, 64 apart, and writes the halves
// this launch holds, keeping the others (another launch's rows).
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 256u + li;
  for (var s = 0u; s < 4u; s++) {
    let u = base + s * 64u;
    // the element in the word's low half: wraps past count in a first
    // word whose low half is not the output's
    let i = 2u * u - output_lead();
    let lo = i < P.count;
    let hi = i + 1u < P.count;
    if (!lo && !hi) { return; }
    var a = vec2<f32>(0.0, 0.0);
    var b = vec2<f32>(0.0, 0.0);
    if (lo) { a = gather_elem(gather_pos(i)); }
    if (hi) { b = gather_elem(gather_pos(i + 1u)); }
    if (a.y != 0.0 || b.y != 0.0) {
      output_stw(u, a.x, b.x, a.y != 0.0, b.y != 0.0);
    }
  }
}
