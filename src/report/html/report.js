// exitscope HTML report: draws each section of window.exitscopeData with the renderer of its kind
// (ES.render.<kind>), inline SVG only, nothing fetched. A renderer gets (element, section, view) —
// view = the filter bar's {vm, vcpu, reason}, '' for all — and returns how many marks it drew;
// window.exitscopeRendered[id] keeps that count for the browser test, window.exitscopeReady says
// every section was drawn.
(function () {
  'use strict';
  const ES = (window.ES = { render: {} });
  const data = JSON.parse(document.getElementById('exitscope-data').textContent);
  window.exitscopeData = data;
  window.exitscopeRendered = {};
  const SVGNS = 'http://www.w3.org/2000/svg';

  // ---- small DOM helpers ----
  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'cls') e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children || []) if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    return e;
  }
  function sv(tag, attrs, title) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, v);
    if (title) {
      const t = document.createElementNS(SVGNS, 'title');
      t.textContent = title;
      e.appendChild(t);
    }
    return e;
  }
  function txt(x, y, s, attrs) {
    const t = sv('text', Object.assign({ x, y }, attrs || {}));
    t.textContent = s;
    return t;
  }

  // ---- numbers: durations as base/units.h FormatDuration writes them (the page carries samples of
  // the C++ spelling, duration_samples, which the browser test compares with this) ----
  function fixed(v, d) { return v.toFixed(d); }
  ES.fmtDur = function (v, unit) {
    unit = unit || 'ns';
    if (unit !== 'ns') {
      const name = unit === 'cycles' ? 'cyc' : unit === 'count' ? 'cnt' : 'raw';
      if (v < 1000) return fixed(v, 0) + name;
      const prefix = ['k', 'M', 'G', 'T', 'P'];
      let i = 0;
      for (v /= 1000; v >= 1000 && i + 1 < prefix.length; ++i) v /= 1000;
      return fixed(v, v >= 100 ? 1 : v >= 10 ? 2 : 3) + prefix[i] + name;
    }
    if (v < 1000) return fixed(v, 0) + 'ns';
    let div = 1e3, name = 'us';
    if (v >= 1e6) { div = 1e6; name = 'ms'; }
    if (v >= 1e9) { div = 1e9; name = 's'; }
    v /= div;
    return fixed(v, v >= 100 ? 1 : v >= 10 ? 2 : 3) + name;
  };
  const fmtInt = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));
  const pct = (f) => (f === null || f === undefined ? '–' : fixed(f, 1) + '%');
  function fmtRate(r) {
    if (r >= 1e6) return fixed(r / 1e6, 2) + 'M/s';
    if (r >= 1e3) return fixed(r / 1e3, 1) + 'k/s';
    return fixed(r, 0) + '/s';
  }

  // ---- the filter bar: which threads (VM, vCPU) and reason every chart shows ----
  const threads = (data.filters && data.filters.threads) || [];
  const threadByTid = new Map(threads.map((t) => [String(t.tid), t]));
  const view = { vm: '', vcpu: '', reason: '' };
  function threadShown(t) {
    return (!view.vm || t.vm === view.vm) && (!view.vcpu || String(t.tid) === view.vcpu);
  }
  function reasonShown(r) { return !view.reason || r === view.reason; }
  function filtered() { return Boolean(view.vm || view.vcpu); }

  function buildFilters() {
    const bar = document.getElementById('filters');
    const vms = [...new Set(threads.map((t) => t.vm))];
    const mk = (name, label, options) => {
      const s = el('select', { id: 'filter-' + name }, [el('option', { value: '', text: 'all' })]);
      for (const [v, l] of options) s.appendChild(el('option', { value: v, text: l }));
      s.addEventListener('change', () => { view[name] = s.value; drawAll(); });
      bar.appendChild(el('label', {}, [label + ' ', s]));
    };
    mk('vm', 'VM', vms.map((v) => [v, v]));
    mk('vcpu', 'vCPU', threads.map((t) => [String(t.tid), t.vm + ' ' + t.vcpu + (t.tid >= 0 ? ' (tid ' + t.tid + ')' : '')]));
    mk('reason', 'reason', ((data.filters && data.filters.reasons) || []).map((r) => [r, r]));
  }

  // ---- context and diagnostics ----
  ES.render.context = function (body, s) {
    const c = s.data.context, t = s.data.totals;
    const rows = [
      ['source', c.source], ['format', c.format], ['kernel', c.kernel || '–'], ['ISA', c.isa], ['clock', c.clock],
      ['CPUs', c.cpu_count + (c.cpu_description ? ' — ' + c.cpu_description : '')],
      ['duration', c.duration_ns_text], ['time unit', c.time_unit], ['VMs', (c.vms || []).join('; ')],
      ['vCPU threads', fmtInt(c.vcpu_threads)], ['filters', c.filters || 'none'],
      ['records', fmtInt(t.records)], ['kvm events', fmtInt(t.events)], ['kvm_exit', fmtInt(t.kvm_exit)],
      ['kvm_entry', fmtInt(t.kvm_entry)], ['timed exits', fmtInt(t.timed_exits)],
      ['untimed exits', fmtInt(t.untimed_exits)], ['reported exits', fmtInt(t.reported.count)],
      ['exit time (handling)', t.reported.total_ns_text || '–'], ['blocked (halted vCPUs)', t.reported.blocked_ns_text || '–'],
      ['to the VMM', t.userspace_recorded ? fmtInt(t.userspace_count) + ' exits, ' + t.userspace_ns_text : 'not recorded (kvm_userspace_exit)'],
    ];
    for (const n of c.clock_notes || []) rows.push(['clock note', n]);
    const kv = el('table', { cls: 'kv' });
    for (const [k, v] of rows) kv.appendChild(el('tr', {}, [el('td', { text: k }), el('td', { text: String(v) })]));
    body.appendChild(kv);
    let marks = rows.length;
    if (s.data.partial) body.appendChild(el('p', { cls: 'partial', text: 'PARTIAL RESULT: some exits are missing or untimed.' }));
    const diags = s.data.diagnostics || [];
    body.appendChild(el('h3', { text: diags.length ? 'Diagnostics (non-zero counters)' : 'Diagnostics: none non-zero' }));
    if (diags.length) {
      const tb = el('table', {}, [el('tr', {}, ['counter', 'severity', 'count', 'meaning'].map((h, i) => el('th', { cls: i === 2 ? '' : 'l', text: h })))]);
      for (const d of diags) {
        tb.appendChild(el('tr', {}, [el('td', { cls: 'l', text: d.name }), el('td', { cls: 'l', text: d.severity }),
          el('td', { text: fmtInt(d.count), 'data-check': 'diag|' + d.name, 'data-value': d.count }),
          el('td', { cls: 'l', text: d.description })]));
        marks++;
      }
      body.appendChild(tb);
    }
    return marks;
  };

  // ---- exits and exit time per reason ----
  function groupShown(g) {
    if (!filtered() || g.kind === 'all' || g.kind === 'cpu') return true;
    if (g.kind === 'vm') return threads.some((t) => t.vm_id === g.id && threadShown(t));
    if (g.kind === 'vcpu') { const t = threadByTid.get(String(g.id)); return !t || threadShown(t); }
    return true;
  }
  function reasonBars(g, known) {
    const rows = g.reasons.filter((r) => reasonShown(r.reason));
    const W = 760, rowH = 18, left = 150, mid = 300, H = rows.length * rowH + 24;
    const svg = sv('svg', { width: W, height: H, class: 'bars' });
    const maxC = Math.max(1, ...rows.map((r) => r.count)), maxT = Math.max(1, ...rows.map((r) => r.total_ns || 0));
    const cw = mid - left - 10, tw = W - mid - 60;
    svg.appendChild(txt(left, 12, 'exits'));
    svg.appendChild(txt(mid, 12, known ? 'handling time: in kernel | in the VMM' : 'handling time'));
    let marks = 0;
    rows.forEach((r, i) => {
      const y = 18 + i * rowH;
      svg.appendChild(txt(left - 6, y + 12, r.reason, { 'text-anchor': 'end' }));
      svg.appendChild(sv('rect', { class: 'bar', x: left, y: y + 2, width: Math.max(1, (cw * r.count) / maxC), height: rowH - 5 },
        r.reason + ': ' + fmtInt(r.count) + ' exits (' + pct(r.pct_count) + ')'));
      const total = r.total_ns || 0, vmm = known ? r.userspace_ns || 0 : 0;
      const wk = (tw * (total - vmm)) / maxT, wv = (tw * vmm) / maxT;
      svg.appendChild(sv('rect', { class: 'bar', x: mid, y: y + 2, width: Math.max(total ? 1 : 0, wk), height: rowH - 5 },
        r.reason + ': ' + (r.total_ns_text || '–') + (known ? ' in all, ' + ES.fmtDur(total - vmm) + ' in the kernel' : '') + ' (' + pct(r.pct_time) + ' of exit time)'));
      if (wv > 0) svg.appendChild(sv('rect', { class: 'vmm', x: mid + wk, y: y + 2, width: wv, height: rowH - 5 },
        r.reason + ': ' + r.userspace_ns_text + ' in the VMM (' + fmtInt(r.userspace_count) + ' exits went to it)'));
      svg.appendChild(txt(mid + wk + wv + 4, y + 12, (r.total_ns_text || '–')));
      marks += 2;
    });
    return [svg, marks];
  }
  ES.render.reasons = function (body, s) {
    const known = s.data.userspace_recorded;
    let marks = 0;
    if (known) body.appendChild(el('div', { cls: 'legend' }, [el('span', {}, [el('i', { style: 'background:var(--kernel)' }), 'in the kernel']),
      el('span', {}, [el('i', { style: 'background:var(--vmm)' }), 'in the VMM (userspace)'])]));
    for (const g of s.data.groups) {
      if (!groupShown(g)) continue;
      const gid = g.kind + ':' + g.id;
      body.appendChild(el('h3', { text: g.label + ' — ' + fmtInt(g.total.count) + ' exits, ' + (g.total.total_ns_text || 'no timed exits') }));
      const [bars, m] = reasonBars(g, known);
      body.appendChild(bars);
      marks += m;
      const cols = [['reason', 'l'], ['exits', ''], ['%exits', ''], ['timed', ''], ['total', ''], ['%time', ''], ['mean', ''],
        ['p50', ''], ['p99', ''], ['p99.9', ''], ['max', ''], ['blocked', '']];
      if (known) cols.push(['to VMM', ''], ['VMM time', ''], ['in-kernel time', '']);
      const tb = el('table', {}, [el('tr', {}, cols.map(([h, c]) => el('th', { cls: c, text: h })))]);
      for (const r of g.reasons) {
        if (!reasonShown(r.reason)) continue;
        const cell = (field, text, value) => el('td', { text, 'data-check': gid + '|' + r.reason + '|' + field, 'data-value': value });
        const cells = [el('td', { cls: 'l', text: r.reason }), cell('count', fmtInt(r.count), r.count), el('td', { text: pct(r.pct_count) }),
          cell('timed_count', fmtInt(r.timed_count), r.timed_count), cell('total_ns', r.total_ns_text || '–', r.total_ns),
          el('td', { text: pct(r.pct_time) }), cell('mean_ns', r.mean_ns_text || '–', r.mean_ns),
          cell('p50_ns', r.p50_ns_text || '–', r.p50_ns), cell('p99_ns', r.p99_ns_text || '–', r.p99_ns),
          cell('p999_ns', r.p999_ns_text || '–', r.p999_ns), cell('max_ns', r.max_ns_text || '–', r.max_ns),
          cell('blocked_ns', r.blocked_ns_text || '–', r.blocked_ns)];
        if (known) {
          const kernel = r.total_ns === null ? null : r.total_ns - r.userspace_ns;
          cells.push(cell('userspace_count', fmtInt(r.userspace_count), r.userspace_count),
            cell('userspace_ns', r.userspace_ns_text, r.userspace_ns),
            el('td', { text: kernel === null ? '–' : ES.fmtDur(kernel, s.data.time_unit) }));
        }
        tb.appendChild(el('tr', {}, cells));
        marks++;
      }
      body.appendChild(tb);
      if (g.reasons_hidden) body.appendChild(el('p', { cls: 'note', text: g.reasons_hidden + ' more reasons cut by --top' }));
    }
    if (filtered() && s.data.group_by === 'reason') {
      body.insertBefore(el('p', { cls: 'note', text: 'The table covers every VM and vCPU: make it per VM or vCPU with report --by vm / --by vcpu; the charts below follow the filter.' }), body.firstChild);
    }
    return marks;
  };

  // ---- latency distributions on a log axis ----
  function percentileOf(buckets, q) {  // nearest rank over summed buckets, the bucket's low bound
    let n = 0;
    for (const [, c] of buckets) n += c;
    const rank = Math.max(1, Math.ceil(q * n));
    let seen = 0;
    for (const [b, c] of buckets) { seen += c; if (seen >= rank) return b; }
    return null;
  }
  ES.render.latency = function (body, s) {
    const d = s.data, unit = d.time_unit;
    const wrap = el('div', { cls: 'charts' });
    body.appendChild(wrap);
    let marks = 0;
    for (const r of d.reasons) {
      if (!reasonShown(r.reason)) continue;
      const sum = new Map();
      for (const [tid, list] of Object.entries(r.threads)) {
        const t = threadByTid.get(tid);
        if (t && !threadShown(t)) continue;
        for (const [b, c] of list) sum.set(b, (sum.get(b) || 0) + c);
      }
      if (!sum.size) continue;
      const buckets = [...sum.entries()].sort((a, b) => a[0] - b[0]);
      const lo = (b) => d.buckets[b][0], hi = (b) => d.buckets[b][1];
      const xmin = Math.max(1, lo(buckets[0][0])), xmax = Math.max(xmin * 10, hi(buckets[buckets.length - 1][0]) * 1.5);
      const W = 360, H = 150, L = 40, B = 24, T = 14;
      const lx = (v) => L + ((Math.log10(Math.max(v, 1)) - Math.log10(xmin)) / (Math.log10(xmax) - Math.log10(xmin))) * (W - L - 8);
      const maxC = Math.max(...buckets.map((x) => x[1]));
      const svg = sv('svg', { width: W, height: H, 'data-reason': r.reason });
      svg.appendChild(sv('line', { class: 'axis', x1: L, y1: H - B, x2: W - 8, y2: H - B }));
      const e0 = Math.ceil(Math.log10(xmin)), e1 = Math.floor(Math.log10(xmax)), step = Math.ceil((e1 - e0 + 1) / 5);
      for (let e = e0; e <= e1; ++e) {
        const x = lx(Math.pow(10, e));
        svg.appendChild(sv('line', { class: 'grid', x1: x, y1: T, x2: x, y2: H - B }));
        if ((e - e0) % step === 0) svg.appendChild(txt(x, H - B + 13, ES.fmtDur(Math.pow(10, e), unit), { 'text-anchor': 'middle' }));
      }
      svg.appendChild(txt(L - 4, T + 8, fmtInt(maxC), { 'text-anchor': 'end' }));
      let n = 0;
      for (const [b, c] of buckets) {
        const x0 = lx(lo(b)), x1 = Math.max(x0 + 1, lx(hi(b)));
        const h = ((H - B - T) * c) / maxC;
        svg.appendChild(sv('rect', { class: 'bar', x: x0, y: H - B - h, width: x1 - x0, height: h },
          d.buckets[b][2] + ' – ' + ES.fmtDur(hi(b), unit) + ': ' + fmtInt(c) + ' exits'));
        n += c;
        marks++;
      }
      // The report's percentiles when nothing is filtered; a filtered view's from its buckets (≈).
      const exact = !filtered();
      const marksAt = exact ? [['p50', r.p50_ns], ['p99', r.p99_ns], ['p99.9', r.p999_ns]]
        : [['p50', lo(percentileOf(buckets, 0.5))], ['p99', lo(percentileOf(buckets, 0.99))], ['p99.9', lo(percentileOf(buckets, 0.999))]];
      marksAt.forEach(([name, v], i) => {
        const x = lx(v);
        const g = sv('g', { 'data-check': 'latency|' + r.reason + '|' + name, 'data-value': v });
        g.appendChild(sv('line', { class: 'mark', x1: x, y1: T, x2: x, y2: H - B }, name + ' ' + (exact ? '' : '≈ ') + ES.fmtDur(v, unit)));
        const right = x > W - 70;  // near the right edge: label on the marker's left
        g.appendChild(txt(right ? x - 2 : x + 2, T + 10 + i * 11, name + (exact ? ' ' : ' ≈') + ES.fmtDur(v, unit),
          { fill: 'var(--accent)', 'text-anchor': right ? 'end' : 'start' }));
        svg.appendChild(g);
      });
      wrap.appendChild(el('div', { cls: 'chart' }, [el('div', { cls: 't', text: r.reason + ' — ' + fmtInt(n) + ' timed exits' }), svg]));
    }
    if (!marks) body.appendChild(el('p', { cls: 'note', text: 'No timed exits in this view.' }));
    return marks;
  };

  // ---- exits/s over the trace, per VM and vCPU ----
  ES.render.rate = function (body, s) {
    const d = s.data, binS = d.bin_ns / 1e9, nb = Math.max(1, d.bins);
    const rows = d.threads.filter(threadShown).map((t) => {
      const v = new Array(nb).fill(0);
      for (const [reason, bins] of Object.entries(t.reasons)) {
        if (!reasonShown(reason)) continue;
        bins.forEach((c, i) => { v[i] += c; });
      }
      return { t, v };
    }).filter((r) => r.v.some((x) => x > 0));
    rows.sort((a, b) => (a.t.vm < b.t.vm ? -1 : a.t.vm > b.t.vm ? 1 : a.t.tid - b.t.tid));
    if (!rows.length) { body.appendChild(el('p', { cls: 'note', text: 'No exits in this view.' })); return 0; }
    const total = new Array(nb).fill(0);
    for (const r of rows) r.v.forEach((c, i) => { total[i] += c; });
    const L = 190, W = Math.min(1200, Math.max(600, L + nb * 2 + 10)), cw = (W - L - 10) / nb, rh = 14, lineH = 90;
    const H = lineH + 30 + rows.length * rh + 26;
    const svg = sv('svg', { width: W, height: H });
    const maxTot = Math.max(...total) / binS;
    // Total exits/s of the view: a storm stands out as a peak.
    const ly = (r) => lineH - (lineH - 10) * (r / maxTot);
    let pts = '';
    total.forEach((c, i) => { pts += (L + (i + 0.5) * cw).toFixed(1) + ',' + ly(c / binS).toFixed(1) + ' '; });
    svg.appendChild(sv('line', { class: 'axis', x1: L, y1: lineH, x2: W - 10, y2: lineH }));
    svg.appendChild(sv('polyline', { class: 'line', points: pts }));
    svg.appendChild(txt(L - 6, 14, fmtRate(maxTot), { 'text-anchor': 'end' }));
    svg.appendChild(txt(L - 6, lineH, 'all shown', { 'text-anchor': 'end' }));
    const peak = total.indexOf(Math.max(...total));
    let marks = 1;
    total.forEach((c, i) => {
      if (!c) return;
      svg.appendChild(sv('rect', { x: L + i * cw, y: 4, width: cw, height: lineH - 4, fill: 'transparent' },
        ES.fmtDur(i * d.bin_ns) + ' – ' + ES.fmtDur((i + 1) * d.bin_ns) + ': ' + fmtRate(c / binS) + ' (' + fmtInt(c) + ' exits)'));
    });
    let maxCell = 0;
    for (const r of rows) for (const c of r.v) maxCell = Math.max(maxCell, c);
    const y0 = lineH + 24;
    rows.forEach((r, j) => {
      const y = y0 + j * rh;
      svg.appendChild(txt(L - 6, y + rh - 3, r.t.vm + ' ' + r.t.vcpu, { 'text-anchor': 'end' }));
      r.v.forEach((c, i) => {
        if (!c) return;
        const f = Math.log(1 + c) / Math.log(1 + maxCell);  // log colour: quiet bins stay visible
        const light = Math.round(92 - 62 * f);
        svg.appendChild(sv('rect', { class: 'cell', x: L + i * cw, y, width: Math.max(cw, 1), height: rh - 1, fill: 'hsl(' + Math.round(220 - 220 * f) + ',75%,' + light + '%)' },
          r.t.vm + ' ' + r.t.vcpu + ' at ' + ES.fmtDur(i * d.bin_ns) + ': ' + fmtRate(c / binS) + ' (' + fmtInt(c) + ' exits)'));
        marks++;
      });
    });
    const ya = y0 + rows.length * rh + 14;
    for (let k = 0; k <= 4; ++k) {
      const i = Math.round((k * nb) / 4);
      svg.appendChild(txt(L + i * cw, ya, ES.fmtDur(i * d.bin_ns), { 'text-anchor': k === 0 ? 'start' : k === 4 ? 'end' : 'middle' }));
    }
    body.appendChild(el('p', { cls: 'note', text: 'Peak: ' + fmtRate(total[peak] / binS) + ' at ' + ES.fmtDur(peak * d.bin_ns) + ' (bin ' + d.bin_ns_text + ').' }));
    body.appendChild(svg);
    return marks;
  };

  // ---- flame graph: reason, then guest function; weight handling time or exits ----
  let flameWeight = 'time', flameZoom = '';
  ES.render.flame = function (body, s) {
    const d = s.data;
    const tree = new Map();  // reason -> {exits, time, frames: Map(frame -> {exits, time})}
    let allE = 0, allT = 0;
    for (const [vm, vcpu, reason, frame, exits, ns] of d.rows) {
      if (!reasonShown(reason)) continue;
      if (filtered()) {
        const ok = threads.some((t) => t.vm === vm && t.vcpu === vcpu && threadShown(t));
        if (!ok) continue;
      }
      if (!tree.has(reason)) tree.set(reason, { exits: 0, time: 0, frames: new Map() });
      const r = tree.get(reason);
      r.exits += exits; r.time += ns; allE += exits; allT += ns;
      const f = r.frames.get(frame) || { exits: 0, time: 0 };
      f.exits += exits; f.time += ns;
      r.frames.set(frame, f);
    }
    const bar = el('div', {}, ['width: ']);
    for (const [w, label] of [['time', 'handling time'], ['exits', 'exits']]) {
      const b = el('button', { cls: flameWeight === w ? 'on' : '', id: 'flame-' + w, text: label });
      b.addEventListener('click', () => { flameWeight = w; drawAll(); });
      bar.appendChild(b);
    }
    if (flameZoom) {
      const b = el('button', { text: 'zoom out' });
      b.addEventListener('click', () => { flameZoom = ''; drawAll(); });
      bar.appendChild(b);
    }
    body.appendChild(bar);
    const wOf = (x) => (flameWeight === 'time' ? x.time : x.exits);
    const describe = (name, x, of) => name + ': ' + fmtInt(x.exits) + ' exits, ' + ES.fmtDur(x.time, d.time_unit) +
      (of ? ' (' + pct((100 * wOf(x)) / Math.max(1, of)) + ')' : '');
    const reasons = [...tree.entries()].filter(([r]) => !flameZoom || r === flameZoom).sort((a, b) => wOf(b[1]) - wOf(a[1]));
    const rootW = reasons.reduce((a, [, x]) => a + wOf(x), 0);
    if (!rootW) { body.appendChild(el('p', { cls: 'note', text: 'No timed exits in this view.' })); return 0; }
    const W = 1100, rh = 20, H = 3 * rh + 6;
    const svg = sv('svg', { width: W, height: H });
    const node = (x, y, w, label, title, fill, onclick) => {
      const g = sv('g', { class: 'node' });
      g.appendChild(sv('rect', { x, y, width: Math.max(w - 1, 0.5), height: rh - 2, fill, rx: 2 }, title));
      if (w > 40) {
        const clip = label.length * 6.2 > w - 6 ? label.slice(0, Math.max(1, Math.floor((w - 6) / 6.2) - 1)) + '…' : label;
        g.appendChild(txt(x + 3, y + rh - 7, clip, { 'pointer-events': 'none' }));
      }
      if (onclick) { g.style.cursor = 'pointer'; g.addEventListener('click', onclick); }
      svg.appendChild(g);
    };
    const root = { exits: reasons.reduce((a, [, x]) => a + x.exits, 0), time: reasons.reduce((a, [, x]) => a + x.time, 0) };
    node(0, 0, W, flameZoom ? flameZoom + ' (click "zoom out")' : 'all exits', describe('all', root, 0), '#c9ced8');
    let x = 0, marks = 1;
    const hue = (i) => 'hsl(' + ((i * 47) % 360) + ',60%,72%)';
    reasons.forEach(([name, r], i) => {
      const w = (W * wOf(r)) / rootW;
      node(x, rh, w, name, describe(name, r, rootW), hue(i), () => { flameZoom = flameZoom ? '' : name; drawAll(); });
      let fx = x;
      for (const [frame, f] of [...r.frames.entries()].sort((a, b) => wOf(b[1]) - wOf(a[1]))) {
        const fw = (W * wOf(f)) / rootW;
        node(fx, 2 * rh, fw, frame, describe(frame, f, wOf(r)) + ' of ' + name, 'hsl(' + ((i * 47) % 360) + ',45%,84%)');
        fx += fw;
        marks++;
      }
      x += w;
      marks++;
    });
    svg.setAttribute('data-check', 'flame|total');
    svg.setAttribute('data-exits', root.exits);
    svg.setAttribute('data-time', root.time);
    body.appendChild(svg);
    return marks;
  };

  // ---- detail breakdowns ----
  const HEX_KINDS = new Set(['msr', 'mmio', 'fast_mmio', 'ept', 'pio', 'io_exit', 'apic']);
  ES.render.details = function (body, s) {
    const byKind = new Map();
    for (const r of s.data.details) {
      if (!byKind.has(r.kind)) byKind.set(r.kind, []);
      byKind.get(r.kind).push(r);
    }
    let marks = 0;
    const maxRows = 40;
    for (const [kind, rows] of byKind) {
      body.appendChild(el('h3', { text: kind + ' — ' + rows.length + ' keys' }));
      const tb = el('table', {}, [el('tr', {}, [['key', 'l'], ['name', 'l'], ['access', 'l'], ['size', ''], ['exits', ''], ['exit time', ''], ['failed', '']]
        .map(([h, c]) => el('th', { cls: c, text: h })))]);
      for (const r of rows.slice(0, maxRows)) {
        const key = r.key === null ? '–' : HEX_KINDS.has(kind) ? '0x' + Number(r.key).toString(16) : String(r.key);
        tb.appendChild(el('tr', {}, [el('td', { cls: 'l', text: key }), el('td', { cls: 'l', text: r.name }), el('td', { cls: 'l', text: r.access }),
          el('td', { text: r.size || '' }), el('td', { text: fmtInt(r.count), 'data-check': 'detail|' + kind + '|' + r.key + '|' + r.name + '|' + r.access, 'data-value': r.count }),
          el('td', { text: r.exit_ns_text }), el('td', { text: r.failed ? fmtInt(r.failed) : '' })]));
        marks++;
      }
      body.appendChild(tb);
      if (rows.length > maxRows) body.appendChild(el('p', { cls: 'note', text: (rows.length - maxRows) + ' more keys: see exitscope report --json' }));
    }
    if (s.data.details_hidden) body.appendChild(el('p', { cls: 'note', text: s.data.details_hidden + ' rows hidden' }));
    if (!marks) body.appendChild(el('p', { cls: 'note', text: 'No detail events or exit qualifications in this trace.' }));
    return marks || 1;
  };

  // ---- diff: before -> after ----
  function side(c, key) { return c && c[key] !== undefined && c[key] !== null ? c[key] : null; }
  function changeText(b, a) {
    if (b === null || a === null) return '–';
    if (b === 0) return a === 0 ? '0 %' : 'new';
    const p = 100 * (a - b) / b;
    return (p > 0 ? '+' : '') + p.toFixed(1) + ' %';
  }
  ES.render.diff = function (body, s) {
    const d = s.data;
    body.appendChild(el('p', { cls: 'verdict', text: d.verdict, 'data-check': 'diff-verdict', 'data-value': d.verdict }));
    const sides = el('table', {}, [el('tr', {}, ['', 'before', 'after'].map((h, i) => el('th', { cls: i ? '' : 'l', text: h })))]);
    for (const [label, key] of [['source', 'source'], ['format', 'format'], ['duration', 'duration_ns_text'],
      ['vCPU threads', 'vcpu_threads'], ['exits', 'reported_exits'], ['selection', 'selection'], ['partial', 'partial']]) {
      sides.appendChild(el('tr', {}, [el('td', { cls: 'l', text: label }), el('td', { text: String(side(d.before, key) ?? '–') }),
        el('td', { text: String(side(d.after, key) ?? '–') })]));
    }
    body.appendChild(sides);
    body.appendChild(el('p', { cls: 'note', text: 'compared ' + d.normalize + (d.normalize_why ? ' (' + d.normalize_why + ')' : '') +
      '; counts: ' + d.tests.count + '; latency: ' + d.tests.latency }));
    let marks = 0;
    const rows = [].concat(d.reasons || [], d.details || []).filter(r => !view.reason || r.kind !== 'reason' || r.key === view.reason);
    const tb = el('table', {}, [el('tr', {}, [['', 'l'], ['kind', 'l'], ['key', 'l'], ['exits before', ''], ['after', ''], ['change', ''],
      ['p50 before', ''], ['after', ''], ['p99 before', ''], ['after', ''], ['VMM share', '']].map(([h, c]) => el('th', { cls: c, text: h })))]);
    for (const r of rows.slice(0, 200)) {
      const b = r.before || {}, a = r.after || {};
      const vmm = (b.vmm_share_pct === undefined || b.vmm_share_pct === null) && (a.vmm_share_pct === undefined || a.vmm_share_pct === null) ? '?' :
        (b.vmm_share_pct === null || b.vmm_share_pct === undefined ? '?' : pct(b.vmm_share_pct)) + ' → ' + (a.vmm_share_pct === null || a.vmm_share_pct === undefined ? '?' : pct(a.vmm_share_pct));
      tb.appendChild(el('tr', {}, [el('td', { text: r.beyond_noise ? '●' : '' }), el('td', { cls: 'l', text: r.kind }),
        el('td', { cls: 'l', text: (r.name ? r.key + ' ' + r.name : String(r.key)) + (r.access ? ' (' + r.access + ')' : '') }),
        el('td', { text: fmtInt(b.count || 0), 'data-check': 'diff|' + r.kind + '|' + r.key + '|' + (r.access || '') + '|before', 'data-value': b.count || 0 }),
        el('td', { text: fmtInt(a.count || 0), 'data-check': 'diff|' + r.kind + '|' + r.key + '|' + (r.access || '') + '|after', 'data-value': a.count || 0 }),
        el('td', { text: changeText(side(b, 'per_unit'), side(a, 'per_unit')) }),
        el('td', { text: b.p50_ns_text || '–' }), el('td', { text: a.p50_ns_text || '–' }),
        el('td', { text: b.p99_ns_text || '–' }), el('td', { text: a.p99_ns_text || '–' }), el('td', { text: vmm })]));
      marks++;
    }
    body.appendChild(tb);
    if (rows.length > 200) body.appendChild(el('p', { cls: 'note', text: (rows.length - 200) + ' more rows: see exitscope diff --json' }));
    if ((d.thresholds || []).length) {
      const ul = el('ul');
      for (const t of d.thresholds) ul.appendChild(el('li', { text: (t.tripped ? 'TRIPPED: ' : 'ok: ') + (t.text || t.expression || JSON.stringify(t)) }));
      body.appendChild(ul);
    }
    return marks || 1;
  };

  // ---- advise's findings ----
  ES.render.findings = function (body, s) {
    const a = s.data;
    body.appendChild(el('p', {}, [fmtInt(a.exits) + ' exits (' + fmtInt(a.timed_exits) + ' timed), ' +
      (a.exit_time_ns_text || 'no timed exits') + ' of exit time' + (a.partial ? ' — PARTIAL: confidence lowered a step' : '')]));
    let marks = 0;
    for (const f of a.findings) {
      const card = el('div', { cls: 'finding' + (f.minor ? ' minor' : ''), 'data-check': 'finding|' + f.id, 'data-value': f.saving_ns });
      card.appendChild(el('div', {}, [el('b', { text: (f.rank ? '#' + f.rank + ' ' : '') + f.title }), ' (' + f.id + ')']));
      const saving = f.saving_ns === null ? 'unpriced' : f.saving_ns_text + (f.saving_share === null ? '' : ' = ' + pct(100 * f.saving_share) + ' of exit time');
      card.appendChild(el('div', {}, [el('span', { cls: 'saving', text: 'saving: ' + saving }),
        ' — removes ' + f.removes + '; ' + fmtInt(f.exits) + ' exits' + (f.time_ns_text ? ', ' + f.time_ns_text : '') +
        (f.share === null ? '' : ' (' + pct(100 * f.share) + ' of exit time)') + '; confidence ' + f.confidence]));
      if (f.saving_how) card.appendChild(el("div", { cls: "note", text: "priced " + (f.priced_from ? "from the " + f.priced_from + ": " : "") + f.saving_how }));
      card.appendChild(el('div', {}, ['fix: ' + f.fix]));
      const ev = Object.entries(f.evidence || {});
      if (ev.length) {
        const kv = el('table', { cls: 'kv' });
        for (const [k, v] of ev) kv.appendChild(el('tr', {}, [el('td', { text: k }), el('td', { text: v })]));
        card.appendChild(kv);
      }
      if ((f.rips || []).length) {
        const tb = el('table', {}, [el('tr', {}, ['RIP', 'symbol', 'exits', 'time'].map((h, i) => el('th', { cls: i < 2 ? 'l' : '', text: h })))]);
        for (const r of f.rips) tb.appendChild(el('tr', {}, [el('td', { cls: 'l', text: r.rip }), el('td', { cls: 'l', text: r.symbol }),
          el('td', { text: fmtInt(r.exits) }), el('td', { text: r.time_ns_text || '–' })]));
        card.appendChild(tb);
      }
      body.appendChild(card);
      marks++;
    }
    if (!a.findings.length) body.appendChild(el('p', { text: 'No known exit-cost pattern found.' }));
    if ((a.not_flagged || []).length) {
      const det = el('details', {}, [el('summary', { text: a.not_flagged.length + ' rules checked and not flagged' })]);
      const ul = el('ul');
      for (const n of a.not_flagged) ul.appendChild(el('li', { text: n.id + ': ' + n.reason }));
      det.appendChild(ul);
      body.appendChild(det);
    }
    return marks || 1;
  };

  // ---- page ----
  function drawAll() {
    for (const s of data.sections) {
      const section = document.getElementById(s.id);
      const body = section.querySelector('.body');
      body.textContent = '';
      const render = ES.render[s.kind];
      if (!render) { console.error('exitscope: no renderer for section kind ' + s.kind); continue; }
      try {
        window.exitscopeRendered[s.id] = render(body, s, view);
      } catch (e) {
        console.error('exitscope: section ' + s.id + ' failed: ' + (e && e.stack ? e.stack : e));
        window.exitscopeRendered[s.id] = -1;
      }
    }
    window.exitscopeView = Object.assign({}, view);
  }
  const toc = document.getElementById('toc');
  for (const s of data.sections) toc.appendChild(el('a', { href: '#' + s.id, text: s.title }));
  buildFilters();
  drawAll();
  window.exitscopeReady = true;
})();
