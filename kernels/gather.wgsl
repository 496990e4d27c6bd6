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
// Entry points: kernels/gather_main.wgsl (an element an invocation, four
// invocations apart) and gather_words.wgsl (a 2-byte output by words).

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

// Element i of the launch's outputs as (o, j, c).
fn gather_pos(i: u32) -> vec3<u32> {
  let t = i / P.cn;
  return vec3<u32>(t / P.jn, t % P.jn, i % P.cn);
}

// The output at p = (o, j, c): its value, and 1 where this launch writes
// it (0: another launch holds its row).
fn gather_elem(p: vec3<u32>) -> vec2<f32> {
  let raw = bitcast<u32>(indices_ld(p.y));
  var k = raw;
  var inside = raw < P.len;
  if ((raw >> 31u) != 0u) { // negative: counts from the end
    let m = 0u - raw;
    inside = m <= P.len;
    k = P.len - m;
  }
  if (inside) {
    if (k >= P.k0 && k < P.k1) {
      return vec2<f32>(
          data_ld((p.x * P.len + k - P.k0) * P.inner + p.z + P.dc), 1.0);
    }
  } else if (P.zero_oob != 0u) {
    return vec2<f32>(0.0, 1.0);
  }
  return vec2<f32>(0.0, 0.0);
}
