// make bench-web, the page: wgc through its JS module, TF.js on its WebGPU
// backend and a raw navigator.gpu loop, each measured on this page in the
// same run. Every figure: one warm-up, then the median of REPS timed runs,
// each ending with the result downloaded (TF.js has no other way to wait
// for its work, so every system pays the same download).
// Results go to window.__benchDone as {rows, notes}; progress to __benchLine.
import * as wgc from '/wgc.js';

const QUERY = new URLSearchParams(location.search);
const REPS = Math.max(5, Number(QUERY.get('reps')) || 5);
// quick: one size, fewer round trips (a smoke run)
const QUICK = QUERY.has('quick');
const GEMM_SIZES = QUICK ? [256] : [256, 512, 1024];
const TINY_N = 16, TINY_OPS = 1000, ROUND_TRIPS = QUICK ? 20 : 200;
const CHAIN = '1000 ops on 16 floats, one download';
const ROUND_TRIP = 'op on 16 floats + download';

const rows = [], notes = {};
const line = (l) => {
  document.getElementById('log').textContent += l + '\n';
  window.__benchLine?.(l);
};

function random(n, seed) {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 4294967296 - 0.5;
  }
  return a;
}

async function median(run) {
  await run();
  const t = [];
  for (let i = 0; i < REPS; i++) {
    const t0 = performance.now();
    await run();
    t.push((performance.now() - t0) / 1000);
  }
  t.sort((x, y) => x - y);
  return REPS % 2 ? t[REPS >> 1] : (t[REPS / 2 - 1] + t[REPS / 2]) / 2;
}

function record(group, name, system, seconds, work, unit) {
  rows.push({ group, name, system, seconds, runs: REPS, work, unit });
  const v = unit === 'us/op' ? seconds / work * 1e6 : work / seconds * 1e-9;
  line(`  ${group.padEnd(6)} ${name.padEnd(40)} ${system.padEnd(6)} ${v.toFixed(3)} ${unit}`);
}

// C[i][j] of A*B (n x n, row-major) in float64, for checking each system.
function expectEntry(what, a, b, c, n, i, j) {
  let want = 0, scale = 0;
  for (let l = 0; l < n; l++) {
    want += a[i * n + l] * b[l * n + j];
    scale += Math.abs(a[i * n + l] * b[l * n + j]);
  }
  if (!(Math.abs(c[i * n + j] - want) <= 1e-4 * scale + 1e-6))
    throw new Error(`${what}: C[${i}][${j}] = ${c[i * n + j]}, expected ${want}`);
}
function checkGemm(what, a, b, c, n) {
  for (let t = 0; t < 16; t++) expectEntry(what, a, b, c, n, (t * 7919) % n, (t * 104729) % n);
}

// ---- wgc ----
async function benchWgc(ctx) {
  for (const n of GEMM_SIZES) {
    const a = random(n * n, 1), b = random(n * n, 2);
    const pa = ctx.alloc(4 * n * n), pb = ctx.alloc(4 * n * n), pc = ctx.alloc(4 * n * n);
    ctx.upload(pa, a);
    ctx.upload(pb, b);
    let c;
    const t = await median(async () => {
      ctx.gemm(wgc.ROW_MAJOR, wgc.NO_TRANS, wgc.NO_TRANS, n, n, n, 1, pa, n, pb, n, 0, pc, n);
      c = await ctx.download(pc, n * n);
    });
    checkGemm('wgc', a, b, c, n);
    record('gemm', `${n}x${n}x${n}`, 'wgc', t, 2 * n ** 3, 'GFLOP/s');
    for (const p of [pa, pb, pc]) ctx.free(p);
  }
  const x = ctx.alloc(4 * TINY_N);
  ctx.upload(x, random(TINY_N, 3));
  let t = await median(async () => {
    for (let i = 0; i < TINY_OPS; i++) ctx.unary(wgc.UNARY_NEG, x, x, TINY_N);
    await ctx.download(x, TINY_N);
  });
  record('host', CHAIN, 'wgc', t, TINY_OPS, 'us/op');
  t = await median(async () => {
    for (let i = 0; i < ROUND_TRIPS; i++) {
      ctx.unary(wgc.UNARY_NEG, x, x, TINY_N);
      await ctx.download(x, TINY_N);
    }
  });
  record('host', ROUND_TRIP, 'wgc', t, ROUND_TRIPS, 'us/op');
  ctx.free(x);
}

