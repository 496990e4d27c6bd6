// What every browser test page shares (run by tests/browser/run.mjs): one
// line per test, "ok NAME" or "FAIL NAME: why", shown on the page and
// handed to the runner; ?filter=TEXT runs only the tests whose name
// contains TEXT, as build/test_wgc SUBSTRING does.
export const filter = new URLSearchParams(location.search).get('filter') ?? '';
const counts = { passed: 0, failed: 0 };

export function report(line) {
  if (window.__wgcLine) window.__wgcLine(line);
  else console.log(line);
  const span = document.createElement('span');
  span.className = line.startsWith('FAIL') ? 'FAIL' : 'ok';
  span.textContent = line + '\n';
  document.getElementById('out').append(span);
}

// Runs fn within timeoutMs; a string it returns is added to the ok line.
export async function test(name, fn, timeoutMs = 60000) {
  if (!name.includes(filter)) return;
  let timer;
  try {
    const note = await Promise.race([fn(), new Promise((_, no) => {
      timer = setTimeout(() => no(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
    })]);
    counts.passed++;
    report(`ok ${name}${typeof note === 'string' && note ? ` (${note})` : ''}`);
  } catch (e) {
    counts.failed++;
    const why = (e?.status ? `${e.status}: ` : '') + (e?.message ?? String(e));
    report(`FAIL ${name}: ${why.replace(/\s+/g, ' ').slice(0, 400)}`);
  } finally {
    clearTimeout(timer);
  }
}

export function check(cond, what) {
  if (!cond) throw new Error(what);
}

// Runs the page's tests, then its summary line: window.__wgcFinished.
export function finish(run) {
  window.__wgcFinished = (async () => {
    await run();
    report(`${counts.passed} passed, ${counts.failed} failed`);
    return { ...counts };
  })();
}
