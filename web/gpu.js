// The JS side of src/gpu/gpu.h: an id table of WebGPU objects over
// navigator.gpu and the calls src/gpu/gpu_browser.c imports (module
// "wgc_gpu"). All bookkeeping (callbacks, error state, usage flags, mapping
// ranges) is in C; this file only forwards. Asynchronous answers go back
// through the wasm exports wgc_gpu_*, then wgc_poll_all() lets C fire the
// user callbacks. 64-bit sizes arrive as doubles.

// wgc_status values (include/wgc.h).
const OK = 0, OUT_OF_MEMORY = 3, DEVICE = 4, NO_ADAPTER = 6, CANCELLED = 8;

// The order of the LIM_* enum in gpu_browser.c.
const LIMITS = [
  'maxBufferSize', 'maxStorageBufferBindingSize',
  'minStorageBufferOffsetAlignment', 'minUniformBufferOffsetAlignment',
  'maxComputeWorkgroupsPerDimension', 'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupStorageSize', 'maxStorageBuffersPerShaderStage',
];
const POWER = [undefined, 'low-power', 'high-performance'];

// Staging buffers (MAP_READ | COPY_DST, what downloads copy into) are
// kept once read and handed out again: a new mappable buffer costs the
// browser a shared-memory allocation, some 0.2 ms in Chromium, as much as
// the rest of a small download's host work. Sizes are rounded up to a
// power of two so that similar downloads share; POOL buffers per device,
// up to POOL_BYTES each.
const STAGING = 0x0001 | 0x0008, POOL = 8, POOL_BYTES = 1 << 20;
const poolSize = (size) => 2 ** Math.ceil(Math.log2(Math.max(size, 256)));

