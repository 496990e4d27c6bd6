// GEMM for thin or tiny outputs (m or n small, many small batches): one
// invocation per output element and k slice, P.total = nslices*nb*m*n of
// them, its sum over the slice from gemm_dot (gemm_small_dot.wgsl), which
// reads A and B straight from memory with the general strides
// (gemm_mv.wgsl has its own main: two columns an invocation).
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
  let pb = t * P.bb + k0 * P.rs_b + j * P.cs_b;
  gemm_out(t, s, i, j, gemm_dot(pa, pb, k1 - k0));
}
