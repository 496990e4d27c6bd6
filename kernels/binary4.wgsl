// binary.wgsl over vec4s: out4[i] = a OP b lane by lane for i < count
// (count counts vec4s), over rows of P.rank vec4s (ROWS; otherwise one
// row). An operand with unit inner stride (A_VEC, B_VEC) is read as vec4s,
// row r from vec4 r * P.dim[0].y (P.dim[0].z for b); one broadcast along
// the inner dimension as the float at r * P.dim[0].y, splat. The invocation
// layout is map4.wgsl's; Params is binary.wgsl's.

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  dim: array<vec4<u32>, 8>,
}

fn operand_a(r: u32, c: u32) -> vec4<f32> {
  if (A_VEC) { return a_ld4(r * P.dim[0].y + c); }
  return vec4<f32>(a_ld(r * P.dim[0].y));
}

fn operand_b(r: u32, c: u32) -> vec4<f32> {
  if (B_VEC) { return b_ld4(r * P.dim[0].z + c); }
  return vec4<f32>(b_ld(r * P.dim[0].z));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var j = 0u; j < 4u; j++) {
    let i = base + j * 256u;
    if (i < P.count) {
      var r = 0u;
      var c = i;
      if (ROWS) {
        r = i / P.rank;
        c = i - r * P.rank;
      }
      let a = operand_a(r, c);
      let b = operand_b(r, c);
      out_st4(i, vec4<f32>(apply(a.x, b.x), apply(a.y, b.y), apply(a.z, b.z),
                           apply(a.w, b.w)));
    }
  }
}
