// A per-operation time chart (wgc's timing records, wgc_profile_*): one
// bar per operation and shape, its time summed over the calls that share
// them, longest first; the label says how many calls and the timing source.
export function drawOpChart(canvas, records, title) {
  const by = new Map();
  for (const r of records) {
    const key = `${r.name.replace(/^wgc_/, '')} ${r.shape}`;
    const e = by.get(key) ?? { key, us: 0, calls: 0 };
    e.us += r.duration_us;
    e.calls++;
    by.set(key, e);
  }
  const rows = [...by.values()].sort((a, b) => b.us - a.us).slice(0, 24);
  const total = records.reduce((s, r) => s + r.duration_us, 0);
  const g = canvas.getContext('2d'), bar = 16, top = 24, label = 330;
  canvas.height = top + rows.length * bar + 8;
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.font = '12px system-ui';
  g.fillStyle = '#000';
  g.fillText(`${title}: ${records.length} operations, ${(total / 1000).toFixed(2)} ms in all`, 0, 14);
  const max = rows.length ? rows[0].us : 1, w = canvas.width - label - 70;
  rows.forEach((e, i) => {
    const y = top + i * bar;
    g.fillStyle = '#000';
    g.textAlign = 'right';
    const calls = e.calls > 1 ? ` ×${e.calls}` : '';
    let text = e.key;
    while (text.length > 8 && g.measureText(`${text}…${calls}`).width > label - 10) text = text.slice(0, -1);
    g.fillText(text === e.key ? `${text}${calls}` : `${text}…${calls}`, label - 6, y + 12);
    g.fillStyle = '#4a7bd0';
    g.fillRect(label, y + 2, Math.max(1, (w * e.us) / max), bar - 4);
    g.fillStyle = '#000';
    g.textAlign = 'left';
    g.fillText(`${(e.us / 1000).toFixed(2)} ms`, label + (w * e.us) / max + 4, y + 12);
  });
  g.textAlign = 'left';
}
