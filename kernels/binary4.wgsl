// binary.wgsl's RANK 1 case over vec4s: out4[i] = a OP b lane by lane for
// i < count (count counts vec4s). An operand with unit stride (A_VEC,
// B_VEC) is read as vec4s, one with stride 0 (broadcast) as its first
// float. The invocation layout is map4.wgsl's.

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  shape: array<vec4<u32>, 2>,
  sa: array<vec4<u32>, 2>,
  sb: array<vec4<u32>, 2>,
}

fn operand_a(i: u32) -> vec4<f32> {
  if (A_VEC) { return a_ld4(i); }
  return vec4<f32>(a_ld(0u));
}

fn operand_b(i: u32) -> vec4<f32> {
  if (B_VEC) { return b_ld4(i); }
  return vec4<f32>(b_ld(0u));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var j = 0u; j < 4u; j++) {
    let i = base + j * 256u;
    if (i < P.count) {
      let a = operand_a(i);
      let b = operand_b(i);
      out_st4(i, vec4<f32>(apply(a.x, b.x), apply(a.y, b.y), apply(a.z, b.z),
                           apply(a.w, b.w)));
    }
  }
}
