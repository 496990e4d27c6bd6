// The element offsets of a flat index in up to three operands read through
// per-dimension strides, for the kernels over shapes of up to 8 dimensions
// (binary.wgsl, copy_strided.wgsl, where.wgsl), concatenated before them.
// Their Params hold rank and dim: array<vec4<u32>, 8>, where dim[d] is
// (extent, stride of operand 0, of operand 1, of operand 2) of dimension
// d, strides in elements (0 where an operand is broadcast); one vec4 per
// dimension is one uniform load per step.

// Offsets of flat index i, row-major over the P.rank dimensions (the last
// varies fastest). Products and sums wrap in u32, as the planners expect.
fn wgc_unravel(i: u32) -> vec3<u32> {
  var rest = i;
  var o = vec3<u32>(0u);
  for (var d = P.rank; d > 0u; d--) {
    let t = P.dim[d - 1u];
    o += (rest % t.x) * t.yzw;
    rest = rest / t.x;
  }
  return o;
}
