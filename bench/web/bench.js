// make bench-web, the page: wgc through its JS module, TF.js on its WebGPU
// backend and a raw navigator.gpu loop, each measured on this page in the
// same run. Every figure: warm-up runs, then the median of its timed runs
// (REPS; the host cases time each chain or round trip alone, many times),
// the systems of a case taking turns, each run ending with the result
// downloaded (TF.js has no other way to wait for its work, so every system
// pays the same download).
// Results go to window.__benchDone as {rows, notes}; progress to __benchLine.
import * as wgc from '/wgc.js';
import { median, runMiniLM } from './minilm_cases.js';

const QUERY = new URLSearchParams(location.search);
const REPS = Math.max(5, Number(QUERY.get('reps')) || 5);
// all-MiniLM-L6-v2 on the peers that take seconds per run on SwiftShader
const SLOW_REPS = Math.max(1, Number(QUERY.get('slow_reps')) || 3);
// quick: one size, fewer round trips (a smoke run)
const QUICK = QUERY.has('quick');
// only: the cases whose "group name" contains this text
const ONLY = QUERY.get('only') ?? '';
const GEMM_SIZES = QUICK ? [256] : [256, 512, 1024];
const SETTLE_MS = 1000;
// host: the chain timed CHAINS times per system and single round trips
// ROUND_TRIPS times, each system's runs alternating one by one (the
// machine's bursts then fall on every system alike)
const TINY_N = 16, TINY_OPS = 1000, CHAINS = QUICK ? 5 : 25, ROUND_TRIPS = QUICK ? 50 : 600;
const CHAIN = '1000 ops on 16 floats, one download';
// the weights group: shapes (m, n, k) and the types, f32 first (the
// reference of each ratio), with their bytes for count elements
const WEIGHT_SHAPES = QUICK ? [[1, 1024, 1024]] : [[1, 4096, 4096], [8, 4096, 4096]];
const WEIGHT_TYPES = [['wgc', wgc.DTYPE_F32], ['wgc:f16', wgc.DTYPE_F16], ['wgc:bf16', wgc.DTYPE_BF16],
  ['wgc:q8_0', wgc.DTYPE_Q8_0], ['wgc:q4_0', wgc.DTYPE_Q4_0]];
const WEIGHT_BYTES = { [wgc.DTYPE_F16]: (n) => 2 * n, [wgc.DTYPE_BF16]: (n) => 2 * n,
  [wgc.DTYPE_Q8_0]: (n) => (n / 32) * 34, [wgc.DTYPE_Q4_0]: (n) => (n / 32) * 18 };
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

// Runs every system's case in turn, reps rounds after warm-up rounds,
// starting each round with the next system, so that noise (other work on
// the machine, the browser's own tasks) falls on all of them alike rather
// than on whichever ran during it. The median seconds per system.
async function interleaved(systems, reps) {
  for (let r = 0; r < Math.max(2, reps / 10); r++) for (const s of systems) await s.run();
  const times = systems.map(() => []);
  for (let r = 0; r < reps; r++)
    for (let j = 0; j < systems.length; j++) {
      const i = (r + j) % systems.length;
      const t0 = performance.now();
      await systems[i].run();
      times[i].push((performance.now() - t0) / 1000);
    }
  return times.map((t) => ({ median: median(t), times: t })); // median sorts t
}

// A round trip in Chromium completes in a fraction of a millisecond or
// some 2 ms later (the GPU process found the work unfinished and waited
// for its next periodic check; wgc asks it again at 1 ms), whatever issued
// it: its times are two clusters, and a median lands in whichever holds
// more runs. So the single round trips report, beside the median, each
// system's share of runs in the slow cluster (over 3 times its fastest
// tenth), the median of the others, the mean and the 90th percentile.
function modes(sorted) {
  const limit = 3 * sorted[Math.floor(sorted.length / 10)];
  const fast = sorted.filter((t) => t <= limit);
  return { slowShare: 1 - fast.length / sorted.length, fastSeconds: median(fast),
           meanSeconds: sorted.reduce((a, t) => a + t, 0) / sorted.length,
           p90Seconds: sorted[Math.floor(sorted.length * 0.9)] };
}

