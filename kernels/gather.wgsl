// ONNX Gather of data [outer, len, inner] along the middle dimension: output
// element (o, j, c) of [outer, nidx, inner] is data (o, indices[j], c). One
// launch covers outputs o < on, j < jn, c < cn (operands offset to the
// piece) and reads only rows k0 <= k < k1 of the axis (data offset to row
// k0): a table beyond one binding is gathered by several launches over the
// same outputs. An index outside [-len, len) reads nothing; the launch with
// zero_oob set (the one holding row 0) writes its zeros. Indices are int32
// words, reinterpreted from the f32 accessor without arithmetic. A block
// table is bound from a block boundary, dc elements before column 0 of the
// piece; the typed accessors decode the table and round the output.

struct Params {
  off: vec4<u32>,
  count: u32,
  cn: u32,
  jn: u32,
  len: u32,
  inner: u32,
  nidx: u32,
  k0: u32,
  k1: u32,
  zero_oob: u32,
  dc: u32,
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var s = 0u; s < 4u; s++) {
    let i = base + s * 256u;
    if (i >= P.count) { return; }
    let c = i % P.cn;
    let t = i / P.cn;
    let j = t % P.jn;
    let o = t / P.jn;
    let raw = bitcast<u32>(indices_ld(j));
    var k = raw;
    var inside = raw < P.len;
    if ((raw >> 31u) != 0u) { // negative: counts from the end
      let m = 0u - raw;
      inside = m <= P.len;
      k = P.len - m;
    }
    let at = (o * P.nidx + j) * P.inner + c;
    if (inside) {
      if (k >= P.k0 && k < P.k1) {
        output_st(at, data_ld((o * P.len + k - P.k0) * P.inner + c + P.dc));
      }
    } else if (P.zero_oob != 0u) {
      output_st(at, 0.0);
    }
  }
}