// ---- TF.js (WebGPU backend) ----
async function benchTfjs(tf, system, gemm) {
  for (const n of gemm ? GEMM_SIZES : []) {
    const a = random(n * n, 1), b = random(n * n, 2);
    const ta = tf.tensor2d(a, [n, n]), tb = tf.tensor2d(b, [n, n]);
    let c;
    const t = await median(async () => {
      const tc = tf.matMul(ta, tb);
      c = await tc.data();
      tc.dispose();
    });
    checkGemm(system, a, b, c, n);
    record('gemm', `${n}x${n}x${n}`, system, t, 2 * n ** 3, 'GFLOP/s');
    ta.dispose();
    tb.dispose();
  }
  const x = tf.tensor1d(random(TINY_N, 3));
  let t = await median(async () => {
    let y = x;
    for (let i = 0; i < TINY_OPS; i++) {
      const z = tf.neg(y);
      if (y !== x) y.dispose();
      y = z;
    }
    await y.data();
    y.dispose();
  });
  record('host', CHAIN, system, t, TINY_OPS, 'us/op');
  t = await median(async () => {
    let y = x;
    for (let i = 0; i < ROUND_TRIPS; i++) {
      const z = tf.neg(y);
      if (y !== x) y.dispose();
      y = z;
      await y.data();
    }
    y.dispose();
  });
  record('host', ROUND_TRIP, system, t, ROUND_TRIPS, 'us/op');
  x.dispose();
}

// ---- raw navigator.gpu: the same kernels as the native baselines ----
async function benchRaw(device) {
  const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const buffer = (data) => {
    const b = device.createBuffer({ size: data.byteLength, usage: S });
    device.queue.writeBuffer(b, 0, data);
    return b;
  };
  const uniform = (u32) => {
    const b = device.createBuffer({ size: u32.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(b, 0, u32);
    return b;
  };
  const kernel = async (name, buffers) => {
    const code = await (await fetch(`/kernels/${name}.wgsl`)).text();
    const pipeline = device.createComputePipeline({
      layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' },
    });
    const group = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    return { pipeline, group };
  };
  // count dispatches of k in one encoder and one pass, then read bytes of src
  const runRead = async (k, dims, count, src, bytes) => {
    const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    for (let i = 0; i < count; i++) {
      pass.setPipeline(k.pipeline);
      pass.setBindGroup(0, k.group);
      pass.dispatchWorkgroups(...dims);
    }
    pass.end();
    enc.copyBufferToBuffer(src, 0, staging, 0, bytes);
    device.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(staging.getMappedRange().slice(0));
    staging.destroy();
    return out;
  };

  for (const n of GEMM_SIZES) {
    const a = random(n * n, 1), b = random(n * n, 2);
    const ba = buffer(a), bb = buffer(b), bc = buffer(new Float32Array(n * n));
    // Params of gemm_tile4x4.wgsl: m n k batch, a_row a_col a_batch b_row,
    // b_col b_batch c_batch pad
    const u = uniform(new Uint32Array([n, n, n, 1, n, 1, n * n, n, 1, n * n, n * n, 0]));
    const k = await kernel('gemm_tile4x4', [ba, bb, bc, u]);
    const g = Math.ceil(n / 4 / 8);
    let c;
    const t = await median(async () => { c = await runRead(k, [g, g, 1], 1, bc, 4 * n * n); });
    checkGemm('raw', a, b, c, n);
    record('gemm', `${n}x${n}x${n}`, 'raw', t, 2 * n ** 3, 'GFLOP/s');
    for (const x of [ba, bb, bc, u]) x.destroy();
  }
  const x = buffer(random(TINY_N, 3)), u = uniform(new Uint32Array([TINY_N, 0, 0, 0]));
  const k = await kernel('tiny_neg', [x, u]);
  let t = await median(() => runRead(k, [1, 1, 1], TINY_OPS, x, 4 * TINY_N));
  record('host', CHAIN, 'raw', t, TINY_OPS, 'us/op');
  t = await median(async () => {
    for (let i = 0; i < ROUND_TRIPS; i++) await runRead(k, [1, 1, 1], 1, x, 4 * TINY_N);
  });
  record('host', ROUND_TRIP, 'raw', t, ROUND_TRIPS, 'us/op');
}

async function main() {
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) throw new Error('no WebGPU adapter');
  const info = adapter.info ?? {};
  notes.adapter = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ');
  line(`adapter: ${notes.adapter}`);

  const ctx = await wgc.create({ backend: wgc.BACKEND_WEBGPU });
  notes['wgc adapter'] = ctx.adapterName;
  await benchWgc(ctx);
  ctx.destroy();

  const tf = window.tf;
  await tf.setBackend('webgpu');
  await tf.ready();
  notes.tfjs = `${tf.version_core} on ${tf.getBackend()}`;
  await benchTfjs(tf, 'tfjs', true);
  // By default TF.js runs an op on the CPU when its inputs are small and
  // held on the CPU (no GPU work at all); this run keeps every op on the GPU.
  // (GEMM of these sizes runs on the GPU either way.)
  tf.env().set('WEBGPU_CPU_FORWARD', false);
  await benchTfjs(tf, 'tfjs:gpu-only', false);

  const device = await adapter.requestDevice({
    requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize },
  });
  await benchRaw(device);
  device.destroy();
}

main().then(() => { window.__benchDone = { rows, notes }; },
            (e) => { window.__benchDone = { error: String(e?.stack ?? e) }; });
