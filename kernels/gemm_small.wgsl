// GEMM for thin or tiny outputs (m or n small, many small batches): one
// invocation per output element and k slice, P.total = nslices*nb*m*n of
// them, reading A and B straight from memory with the general strides.
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
  var pa = t * P.ba + i * P.rs_a + k0 * P.cs_a;
  var pb = t * P.bb + k0 * P.rs_b + j * P.cs_b;
  // Two accumulators for instruction-level parallelism.
  var acc0 = 0.0f;
  var acc1 = 0.0f;
  var kk = k0;
  for (; kk + 1u < k1; kk += 2u) {
    acc0 = fma(a_ld(pa), b_ld(pb), acc0);
    acc1 = fma(a_ld(pa + P.cs_a), b_ld(pb + P.rs_b), acc1);
    pa += 2u * P.cs_a;
    pb += 2u * P.rs_b;
  }
  if (kk < k1) {
    acc0 = fma(a_ld(pa), b_ld(pb), acc0);
  }
  gemm_out(t, s, i, j, acc0 + acc1);
}
