// Final pass of a GEMM accumulated in f32 scratch (a 2-byte C whose k range
// is split across launches): C[t,i,j] := act(alpha*T + beta*C + bias) via
// gemm_out, so that C is rounded once. T (operand "part") is dense in the
// whole problem; its strides within the launch's region come in the A
// stride fields (A is not bound): ba per batch, rs_a per row, cs_a per
// column. One invocation per element of the region, P.total of them.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let idx = wg_linear_group(wid, nwg) * 256u + li;
  if (idx >= P.total) { return; }
  let at = gemm_coords(idx);
  gemm_out(at.z, 0u, at.y, at.x,
           part_ld(at.z * P.ba + at.y * P.rs_a + at.x * P.cs_a));
}