// wasm: {exports} of the instance, filled in once it exists; schedulePoll
// queues a task that runs wgc_poll_all (C asks for one after registering a
// callback that may be due before any GPU event); enter(fn) runs fn, which
// calls into the module from the event loop, unless the module has failed
// (a trap in fn fails it: wgc.js's runtime).
export function gpuImports(wasm, schedulePoll, enter = (fn) => fn()) {
  const objs = new Map(); // id -> {dev, device|buffer|pipeline|group|enc, ...}
  let lastId = 0;
  // Ids stay below 2^31: gpu_browser.c gives its cached bind groups
  // handles with the top bit set.
  const add = (rec) => {
    do lastId = (lastId + 1) & 0x7fffffff; while (lastId === 0 || objs.has(lastId));
    objs.set(lastId, rec);
    return lastId;
  };
  const x = () => wasm.exports;
  const u8 = () => new Uint8Array(x().memory.buffer);
  const text = (ptr, len) => new TextDecoder().decode(u8().slice(ptr, ptr + len));
  const poll = () => x().wgc_poll_all();

  // Hands a message to C as (pointer, length) for the duration of fn.
  const withString = (s, fn) => {
    const bytes = new TextEncoder().encode(String(s));
    const p = x().malloc(bytes.length || 1);
    if (!p) return fn(0, 0);
    u8().set(bytes, p);
    try { return fn(p, bytes.length); } finally { x().free(p); }
  };
  const report = (dev, status, message) =>
    enter(() => withString(message, (p, n) => x().wgc_gpu_device_error(dev, status, p, n)));
  const devOf = (id) => objs.get(id)?.dev ?? 0;

  // Every import runs guarded: an exception must not unwind through C; it
  // becomes a device error (read by gpu_take_error) and a 0 result.
  const guard = (name, fn) => (...a) => {
    try {
      return fn(...a);
    } catch (e) {
      report(devOf(a[0]), e?.name === 'RangeError' ? OUT_OF_MEMORY : DEVICE,
             `${name}: ${e?.message ?? e}`);
      return 0;
    }
  };
  const complete = (token, status) => enter(() => { x().wgc_gpu_complete(token, status); poll(); });
  const failure = (e) => (e?.name === 'AbortError' ? CANCELLED : DEVICE);

  // The GPU object of the create() being served: its options' gpu (hosts
  // without navigator.gpu: Node with the webgpu package), else the page's.
  const gpuOf = () => wasm.gpu ?? (typeof navigator !== 'undefined' ? navigator.gpu : undefined);

  async function requestDevice(gpu, power, features, token) {
    let status = NO_ADAPTER, id = 0;
    try {
      const adapter = await gpu.requestAdapter({ powerPreference: POWER[power] });
      if (adapter) {
        status = DEVICE;
        const requiredLimits = {};
        for (const k in adapter.limits)
          if (typeof adapter.limits[k] === 'number') requiredLimits[k] = adapter.limits[k];
        // timestamps only when asked for (GPU_FEATURE_TIMESTAMPS: timing);
        // shader-f16 wherever the adapter has it (the kernels compute in
        // f32 so far)
        const requiredFeatures = (features & 1) && adapter.features.has('timestamp-query') ? ['timestamp-query'] : [];
        if (adapter.features.has('shader-f16')) requiredFeatures.push('shader-f16');
        const device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
        const info = adapter.info ?? {};
        const name = info.description ||
          [info.vendor, info.architecture, info.device].filter(Boolean).join(' ') || 'WebGPU adapter';
        // Browsers name no adapter type; software ones show in their info.
        const cpu = !!info.isFallbackAdapter ||
          /swiftshader|llvmpipe|lavapipe|warp/i.test(
            [info.vendor, info.architecture, info.device, info.description].join(' '));
        id = add({ device, queue: device.queue, name, cpu, open: 0, doomed: [], pool: [],
                    layouts: new Map(), compiling: new Set(), failed: 0, gate: null, later: 0 });
        objs.get(id).dev = id;
        device.addEventListener('uncapturederror', (ev) => {
          if (objs.get(id)?.device !== device) return;
          report(id, ev.error instanceof GPUOutOfMemoryError ? OUT_OF_MEMORY : DEVICE,
                 ev.error?.message || 'WebGPU error');
        });
        device.lost.then((info) => {
          if (objs.get(id)?.device !== device) return; // released by us
          enter(() => {
            withString(info.message, (p, n) => x().wgc_gpu_device_lost(id, p, n));
            poll();
          });
        });
        status = OK;
      }
    } catch (e) {
      if (id) objs.delete(id);
      id = 0;
    }
    enter(() => {
      x().wgc_gpu_device_ready(token, status, id);
      poll();
    });
  }

  // Queue work that must wait for a pipeline still compiling: an encoder
  // that uses one is replayed, and submitted, once they are ready, and
  // every queue call made after it (writes, submits, maps, work-done
  // requests, buffer destruction) is chained behind it, in order, on
  // d.gate. fn always runs (a device gone makes its calls fail and report).
  const later = (d, fn, wait) => {
    d.later++;
    d.gate = (d.gate ?? Promise.resolve()).then(wait).then(fn).catch((e) => {
      if (objs.get(d.dev) === d) report(d.dev, DEVICE, `queue: ${e?.message ?? e}`);
    }).finally(() => { if (--d.later === 0) d.gate = null; });
  };
  // One dispatch into e's pass (p, g: the pipeline and bind group records).
  const dispatch = (e, p, g, gx, gy, gz) => {
    if (!e.pass) Object.assign(e, { pass: e.enc.beginComputePass(), pipe: null, group: null });
    if (p !== e.pipe) {
      e.pass.setPipeline(p.pipeline);
      e.pipe = p;
    }
    if (g && g !== e.group) {
      e.pass.setBindGroup(0, g.group);
      e.group = g;
    }
    e.pass.dispatchWorkgroups(gx, gy, gz);
  };
  // Runs step now, or (the encoder waiting for a pipeline) at its replay.
  const record = (e, step) => (e.steps ? e.steps.push(step) : step());

  // A wait on the GPU (mapAsync, onSubmittedWorkDone) still open after a
  // millisecond gets one more call on its queue. Chromium's GPU process
  // notices finished work when a command arrives, else at its own polling
  // every 2 ms: a wait that reached it while the work still ran resolves
  // there, 2.5 ms after a 0.4 ms round trip, in 10-50% of round trips (any
  // page, device or caller alike). The call makes it look at 1 ms. Made at
  // once instead, it would cost every round trip 0.1 ms of the GPU
  // process's time (bench/README). Each wait arms a timer of its own and
  // clears it once settled, so that only late waits wake the page: a timer
  // that fires anyway, or one timer kept armed for all waits, slowed round
  // trips more than arming and clearing costs.
  const expedite = (d, wait) => {
    if (!d) return wait;
    let timer = setTimeout(() => {
      timer = 0;
      if (objs.get(d.dev) !== d) return;
      try {
        d.queue.onSubmittedWorkDone().catch(() => {});
      } catch {
        // a lost device fails its waits on its own
      }
    }, 1);
    const settle = () => {
      if (timer) clearTimeout(timer);
    };
    wait.then(settle, settle);
    return wait;
  };

  const imports = {
    has_gpu: () => (gpuOf() ? 1 : 0),
    request_device: (power, features, token) => { requestDevice(gpuOf(), power, features, token); },
    device_timestamps: (dev) => (objs.get(dev).device.features.has('timestamp-query') ? 1 : 0),
    device_release: (dev) => {
      const d = objs.get(dev);
      for (const [id, rec] of objs)
        if (rec.dev === dev) { objs.delete(id); rec.buffer?.destroy(); }
      d?.doomed.forEach((b) => b.destroy());
      d?.pool.forEach((b) => b.destroy());
      d?.device.destroy();
    },
    device_limit: (dev, which) => objs.get(dev).device.limits[LIMITS[which]] ?? 0,
    device_cpu: (dev) => (objs.get(dev).cpu ? 1 : 0),
    // encoded apart and copied in (encodeInto refuses a view of shared
    // memory), cut at a character's start to fit cap
    device_name: (dev, buf, cap) => {
      let bytes = new TextEncoder().encode(objs.get(dev).name);
      if (bytes.length > cap) {
        let n = cap;
        while (n > 0 && (bytes[n] & 0xc0) === 0x80) n--;
        bytes = bytes.subarray(0, n);
      }
      u8().set(bytes, buf);
      return bytes.length;
    },
    device_of: devOf,
    buffer_create: (dev, size, usage) => {
      const d = objs.get(dev);
      if (usage !== STAGING || size > POOL_BYTES)
        return add({ dev, buffer: d.device.createBuffer({ size, usage }) });
      const want = poolSize(size), i = d.pool.findIndex((b) => b.size === want);
      const buffer = i >= 0 ? d.pool.splice(i, 1)[0] : d.device.createBuffer({ size: want, usage });
      return add({ dev, buffer, staging: true });
    },
    // Destroying a buffer that an unsubmitted encoder uses would fail that
    // submit: while encoders are open, wait for the submit.
    // A staging buffer read since its last map (so no GPU work uses it)
    // goes back to the pool.
    buffer_release: (id) => {
      const rec = objs.get(id);
      if (!rec?.buffer) return;
      objs.delete(id);
      const d = objs.get(rec.dev);
      if (rec.drained && d && d.pool.length < POOL && rec.buffer.mapState === 'unmapped')
        d.pool.push(rec.buffer);
      else if (d?.open) d.doomed.push(rec.buffer);
      else if (d?.gate) later(d, () => rec.buffer.destroy());
      else rec.buffer.destroy();
    },
    // The source as a view of just the bytes: given the whole wasm memory
    // and a range, Chromium's writeBuffer costs in proportion to the whole
    // memory (a chain of tiny ops ran 3-6x slower once downloads of a few
    // MiB had grown it).
    // Behind a waiting submit, the bytes are copied now.
    queue_write: (dev, buf, offset, data, size) => {
      const d = objs.get(dev), b = objs.get(buf).buffer;
      const bytes = new Uint8Array(x().memory.buffer, data, size);
      if (!d.gate) return d.queue.writeBuffer(b, offset, bytes);
      const copy = bytes.slice();
      later(d, () => d.queue.writeBuffer(b, offset, copy));
    },
    // Compiles asynchronously (createComputePipelineAsync): the id is
    // usable at once; work recorded with it waits for it (see later()).
    // The layout is explicit (bindings storage buffers, read-write where
    // writable's bit is set, then the uniform), so bind groups need no
    // compiled pipeline.
    pipeline_create: (dev, ptr, len, bindings, writable) => {
      const d = objs.get(dev), device = d.device;
      const key = `${bindings}/${writable}`;
      let lay = d.layouts.get(key);
      if (!lay) {
        const entries = [];
        for (let b = 0; b <= bindings; b++)
          entries.push({ binding: b, visibility: 4 /* COMPUTE */, buffer: {
            type: b === bindings ? 'uniform' : (writable >>> b) & 1 ? 'storage' : 'read-only-storage' } });
        const group = device.createBindGroupLayout({ entries });
        lay = { group, pipeline: device.createPipelineLayout({ bindGroupLayouts: [group] }) };
        d.layouts.set(key, lay);
      }
      const module = device.createShaderModule({ code: text(ptr, len) });
      const rec = { dev, layout: lay.group, pipeline: null };
      const ready = device.createComputePipelineAsync({ layout: lay.pipeline, compute: { module, entryPoint: 'main' } })
        .then((p) => { rec.pipeline = p; }, (e) => {
          d.failed++;
          if (objs.get(dev) === d) report(dev, DEVICE, `pipeline_create: ${e?.message ?? e}`);
        })
        .finally(() => d.compiling.delete(ready));
      rec.ready = ready;
      d.compiling.add(ready);
      return add(rec);
    },
    pipelines_ready: (dev, token) => {
      const d = objs.get(dev);
      Promise.all([...d.compiling]).then(() => {
        const failed = d.failed;
        d.failed = 0;
        complete(token, failed ? DEVICE : OK);
      });
    },
    release: (id) => { objs.delete(id); },
    bind_group_create: (dev, pipe, count, ptr) => {
      const p = objs.get(pipe);
      const f = new Float64Array(x().memory.buffer, ptr, 3 * count);
      const entries = [];
      for (let i = 0; i < count; i++) {
        const b = objs.get(f[3 * i]);
        if (!b?.buffer) throw new Error(`binding ${i}: no buffer ${f[3 * i]}`);
        entries.push({ binding: i, resource: { buffer: b.buffer, offset: f[3 * i + 1], size: f[3 * i + 2] } });
      }
      return add({ dev, group: objs.get(dev).device.createBindGroup({ layout: p.layout, entries }) });
    },
    encoder_create: (dev) => {
      const d = objs.get(dev);
      const id = add({ dev, enc: d.device.createCommandEncoder(), pass: null });
      d.open++;
      return id;
    },
    // count dispatches recorded by gpu_browser.c, [pipeline, group, x, y, z]
    // each, into the encoder's open pass; a pipeline or group already set
    // in the pass is not set again. From the first pipeline still
    // compiling on, the encoder records steps to replay at its submit.
    encoder_run: (enc, ptr, count) => {
      const e = objs.get(enc);
      const c = new Uint32Array(x().memory.buffer, ptr, 5 * count);
      for (let i = 0; i < 5 * count; i += 5) {
        const p = objs.get(c[i]), g = c[i + 1] ? objs.get(c[i + 1]) : null;
        if (c[i + 1] && !g?.group) throw new Error(`no bind group ${c[i + 1]}`);
        if (!p?.ready) throw new Error(`no pipeline ${c[i]}`);
        if (!e.steps && !p.pipeline) Object.assign(e, { steps: [], waits: [] });
        if (!e.steps) {
          dispatch(e, p, g, c[i + 2], c[i + 3], c[i + 4]);
          continue;
        }
        if (!p.pipeline) e.waits.push(p.ready);
        const [gx, gy, gz] = [c[i + 2], c[i + 3], c[i + 4]];
        e.steps.push(() => dispatch(e, p, g, gx, gy, gz));
      }
    },
    encoder_copy: (enc, src, srcOffset, dst, dstOffset, size) => {
      const e = objs.get(enc), s = objs.get(src).buffer, t = objs.get(dst);
      t.drained = false;
      record(e, () => {
        e.pass?.end();
        e.pass = null;
        e.enc.copyBufferToBuffer(s, srcOffset, t.buffer, dstOffset, size);
      });
    },
    // The GPU's clock into query index of the encoder's own pair: an
    // empty pass whose beginning writes it (core WebGPU's only timestamp).
    encoder_timestamp: (enc, index) => {
      const e = objs.get(enc);
      record(e, () => {
        e.pass?.end();
        e.pass = null;
        e.queries ??= objs.get(e.dev).device.createQuerySet({ type: 'timestamp', count: 2 });
        e.enc.beginComputePass({ timestampWrites: { querySet: e.queries, beginningOfPassWriteIndex: index } }).end();
      });
    },
    encoder_resolve: (enc, buf, offset) => {
      const e = objs.get(enc), b = objs.get(buf).buffer;
      record(e, () => {
        e.pass?.end();
        e.pass = null;
        e.enc.resolveQuerySet(e.queries, 0, 2, b, offset);
      });
    },
    // Submits (dev 0: drops) enc; buffers released while encoders were
    // open go once it is submitted.
    encoder_submit: (dev, enc) => {
      const e = objs.get(enc);
      if (!e) return;
      objs.delete(enc);
      const d = objs.get(e.dev);
      if (d) d.open--;
      const doomed = d && !d.open ? d.doomed.splice(0) : [];
      const submit = () => {
        try {
          if (dev) {
            e.steps?.forEach((step) => step());
            e.pass?.end();
            d.queue.submit([e.enc.finish()]);
          }
        } finally {
          e.queries?.destroy(); // freed once the submitted work is done
          doomed.forEach((b) => b.destroy());
        }
      };
      if (d && (e.steps || d.gate)) later(d, submit, () => Promise.all(e.waits ?? []));
      else submit();
    },
    // A completion always comes, later: a throw becomes a rejection.
    buffer_map_read: (buf, offset, size, token) => {
      const b = objs.get(buf), d = objs.get(b?.dev);
      if (b) Object.assign(b, { mapOffset: offset, mapSize: size, drained: false });
      const map = () => {
        expedite(d, new Promise((ok) => ok(b.buffer.mapAsync(GPUMapMode.READ, offset, size))))
          .then(() => complete(token, OK), (e) => complete(token, failure(e)));
      };
      if (d?.gate) later(d, map);
      else map();
    },
    // Copies out of the mapping and unmaps, also when the copy throws (a
    // buffer left mapped would fail every later submit that uses it); 0
    // when not mapped.
    buffer_read: (buf, offset, dst, size) => {
      const b = objs.get(buf);
      if (!b?.buffer || b.buffer.mapState !== 'mapped') return 0;
      try {
        const range = b.buffer.getMappedRange(b.mapOffset, b.mapSize);
        u8().set(new Uint8Array(range, offset - b.mapOffset, size), dst);
        b.drained = b.staging;
      } finally {
        b.buffer.unmap();
      }
      return 1;
    },
    work_done: (dev, token) => {
      const d = objs.get(dev);
      const ask = () => {
        expedite(d, new Promise((ok) => ok(d.queue.onSubmittedWorkDone())))
          .then(() => complete(token, OK), (e) => complete(token, failure(e)));
      };
      if (d?.gate) later(d, ask);
      else ask();
    },
    request_poll: () => schedulePoll(),
  };
  for (const k of Object.keys(imports))
    if (k !== 'request_device') imports[k] = guard(k, imports[k]);
  return imports;
}
