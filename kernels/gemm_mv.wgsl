// Matrix-vector GEMM (m = 1, decoding) with B's k contiguous: as
// gemm_small, one invocation per output element and k slice, but B is read
// whole words (or vec4s) at a time and decoded in registers by mv_dot,
// which one of gemm_mv_f32, gemm_mv_h (f16, bf16), gemm_mv_q8 and
// gemm_mv_q4 defines; the host makes every column's start fit its reads.
// P.total = nslices*nb*m*n invocations.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let idx = wg_linear_group(wid, nwg) * 256u + li;
  if (idx >= P.total) { return; }
  let at = gemm_coords(idx);
  let j = at.x;
  let i = at.y;
  let t = at.z;
  let s = at.w;
  let k0 = s * P.kslice;
  let k1 = min(P.k, k0 + P.kslice);
  let pa = t * P.ba + i * P.rs_a + k0 * P.cs_a;
  let pb = t * P.bb + k0 + j * P.cs_b;
  gemm_out(t, s, i, j, mv_dot(pa, pb, k1 - k0));
}

// Four elements of A from pa on, P.cs_a apart.
fn mv_a4(pa: u32) -> vec4<f32> {
  return vec4<f32>(a_ld(pa), a_ld(pa + P.cs_a), a_ld(pa + 2u * P.cs_a),
                   a_ld(pa + 3u * P.cs_a));
}

// f16 bits (low 16) -> f32, exact and without branches: normal numbers
// rebias the exponent, inf and NaN (payload kept) rebias to 255,
// subnormals are m * 2^-24 in ordinary f32 arithmetic (normal in f32, so
// no flushing applies).
fn mv_f16(h: u32) -> f32 {
  let m = h & 0x7fffu;
  let nrm = (m << 13u) + select(0x38000000u, 0x70000000u, m >= 0x7c00u);
  let sub = bitcast<u32>(f32(m) * 5.9604644775390625e-8);
  return bitcast<f32>(select(nrm, sub, m < 0x400u) | ((h & 0x8000u) << 16u));
}
