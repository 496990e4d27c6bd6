// One statistics pass of softmax, log-softmax, LayerNorm or RMSNorm over the
// middle axis of [outer, len, inner] (host: src/webgpu/norm.c). Invocation
// (o, c, i) folds chunk c (ch rows, strided by in_sr) of column i of outer
// index o into one record of four floats at out[o*out_so + c*out_sc + i].
// Long axes take several passes: later passes fold chunks of records.
// Rows (inner 1) on GPUs take interleaved chunks (step): chunk c holds rows
// c, c + step, ..., so that neighbouring invocations read neighbouring
// floats; the statistics do not depend on which rows a chunk holds.
// Prelude consts:
//   KIND 0 softmax, 1 log-softmax, 2 LayerNorm, 3 RMSNorm.
//   FROM_X 1: the input is the tensor; 0: records of a previous pass.
// Params: fin 1: the chunk ends the axis: the record takes its final form;
// acc 1: the chunk is merged into the record already at the output (rows
// of an axis whose stride is too wide for two rows in one binding, one
// launch each).
// The folding: kernels/norm_fold.wgsl.
// Records (partial -> final):
//   softmax:   (max, sum of exp(x - max), its compensation, 0)
//              -> (max, sum) or, log-softmax, (max, log(sum))
//   LayerNorm: (pivot, mean - pivot, sum of squared deviations, count)
//              -> (pivot, mean - pivot, 1/sqrt(var + eps), 0)
//   RMSNorm:   (sum of squares, compensation, 0, 0) -> (1/sqrt(ms + eps))
// A NaN max marks a softmax row that is NaN. LayerNorm takes the chunk's
// mean as the pivot and sums deviations from it (two passes over the
// chunk, compensated), never E[x^2] - E[x]^2; chunks merge by Chan's
// formula. A constant chunk pivots on its value exactly, so a constant row
// has deviations of exactly 0.

struct Params {
  off: vec4<u32>,
  n_o: u32,    // outer indices in this launch
  n_c: u32,    // chunks per column in this launch
  n_i: u32,    // columns in this launch
  rows: u32,   // rows of the axis this launch reads
  ch: u32,     // rows per chunk
  in_so: u32,  // input stride between outer indices (elements or records)
  in_sr: u32,  // input stride along the axis
  out_so: u32, // output stride between outer indices (records)
  out_sc: u32, // output stride between chunks (records)
  len: f32,    // the axis length (fin)
  eps: f32,
  zero: u32,   // 0, unknown to the compiler (wgc_opaque)
  fin: u32,
  acc: u32,
  step: u32,   // 1: chunk c is rows [c*ch, (c+1)*ch); else rows c + j*step
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  let per_o = P.n_c * P.n_i;
  if (t >= P.n_o * per_o) { return; }
  let o = t / per_o;
  let rest = t - o * per_o;
  let c = rest / P.n_i;
  let i = rest - c * P.n_i;
  var r0 = c * P.ch;
  var n = min(P.ch, P.rows - r0);
  ns_stride = P.in_sr;
  if (P.step > 1u) { // interleaved chunks: neighbours read neighbours
    r0 = c;
    n = (P.rows - c + P.step - 1u) / P.step;
    ns_stride = P.in_sr * P.step;
  }
  var r = ns_chunk(o * P.in_so + r0 * P.in_sr + i, n);
  let at = 4u * (o * P.out_so + c * P.out_sc + i);
  if (P.acc == 1u) {
    r = ns_merge(vec4<f32>(y_ld(at), y_ld(at + 1u), y_ld(at + 2u),
                           y_ld(at + 3u)), r);
  }
  if (P.fin == 1u) { r = ns_final(r); }
  y_st(at, r.x);
  y_st(at + 1u, r.y);
  y_st(at + 2u, r.z);
  y_st(at + 3u, r.w);
}