// One case on every system: each entry {system, setup} where setup()
// resolves to {run, check?, done?}; reps timed runs of each.
async function compare(group, name, work, unit, entries, reps = REPS, bimodal = false) {
  if (ONLY && !`${group} ${name}`.includes(ONLY)) return;
  const systems = [];
  for (const e of entries) systems.push({ system: e.system, ...(await e.setup()) });
  // After a case that freed large buffers the browser's GPU process goes
  // on working for a while (the first tiny-op chains after GEMM 1024 ran
  // 3-10x slower than the later ones): a pause, then two warm-up rounds.
  await new Promise((ok) => setTimeout(ok, SETTLE_MS));
  const t = await interleaved(systems, reps);
  for (const [i, s] of systems.entries()) {
    s.check?.();
    record(group, name, s.system, t[i].median, work, unit, reps, bimodal ? modes(t[i].times) : undefined);
  }
  for (const s of systems) s.done?.();
}

function record(group, name, system, seconds, work, unit, runs, mode) {
  rows.push({ group, name, system, seconds, runs, work, unit, ...mode });
  const v = unit === 'us/op' ? seconds / work * 1e6 : work / seconds * 1e-9;
  const us = (t) => (t / work * 1e6).toFixed(0);
  const m = mode ? ` (slow runs ${(100 * mode.slowShare).toFixed(0)}%, median of the others ` +
    `${us(mode.fastSeconds)}; mean ${us(mode.meanSeconds)}, 90th percentile ${us(mode.p90Seconds)})` : '';
  line(`  ${group.padEnd(6)} ${name.padEnd(40)} ${system.padEnd(6)} ${v.toFixed(3)} ${unit}${m}`);
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

// Max pool 3x3 / 2, pad 1, of x ([c, hw, hw]) at a few outputs, each got
// through at(channel, row, column): exact.
function checkPool(what, x, c, hw, at) {
  const q = (hw + 2 - 3 >> 1) + 1;
  for (let t = 0; t < 16; t++) {
    const k = (t * 7) % c, i = (t * 13) % q, j = (t * 29) % q;
    let want = -Infinity;
    for (let a = 0; a < 3; a++)
      for (let b = 0; b < 3; b++) {
        const y = 2 * i - 1 + a, z = 2 * j - 1 + b;
        if (y >= 0 && y < hw && z >= 0 && z < hw) want = Math.max(want, x[(k * hw + y) * hw + z]);
      }
    if (at(k, i, j) !== want) throw new Error(`${what}: pool [${k}][${i}][${j}] = ${at(k, i, j)}, expected ${want}`);
  }
}

// ---- wgc ----
function wgcSystem(ctx) {
  return {
    gemm: (n) => async () => {
      const a = random(n * n, 1), b = random(n * n, 2);
      const pa = ctx.alloc(4 * n * n), pb = ctx.alloc(4 * n * n), pc = ctx.alloc(4 * n * n);
      ctx.upload(pa, a);
      ctx.upload(pb, b);
      let c;
      return {
        run: async () => {
          ctx.gemm(wgc.ROW_MAJOR, wgc.NO_TRANS, wgc.NO_TRANS, n, n, n, 1, pa, n, pb, n, 0, pc, n);
          c = await ctx.download(pc, n * n);
        },
        check: () => checkGemm('wgc', a, b, c, n),
        done: () => { for (const p of [pa, pb, pc]) ctx.free(p); },
      };
    },
    // x W^T (m x k times [n, k] weights, k contiguous) with W stored as
    // dtype: cast on the device from f32 (block types with ggml's
    // rounding); checked against float64 over the weights as stored
    // (cast back to f32).
    weights: (m, n, k, dtype) => async () => {
      const x = random(m * k, 5), w = random(n * k, 6);
      const px = ctx.alloc(4 * m * k), pw = ctx.alloc(4 * n * k), pc = ctx.alloc(4 * m * n);
      ctx.upload(px, x);
      ctx.upload(pw, w);
      let pt = pw, stored = w;
      if (dtype !== wgc.DTYPE_F32) {
        pt = ctx.alloc(WEIGHT_BYTES[dtype](n * k));
        ctx.cast(pw, wgc.DTYPE_F32, pt, dtype, n * k);
        ctx.cast(pt, dtype, pw, wgc.DTYPE_F32, n * k);
        stored = await ctx.download(pw, n * k);
      }
      let c;
      return {
        run: async () => {
          ctx.gemmEx(wgc.ROW_MAJOR, wgc.NO_TRANS, wgc.TRANS, m, n, k, 1, px, k, pt, k, 0, pc, n,
                     { b_type: dtype });
          c = await ctx.download(pc, m * n);
        },
        check: () => {
          for (let t = 0; t < 16; t++) {
            const i = (t * 7) % m, j = (t * 104729) % n;
            let want = 0, scale = 0;
            for (let l = 0; l < k; l++) {
              want += x[i * k + l] * stored[j * k + l];
              scale += Math.abs(x[i * k + l] * stored[j * k + l]);
            }
            if (!(Math.abs(c[i * n + j] - want) <= 1e-4 * scale + 1e-6))
              throw new Error(`wgc weights ${dtype}: C[${i}][${j}] = ${c[i * n + j]}, expected ${want}`);
          }
        },
        done: () => { for (const p of new Set([px, pw, pt, pc])) ctx.free(p); },
      };
    },
    // max pool 3x3, stride 2, pad 1 over [1, c, hw, hw] (NCHW)
    pool: (c, hw) => async () => {
      const x = random(c * hw * hw, 4), q = (hw + 2 - 3 >> 1) + 1;
      const px = ctx.alloc(4 * x.length), py = ctx.alloc(4 * c * q * q);
      ctx.upload(px, x);
      const d = { n: 1, c, h: hw, w: hw, r: 3, s: 3, stride_h: 2, stride_w: 2, pad_h: 1, pad_w: 1,
                  mode: wgc.POOL_MAX };
      let y;
      return {
        run: async () => {
          ctx.pool2d(d, px, py);
          y = await ctx.download(py, c * q * q);
        },
        check: () => checkPool('wgc', x, c, hw, (k, i, j) => y[(k * q + i) * q + j]),
        done: () => { ctx.free(px); ctx.free(py); },
      };
    },
    tiny: (ops) => async () => {
      const x = ctx.alloc(4 * TINY_N);
      ctx.upload(x, random(TINY_N, 3));
      return {
        run: async () => {
          for (let i = 0; i < ops; i++) ctx.unary(wgc.UNARY_NEG, x, x, TINY_N);
          await ctx.download(x, TINY_N);
        },
        done: () => ctx.free(x),
      };
    },
  };
}

// ---- TF.js (WebGPU backend) ----
// cpuForward: TF.js's default, which runs an op on the CPU when its inputs
// are small and held on the CPU (no GPU work at all); off, every op runs
// on the GPU. (GEMM of these sizes runs on the GPU either way.)
function tfjsSystem(tf, system, cpuForward) {
  const mode = () => tf.env().set('WEBGPU_CPU_FORWARD', cpuForward);
  return {
    gemm: (n) => async () => {
      const a = random(n * n, 1), b = random(n * n, 2);
      const ta = tf.tensor2d(a, [n, n]), tb = tf.tensor2d(b, [n, n]);
      let c;
      return {
        run: async () => {
          mode();
          const tc = tf.matMul(ta, tb);
          c = await tc.data();
          tc.dispose();
        },
        check: () => checkGemm(system, a, b, c, n),
        done: () => { ta.dispose(); tb.dispose(); },
      };
    },
    // the same pooling in TF.js's layout, [1, hw, hw, c] (NHWC)
    pool: (c, hw) => async () => {
      const x = random(c * hw * hw, 4), q = (hw + 2 - 3 >> 1) + 1;
      const nhwc = new Float32Array(x.length);
      for (let k = 0; k < c; k++)
        for (let i = 0; i < hw * hw; i++) nhwc[i * c + k] = x[k * hw * hw + i];
      const tx = tf.tensor4d(nhwc, [1, hw, hw, c]);
      let y;
      return {
        run: async () => {
          mode();
          const ty = tf.maxPool(tx, 3, 2, 1);
          y = await ty.data();
          ty.dispose();
        },
        check: () => checkPool(system, x, c, hw, (k, i, j) => y[(i * q + j) * c + k]),
        done: () => tx.dispose(),
      };
    },
    tiny: (ops) => async () => {
      const x = tf.tensor1d(random(TINY_N, 3));
      return {
        run: async () => {
          mode();
          let y = x;
          for (let i = 0; i < ops; i++) {
            const z = tf.neg(y);
            if (y !== x) y.dispose();
            y = z;
          }
          await y.data();
          if (y !== x) y.dispose();
        },
        done: () => x.dispose(),
      };
    },
  };
}

// ---- raw navigator.gpu: the same kernels as the native baselines ----
async function rawSystem(device) {
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
  const code = {};
  for (const name of ['gemm_tile4x4', 'tiny_neg'])
    code[name] = await (await fetch(`/kernels/${name}.wgsl`)).text();
  const kernel = (name, buffers) => {
    const pipeline = device.createComputePipeline({
      layout: 'auto', compute: { module: device.createShaderModule({ code: code[name] }), entryPoint: 'main' },
    });
    const group = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    return { pipeline, group };
  };
  const stagingBuffer = (bytes) =>
    device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  // count dispatches of k in one encoder and one pass, then read bytes of
  // src through reuse (a staging buffer kept for every read, as wgc keeps
  // its own) or, without one, through a staging buffer made for this read
  const runRead = async (k, dims, count, src, bytes, reuse) => {
    const staging = reuse ?? stagingBuffer(bytes);
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
    if (reuse) staging.unmap();
    else staging.destroy();
    return out;
  };
  return {
    gemm: (n) => async () => {
      const a = random(n * n, 1), b = random(n * n, 2);
      const ba = buffer(a), bb = buffer(b), bc = buffer(new Float32Array(n * n));
      // Params of gemm_tile4x4.wgsl: m n k batch, a_row a_col a_batch b_row,
      // b_col b_batch c_batch pad
      const u = uniform(new Uint32Array([n, n, n, 1, n, 1, n * n, n, 1, n * n, n * n, 0]));
      const k = kernel('gemm_tile4x4', [ba, bb, bc, u]);
      const g = Math.ceil(n / 4 / 8);
      let c;
      return {
        run: async () => { c = await runRead(k, [g, g, 1], 1, bc, 4 * n * n); },
        check: () => checkGemm('raw', a, b, c, n),
        done: () => { for (const x of [ba, bb, bc, u]) x.destroy(); },
      };
    },
    tiny: (ops, reuse) => async () => {
      const x = buffer(random(TINY_N, 3)), u = uniform(new Uint32Array([TINY_N, 0, 0, 0]));
      const k = kernel('tiny_neg', [x, u]), staging = reuse ? stagingBuffer(4 * TINY_N) : undefined;
      return {
        run: async () => { await runRead(k, [1, 1, 1], ops, x, 4 * TINY_N, staging); },
        done: () => { x.destroy(); u.destroy(); staging?.destroy(); },
      };
    },
  };
}

async function main() {
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) throw new Error('no WebGPU adapter');
  const info = adapter.info ?? {};
  notes.adapter = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ');
  line(`adapter: ${notes.adapter}`);

  // Every system set up at once, each on its own device, so that each
  // case runs them in turn.
  // wgc's own device, caught as wgc asks for it: raw:wgc-device runs the
  // raw loop on it, so that the device's own speed (which differs from one
  // device to the next, see raw:again) is the same for both
  let wgcDevice = null;
  const ask = GPUAdapter.prototype.requestDevice;
  GPUAdapter.prototype.requestDevice = async function (...a) {
    const d = await ask.apply(this, a);
    wgcDevice ??= d;
    return d;
  };
  const ctx = await wgc.create({ backend: wgc.BACKEND_WEBGPU }).finally(() => {
    GPUAdapter.prototype.requestDevice = ask;
  });
  notes['wgc adapter'] = ctx.adapterName;
  const tf = window.tf;
  await tf.setBackend('webgpu');
  await tf.ready();
  notes.tfjs = `${tf.version_core} on ${tf.getBackend()}`;
  const device = await adapter.requestDevice({
    requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize },
  });
  // a second raw loop, the same code on a device of its own: how far two
  // identical systems' figures stand apart in this run
  const control = await (await navigator.gpu.requestAdapter()).requestDevice();
  const w = wgcSystem(ctx), t = tfjsSystem(tf, 'tfjs', true);
  const tg = tfjsSystem(tf, 'tfjs:gpu-only', false), r = await rawSystem(device);
  const r2 = await rawSystem(control), rw = await rawSystem(wgcDevice);

  for (const n of GEMM_SIZES)
    await compare('gemm', `${n}x${n}x${n}`, 2 * n ** 3, 'GFLOP/s', [
      { system: 'wgc', setup: w.gemm(n) },
      { system: 'tfjs', setup: t.gemm(n) },
      { system: 'raw', setup: r.gemm(n) },
    ]);
  // weights stored f32, f16, bf16, Q8_0, Q4_0: each type's time over f32's
  // on the same shapes (matrix-vector: a decoding step's linear layer)
  for (const [m, n, k] of WEIGHT_SHAPES)
    await compare('weights', `${m}x${n}x${k} (x W^T)`, 2 * m * n * k, 'GFLOP/s',
      WEIGHT_TYPES.map(([name, dtype]) => ({ system: name, setup: w.weights(m, n, k, dtype) })));
  // each library in its own layout (wgc NCHW, TF.js NHWC), the same
  // windows; work: the input's bytes
  await compare('pool', 'max pool 3x3/2 over 64x112x112', 4 * 64 * 112 * 112, 'GB/s', [
    { system: 'wgc', setup: w.pool(64, 112) },
    { system: 'tfjs', setup: t.pool(64, 112) },
  ]);
  // raw: its staging buffer reused, as wgc reuses its own;
  // raw:new-staging: one made and destroyed per read; raw:again: raw once
  // more, on another device; raw:wgc-device: raw on wgc's device
  const tiny = (ops) => [
    { system: 'wgc', setup: w.tiny(ops) },
    { system: 'tfjs', setup: t.tiny(ops) },
    { system: 'tfjs:gpu-only', setup: tg.tiny(ops) },
    { system: 'raw', setup: r.tiny(ops, true) },
    { system: 'raw:new-staging', setup: r.tiny(ops, false) },
    { system: 'raw:again', setup: r2.tiny(ops, true) },
    { system: 'raw:wgc-device', setup: rw.tiny(ops, true) },
  ];
  await compare('host', CHAIN, TINY_OPS, 'us/op', tiny(TINY_OPS), CHAINS);
  await compare('host', ROUND_TRIP, 1, 'us/op', tiny(1), ROUND_TRIPS, true);

  ctx.destroy();
  device.destroy();
  control.destroy();
  // last, with the other cases' buffers gone: the model's 90 MB on each system
  rows.push(...await runMiniLM({ reps: REPS, slowReps: SLOW_REPS, only: ONLY, line, notes }));
}

main().then(() => { window.__benchDone = { rows, notes }; },
            (e) => { window.__benchDone = { error: String(e?.stack ?? e) }; });
