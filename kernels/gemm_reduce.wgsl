// Second pass of split-K: C[t,i,j] := alpha * sum over slices of the partial
// sums + beta*C (via gemm_out of gemm_out_c). One invocation per element of
// the region, P.total = nb*m*n of them.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let idx = wg_linear_group(wid, nwg) * 256u + li;
  if (idx >= P.total) { return; }
  var acc = 0.0f;
  for (var s = 0u; s < P.nslices; s++) {
    acc += part_ld(s * P.total + idx);
  }
  let at = gemm_coords(idx);
  gemm_out(at.z, 0u, at.y, at.x, acc);
}
