// console.js -- the sluice web console: four pages over the admin API
// (docs/admin.md), the same routes sluicectl uses. No framework, no build
// step, nothing fetched from elsewhere.
//
// Rules this file keeps:
//  - Every value from the gateway reaches the page as text (textContent,
//    text nodes, SVG attributes): message bodies are user data, and the
//    Content-Security-Policy forbids inline script anyway.
//  - Every write sends the session's CSRF token (X-Sluice-CSRF), fetched
//    from GET /console/session; a 401 anywhere means the session ended, so
//    the browser goes back to the login page.
//  - One refresh loop; each tick fetches what the open page shows, and the
//    queue list always, so the queue charts cover the time the console has
//    been open, whichever page was showing.
'use strict';

const REFRESH_MS = 2000;
const WINDOW_MS = 10 * 60 * 1000; // what a chart spans
const HISTORY = WINDOW_MS / REFRESH_MS; // samples kept per series
const TASK_REFRESH_MS = 500;
const TERMINAL = new Set(['COMPLETED', 'CANCELLED', 'FAILED']);

const state = {
  csrf: null,
  page: 'overview',
  queues: [], // the last /api/queues answer
  history: new Map(), // series name -> [{t, v...}]
  prevMetrics: null, // {t, requests: Map, throttled: Map}
  prevPartitions: null, // {t, rows: Map}
  dlq: null, // {tenant, name} of the open dead-letter queue
  task: null, // the redrive task being watched
  taskTimer: null,
  peekSeq: 0,
  running: new Set(), // "T/Q" of the sources of running redrives
};

// ---- small DOM helpers ----------------------------------------------------

const $ = (id) => document.getElementById(id);

// el('td', {class: 'num', data: {field: 'ready'}}, child...): children are
// nodes or strings (always text nodes).
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'class') node.className = v;
    else if (k === 'data') for (const [dk, dv] of Object.entries(v)) node.dataset[dk] = dv;
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function replaceRows(tbody, rows) {
  tbody.replaceChildren(...rows);
}

const fmtInt = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));
const fmtRate = (n) => (n === null ? '–' : n < 10 ? n.toFixed(2) : n.toFixed(0));

function fmtAge(s) {
  if (s === null || s === undefined) return '–';
  if (s > 0 && s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 10 && !Number.isInteger(s)) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${(s / 86400).toFixed(1)} d`;
}

function fmtTime(ms) {
  if (!ms) return '–';
  const d = new Date(ms);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// ---- the API ------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = {};
  if (method !== 'GET') headers['X-Sluice-CSRF'] = state.csrf;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  if (r.status === 401) {
    location.assign('/console/login');
    throw new ApiError(401, 'Unauthorized', 'The session has ended.');
  }
  const text = await r.text();
  const json = (r.headers.get('content-type') || '').startsWith('application/json');
  let data = text;
  if (json && text) data = JSON.parse(text);
  if (!r.ok) {
    const message = json && data && data.message ? data.message : `${r.status} ${r.statusText}`;
    throw new ApiError(r.status, json && data ? data.error : '', `${method} ${path}: ${message}`);
  }
  return data;
}

// Two kinds of trouble share the banner: an action that failed (it stays
// until the next action succeeds, so a refresh does not wipe it before it
// is read) and a refresh that failed (until one succeeds).
const trouble = { action: null, refresh: null };

function drawTrouble() {
  const e = trouble.action || trouble.refresh;
  const banner = $('banner');
  banner.textContent = e ? e.message : '';
  banner.hidden = !e;
}

function showError(e) {
  trouble.action = e;
  drawTrouble();
}

// ---- history and charts ------------------------------------------------------------

function record(name, sample) {
  let series = state.history.get(name);
  if (!series) {
    series = [];
    state.history.set(name, series);
  }
  series.push({ t: Date.now(), ...sample });
  const old = Date.now() - WINDOW_MS;
  let drop = Math.max(0, series.length - HISTORY);
  while (drop < series.length && series[drop].t < old) drop++;
  if (drop > 0) series.splice(0, drop);
}

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

// A small line chart of the fields of one history series over the last
// WINDOW_MS (now at the right edge; a gap where the series was not
// sampled), all on one scale from 0 to the largest value seen, with that
// maximum labelled.
function sparkline(name, fields, width = 180, height = 36) {
  const series = state.history.get(name) || [];
  const root = svg('svg', { class: 'spark', width, height, viewBox: `0 0 ${width} ${height}` });
  root.append(svg('line', { class: 'axis', x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5 }));
  let max = 0;
  for (const s of series) for (const f of fields) max = Math.max(max, s[f] || 0);
  const scale = max > 0 ? (height - 4) / max : 0;
  const now = Date.now();
  const x = (t) => (width - ((now - t) * width) / WINDOW_MS).toFixed(1);
  const y = (v) => (height - 1 - (v || 0) * scale).toFixed(1);
  // Runs of samples no more than a few refreshes apart are joined.
  const runs = [];
  for (const s of series) {
    const run = runs[runs.length - 1];
    if (run && s.t - run[run.length - 1].t <= 3 * REFRESH_MS) run.push(s);
    else runs.push([s]);
  }
  for (const f of fields) {
    for (const run of runs) {
      if (run.length < 2) continue;
      root.append(svg('polyline', { class: f, points: run.map((s) => `${x(s.t)},${y(s[f])}`).join(' ') }));
    }
    // The latest value as a dot: in a console opened moments ago the line
    // is still a few pixels long.
    const last = series[series.length - 1];
    if (last) root.append(svg('circle', { class: f, cx: x(last.t), cy: y(last[f]), r: 1.8 }));
  }
  const label = svg('text', { x: 2, y: 9 });
  label.textContent = max > 0 ? `max ${fmtRate(max)}` : '';
  root.append(label);
  const title = svg('title', {});
  title.textContent = `${series.length} samples, ${fields.join(', ')}`;
  root.append(title);
  return root;
}

// The gateway keeps every queue's last minutes (GET /console/history):
// the charts start from them instead of from an empty page.
async function loadHistory() {
  const data = await api('GET', '/console/history');
  for (const [key, h] of Object.entries(data.queues)) {
    const series = h.t_ms.map((t, i) => ({ t, ready: h.ready[i], inflight: h.inflight[i], delayed: h.delayed[i] }));
    state.history.set(`queue:${key}`, series.filter((s) => s.t > Date.now() - WINDOW_MS));
  }
}

// ---- /metrics -----------------------------------------------------------------------

// Sums each metric named in wanted by its tenant label: {name: Map(tenant -> value)}.
function metricsByTenant(text, wanted) {
  const out = {};
  for (const w of wanted) out[w] = new Map();
  const labelRe = /([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g;
  for (const line of text.split('\n')) {
    if (line === '' || line[0] === '#') continue;
    const brace = line.indexOf('{');
    const name = brace < 0 ? line.slice(0, line.indexOf(' ')) : line.slice(0, brace);
    if (!(name in out)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    let tenant = '';
    for (const m of line.slice(brace, line.lastIndexOf('}')).matchAll(labelRe)) {
      if (m[1] === 'tenant') tenant = m[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    out[name].set(tenant, (out[name].get(tenant) || 0) + value);
  }
  return out;
}

function ratePerSecond(now, prev, tenant, key) {
  if (!prev) return null;
  const dt = (now.t - prev.t) / 1000;
  const a = now[key].get(tenant);
  const b = prev[key].get(tenant) || 0;
  if (dt <= 0 || a === undefined) return dt > 0 ? 0 : null;
  return Math.max(0, (a - b) / dt);
}

// ---- Overview -------------------------------------------------------------------------

async function refreshOverview() {
  const [tenants, metrics] = await Promise.all([api('GET', '/tenants'), api('GET', '/metrics')]);
  const m = metricsByTenant(metrics, ['sluice_requests_total', 'sluice_throttled_requests_total',
    'sluice_first_receive_age_seconds_sum', 'sluice_first_receive_age_seconds_count']);
  const now = {
    t: Date.now(),
    requests: m.sluice_requests_total,
    throttled: m.sluice_throttled_requests_total,
    ageSum: m.sluice_first_receive_age_seconds_sum,
    ageCount: m.sluice_first_receive_age_seconds_count,
  };
  const prev = state.prevMetrics;
  state.prevMetrics = now;
  const rows = tenants.tenants.map((t) => {
    const rate = ratePerSecond(now, prev, t.name, 'requests');
    const throttled = ratePerSecond(now, prev, t.name, 'throttled');
    record(`tenant:${t.name}`, { rate: rate || 0, throttled: throttled || 0 });
    // AgeOfFirstAttempt: the mean age at first receive of the messages
    // first received since the last refresh (the histogram's sum / count).
    const firsts = prev ? (now.ageCount.get(t.name) || 0) - (prev.ageCount.get(t.name) || 0) : 0;
    const firstAge = firsts > 0
      ? ((now.ageSum.get(t.name) || 0) - (prev.ageSum.get(t.name) || 0)) / firsts : null;
    const tokens = t.usage.tokens_available;
    const fill = t.limits.burst > 0 ? Math.min(1, tokens / t.limits.burst) : 0;
    const meter = el('span', { class: fill < 0.1 ? 'meter low' : 'meter' }, el('span'));
    meter.firstChild.style.width = `${(fill * 100).toFixed(0)}%`;
    return el('tr', { data: { tenant: t.name } },
      el('td', { class: 'mono' }, t.name),
      el('td', { class: 'mono' }, (t.partitions || []).join(', ')),
      el('td', { class: 'num', data: { field: 'rate' } }, fmtRate(rate)),
      el('td', { class: 'num', data: { field: 'throttled' } },
        throttled > 0 ? el('span', { class: 'badge bad' }, fmtRate(throttled)) : fmtRate(throttled)),
      el('td', {}, meter, `${fmtInt(tokens)} / ${fmtInt(t.limits.burst)}`),
      el('td', { class: 'num', data: { field: 'backlog' } }, fmtInt(t.usage.backlog)),
      el('td', { class: 'num', data: { field: 'inflight' } }, fmtInt(t.usage.inflight)),
      el('td', { class: 'num' }, fmtInt(t.usage.long_polls)),
      el('td', { class: 'num', title: 'mean over the messages first received since the last refresh' },
        firstAge === null ? '–' : fmtAge(firstAge)),
      el('td', {}, t.on_excess),
      el('td', {}, sparkline(`tenant:${t.name}`, ['rate', 'throttled'])));
  });
  replaceRows($('tenants').tBodies[0], rows);
}

// ---- Queues -------------------------------------------------------------------------------

async function fetchQueues() {
  const data = await api('GET', '/api/queues');
  state.queues = data.queues;
  for (const q of state.queues) {
    record(`queue:${q.tenant}/${q.name}`, { ready: q.ready, inflight: q.inflight, delayed: q.delayed });
  }
}

function pausedText(p) {
  if (!p || (!p.enqueue && !p.dequeue)) return null;
  if (p.enqueue && p.dequeue) return 'paused';
  return p.enqueue ? 'sends paused' : 'receives paused';
}

async function pauseOrResume(q, pause) {
  try {
    await api('POST', `/api/queues/${encodeURIComponent(q.tenant)}/${encodeURIComponent(q.name)}/${pause ? 'pause' : 'resume'}`,
      { enqueue: true, dequeue: true });
    await refresh();
  } catch (e) {
    showError(e);
  }
}

function renderQueues() {
  const select = $('queues-tenant');
  const tenants = [...new Set(state.queues.map((q) => q.tenant))].sort();
  const have = [...select.options].slice(1).map((o) => o.value);
  if (have.join('\n') !== tenants.join('\n')) {
    const keep = select.value;
    select.replaceChildren(el('option', { value: '' }, 'all'), ...tenants.map((t) => el('option', { value: t }, t)));
    select.value = tenants.includes(keep) ? keep : '';
  }
  const rows = state.queues
    .filter((q) => !select.value || q.tenant === select.value)
    .map((q) => {
      const key = `${q.tenant}/${q.name}`;
      const paused = pausedText(q.paused);
      const badges = [];
      if (q.fifo) badges.push(el('span', { class: 'badge' }, 'FIFO'));
      if (q.dlq_of && q.dlq_of.length) badges.push(el('span', { class: 'badge warn' }, 'DLQ'));
      if (paused) badges.push(el('span', { class: 'badge bad' }, paused));
      const isPaused = paused !== null;
      return el('tr', { data: { queue: key } },
        el('td', { class: 'mono' }, key),
        el('td', { class: 'num', data: { field: 'ready' } }, fmtInt(q.ready)),
        el('td', { class: 'num', data: { field: 'inflight' } }, fmtInt(q.inflight)),
        el('td', { class: 'num', data: { field: 'delayed' } }, fmtInt(q.delayed)),
        el('td', { class: 'num', data: { field: 'overflow' } }, fmtInt(q.overflow)),
        el('td', { class: 'num' }, fmtAge(q.oldest_age_s)),
        el('td', { class: 'num', data: { field: 'age_of_first_attempt' }, title: q.age_of_first_attempt_s ? 'the latest message\'s age at its first receive' : 'no first receive since the gateway started' },
          q.age_of_first_attempt_s ? fmtAge(q.age_of_first_attempt_s) : '–'),
        el('td', {}, ...badges),
        el('td', {}, sparkline(`queue:${key}`, ['ready', 'inflight', 'delayed'])),
        el('td', {}, el('button', {
          type: 'button', class: 'small quiet', on: { click: () => pauseOrResume(q, !isPaused) },
        }, isPaused ? 'Resume' : 'Pause')));
    });
  replaceRows($('queues').tBodies[0], rows);
  const pick = $('filter-queue');
  const names = state.queues.map((q) => `${q.tenant}/${q.name}`);
  if ([...pick.options].map((o) => o.value).join('\n') !== names.join('\n')) {
    const keep = pick.value;
    pick.replaceChildren(...names.map((n) => el('option', { value: n }, n)));
    if (names.includes(keep)) pick.value = keep;
  }
}

// The messages of the chosen queue carrying one attribute value, ready
// and in flight (GET /api/queues/T/Q?filter=KEY=VALUE).
async function countFiltered() {
  const key = $('filter-queue').value;
  const q = state.queues.find((o) => `${o.tenant}/${o.name}` === key);
  if (!q) return;
  try {
    const data = await api('GET', `${queuePath(q.tenant, q.name)}?filter=${encodeURIComponent($('filter-pair').value)}`);
    $('filter-result').textContent =
      `${data.filtered.filter}: ${fmtInt(data.filtered.ready)} ready, ${fmtInt(data.filtered.inflight)} in flight`;
    showError(null);
  } catch (e) {
    $('filter-result').textContent = '';
    showError(e);
  }
}

// ---- Dead-letter queues ----------------------------------------------------------------------

const queuePath = (tenant, name) => `/api/queues/${encodeURIComponent(tenant)}/${encodeURIComponent(name)}`;

// The DLQ page also marks the queues a redrive is running on.
async function refreshDlqs() {
  const data = await api('GET', '/api/redrives');
  state.running = new Set(data.tasks.filter((t) => !TERMINAL.has(t.status)).map((t) => t.source));
  renderDlqs();
}

function renderDlqs() {
  const dlqs = state.queues.filter((q) => q.dlq_of && q.dlq_of.length);
  $('dlq-none').hidden = dlqs.length > 0;
  const rows = dlqs.map((q) => {
    const key = `${q.tenant}/${q.name}`;
    const open = state.dlq && state.dlq.tenant === q.tenant && state.dlq.name === q.name;
    return el('tr', { data: { queue: key }, class: open ? 'selected' : '' },
      el('td', { class: 'mono' }, key,
        state.running.has(key) ? el('span', { class: 'badge warn', title: 'a redrive is running' }, 'redriving') : null),
      el('td', { class: 'mono' }, q.dlq_of.join(', ')),
      el('td', { class: 'num', data: { field: 'ready' } }, fmtInt(q.ready)),
      el('td', { class: 'num', data: { field: 'inflight' } }, fmtInt(q.inflight)),
      el('td', { class: 'num' }, fmtAge(q.oldest_age_s)),
      el('td', {}, el('button', { type: 'button', class: 'small', on: { click: () => openDlq(q) } }, 'Open')));
  });
  replaceRows($('dlqs').tBodies[0], rows);
}

function openDlq(q) {
  state.dlq = { tenant: q.tenant, name: q.name };
  $('dlq-detail').hidden = false;
  $('dlq-name').textContent = `${q.tenant}/${q.name}`;
  $('dlq-sources').textContent = q.dlq_of.join(', ');
  $('purge-expected').textContent = q.name;
  $('purge-confirm').hidden = true;
  $('purge-result').textContent = '';
  replaceRows($('dlq-messages').tBodies[0], []);
  const dest = $('redrive-destination');
  const others = state.queues.filter((o) => o.tenant === q.tenant && o.name !== q.name);
  dest.replaceChildren(
    el('option', { value: '' }, 'the source queue of each message'),
    ...others.map((o) => el('option', { value: `${o.tenant}/${o.name}` }, `${o.tenant}/${o.name}`)));
  watchTask(null);
  renderDlqs();
  // A redrive started elsewhere (sluicectl, an SDK) shows here too.
  api('GET', `/api/redrives?tenant=${encodeURIComponent(q.tenant)}`)
    .then((data) => {
      const running = data.tasks.find((t) => t.source === `${q.tenant}/${q.name}` && !TERMINAL.has(t.status));
      if (running) watchTask(running);
    })
    .catch(showError);
}

function attributeList(attrs, messageAttrs) {
  const n = Object.keys(attrs || {}).length + Object.keys(messageAttrs || {}).length;
  const dl = el('dl');
  for (const [k, v] of Object.entries(attrs || {})) dl.append(el('dt', {}, k), el('dd', {}, v));
  for (const [k, v] of Object.entries(messageAttrs || {})) {
    const value = v.StringValue !== undefined ? v.StringValue : v.BinaryValue !== undefined ? `(binary) ${v.BinaryValue}` : JSON.stringify(v);
    dl.append(el('dt', {}, `${k} (${v.DataType || '?'})`), el('dd', {}, value));
  }
  return el('details', {}, el('summary', {}, `${n} attributes`), dl);
}

// Deletes one peeked message (its ref names the stored row), after the
// browser's own confirmation.
async function deleteMessage(m) {
  if (!state.dlq || !window.confirm(`Delete message ${m.id} from ${state.dlq.name}? This cannot be undone.`)) return;
  try {
    await api('POST', `${queuePath(state.dlq.tenant, state.dlq.name)}/messages/${encodeURIComponent(m.ref)}/delete`);
    await Promise.all([peek(), refresh()]);
  } catch (e) {
    showError(e);
  }
}

async function peek() {
  if (!state.dlq) return;
  const max = $('dlq-peek-max').value;
  // Peeks overlap (a click, a finished redrive, a delete): only the last
  // one started may draw, or an older answer could bring back a message
  // that is gone.
  const seq = ++state.peekSeq;
  try {
    const data = await api('GET', `${queuePath(state.dlq.tenant, state.dlq.name)}/messages?max=${max}`);
    if (seq !== state.peekSeq) return;
    const rows = data.messages.map((m) => el('tr', { data: { message: m.id } },
      el('td', { class: 'mono' }, m.id),
      el('td', { class: 'num', data: { field: 'receive_count' } }, fmtInt(m.receive_count)),
      el('td', {}, fmtTime(m.first_receive_ms)),
      el('td', {}, fmtTime(m.last_receive_ms)),
      el('td', {}, fmtTime(m.sent_ms)),
      el('td', { class: 'body' }, el('pre', { data: { field: 'body' } }, m.body)),
      el('td', {}, attributeList(m.attributes, m.message_attributes)),
      el('td', {}, el('button', {
        type: 'button', class: 'small quiet', on: { click: () => deleteMessage(m) },
      }, 'Delete'))));
    if (rows.length === 0) rows.push(el('tr', {}, el('td', { colspan: 8, class: 'help' }, 'No ready messages.')));
    replaceRows($('dlq-messages').tBodies[0], rows);
    showError(null);
  } catch (e) {
    showError(e);
  }
}

function renderTask(t) {
  const box = $('redrive-task');
  box.hidden = !t;
  $('redrive-start').disabled = !!t && !TERMINAL.has(t.status);
  if (!t) return;
  const pct = t.total > 0 ? Math.min(100, (100 * t.moved) / t.total) : TERMINAL.has(t.status) ? 100 : 0;
  const bar = $('redrive-bar');
  bar.style.width = `${pct.toFixed(1)}%`;
  bar.classList.toggle('done', t.status === 'COMPLETED');
  box.dataset.status = t.status;
  box.dataset.percent = pct.toFixed(0);
  const rate = t.rate ? `${t.rate}/s` : 'unpaced';
  const err = t.error ? ` (${t.error})` : '';
  $('redrive-text').textContent =
    `${t.status}: moved ${fmtInt(t.moved)} of ${fmtInt(t.total)} (${pct.toFixed(0)} %), ${rate}, to ${t.destination || 'the source queues'}${err}`;
  $('redrive-cancel').hidden = TERMINAL.has(t.status);
}

function watchTask(t) {
  clearTimeout(state.taskTimer);
  const finished = state.task && !TERMINAL.has(state.task.status) && t && TERMINAL.has(t.status);
  state.task = t;
  renderTask(t);
  // The messages a peek showed have moved: show what is left, and the
  // counts now rather than at the next tick.
  if (finished) {
    refresh();
    if ($('dlq-messages').tBodies[0].rows.length > 0) peek();
  }
  if (!t || TERMINAL.has(t.status)) return;
  state.taskTimer = setTimeout(async () => {
    try {
      watchTask(await api('GET', `/api/redrives/${encodeURIComponent(t.id)}`));
    } catch (e) {
      showError(e);
      state.taskTimer = setTimeout(() => watchTask(state.task), TASK_REFRESH_MS * 4);
    }
  }, TASK_REFRESH_MS);
}

async function startRedrive() {
  if (!state.dlq) return;
  const destination = $('redrive-destination').value || null;
  const rate = Number($('redrive-rate').value) || 0;
  const body = { source: `${state.dlq.tenant}/${state.dlq.name}`, destination };
  if (rate > 0) body.rate = rate;
  try {
    watchTask(await api('POST', '/api/redrives', body));
    showError(null);
  } catch (e) {
    showError(e);
  }
}

async function cancelRedrive() {
  if (!state.task) return;
  try {
    watchTask(await api('POST', `/api/redrives/${encodeURIComponent(state.task.id)}/cancel`));
  } catch (e) {
    showError(e);
  }
}

async function purge() {
  if (!state.dlq || $('purge-typed').value !== state.dlq.name) return;
  $('purge-go').disabled = true;
  try {
    const r = await api('POST', `${queuePath(state.dlq.tenant, state.dlq.name)}/purge`);
    $('purge-result').textContent = `Purged ${fmtInt(r.purged)} messages.`;
    $('purge-confirm').hidden = true;
    replaceRows($('dlq-messages').tBodies[0], []);
    showError(null);
    await refresh();
  } catch (e) {
    showError(e);
  }
}

// ---- Partitions ------------------------------------------------------------------------------

async function refreshPartitions() {
  const data = await api('GET', '/api/partitions');
  const now = { t: Date.now(), rows: new Map(data.partitions.map((p) => [p.index, p])) };
  const prev = state.prevPartitions;
  state.prevPartitions = now;
  const rows = data.partitions.map((p) => {
    const before = prev && prev.rows.get(p.index);
    const dt = prev ? (now.t - prev.t) / 1000 : 0;
    const dCommits = before ? p.commits - before.commits : 0;
    const commitsPerS = before && dt > 0 ? dCommits / dt : null;
    // Recent averages from the sums the averages since start imply.
    const recentLatency = dCommits > 0
      ? (p.commit_latency_ms_avg * p.commits - before.commit_latency_ms_avg * before.commits) / dCommits : null;
    const recentBatch = dCommits > 0 ? (p.jobs - before.jobs) / dCommits : null;
    record(`partition:${p.index}`, { ready: p.queued_jobs });
    const ms = (v) => (v === null ? '–' : `${v.toFixed(2)} ms`);
    const num = (v) => (v === null ? '–' : v.toFixed(1));
    return el('tr', { data: { partition: String(p.index) } },
      el('td', { class: 'mono' }, String(p.index)),
      el('td', {}, p.ok ? el('span', { class: 'badge good' }, 'ok') : el('span', { class: 'badge bad' }, 'failed')),
      el('td', { class: 'num', data: { field: 'queued_jobs' } }, fmtInt(p.queued_jobs)),
      el('td', { class: 'num' }, commitsPerS === null ? '–' : fmtRate(commitsPerS)),
      el('td', { class: 'num' }, `${ms(recentLatency)} (${ms(p.commit_latency_ms_avg)})`),
      el('td', { class: 'num' }, `${num(recentBatch)} (${num(p.batch_size_avg)})`),
      el('td', { class: 'num' }, fmtInt(p.timers)),
      el('td', {}, sparkline(`partition:${p.index}`, ['ready'])));
  });
  replaceRows($('partitions').tBodies[0], rows);
  $('cluster-view').hidden = !data.cluster;
  if (data.cluster) await refreshCluster();
}

// A cluster's nodes and Raft groups, as this node sees them.
async function refreshCluster() {
  const data = await api('GET', '/api/cluster');
  const leads = new Map();
  for (const g of data.groups) leads.set(g.leader, (leads.get(g.leader) || 0) + 1);
  const nodes = data.nodes.map((n) => el('tr', { data: { node: String(n.id) } },
    el('td', { class: 'mono' }, `${n.id}${n.self ? ' (this node)' : ''}`),
    el('td', { class: 'mono' }, n.api),
    el('td', { data: { field: 'state' } }, n.reachable
      ? el('span', { class: 'badge good' }, 'reachable')
      : el('span', { class: 'badge bad' }, 'unreachable')),
    el('td', { class: 'num', data: { field: 'leads' } }, fmtInt(leads.get(n.id) || 0))));
  replaceRows($('cluster-nodes').tBodies[0], nodes);
  const groups = data.groups.map((g) => {
    const name = g.group === 'catalog' ? 'catalog' : `partition ${g.partition}`;
    return el('tr', { data: { group: name } },
      el('td', { class: 'mono' }, name),
      el('td', { class: 'mono', data: { field: 'leader' } }, g.leader ? String(g.leader) : 'none'),
      el('td', { class: 'num' }, fmtInt(g.term)),
      el('td', { class: 'num' }, fmtInt(g.commit_index)),
      el('td', { class: 'num' }, fmtInt(g.applied_index)),
      el('td', { class: 'num', data: { field: 'lag' } }, fmtInt(g.lag)),
      el('td', { data: { field: 'quorum' } }, g.no_quorum
        ? el('span', { class: 'badge bad' }, 'lost')
        : el('span', { class: 'badge good' }, 'ok')));
  });
  replaceRows($('cluster-groups').tBodies[0], groups);
}

// ---- the refresh loop and navigation ------------------------------------------------------------

let refreshing = null;

const pageRefresh = {
  overview: refreshOverview,
  queues: renderQueues,
  dlq: refreshDlqs,
  partitions: refreshPartitions,
};

// The queue list and the open page fail apart: a page that does not need
// the queue list still shows when that route fails.
async function refreshOnce() {
  const results = await Promise.allSettled([fetchQueues()]);
  results.push(...(await Promise.allSettled([pageRefresh[state.page]()])));
  const failed = results.find((r) => r.status === 'rejected' && r.reason.status !== 401);
  trouble.refresh = failed ? failed.reason : null;
  drawTrouble();
  if (!failed) $('status').textContent = `updated ${new Date().toLocaleTimeString()}`;
}

// One refresh at a time; a call during one waits for it and runs again.
async function refresh() {
  while (refreshing) await refreshing;
  refreshing = refreshOnce();
  try {
    await refreshing;
  } finally {
    refreshing = null;
  }
}

function showPage() {
  const page = (location.hash || '#overview').slice(1);
  state.page = ['overview', 'queues', 'dlq', 'partitions'].includes(page) ? page : 'overview';
  for (const section of document.querySelectorAll('section.page')) {
    section.hidden = section.id !== `page-${state.page}`;
  }
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', a.dataset.page === state.page);
  }
  refresh();
}

async function logout() {
  try {
    await api('POST', '/console/logout');
  } finally {
    location.assign('/console/login');
  }
}

async function start() {
  const session = await api('GET', '/console/session');
  state.csrf = session.csrf_token;
  await loadHistory().catch(showError);
  $('logout').addEventListener('click', logout);
  $('queues-tenant').addEventListener('change', renderQueues);
  $('filter-count').addEventListener('click', countFiltered);
  $('dlq-peek').addEventListener('click', peek);
  $('redrive-start').addEventListener('click', startRedrive);
  $('redrive-cancel').addEventListener('click', cancelRedrive);
  $('purge-open').addEventListener('click', () => {
    $('purge-confirm').hidden = false;
    $('purge-typed').value = '';
    $('purge-go').disabled = true;
    $('purge-typed').focus();
  });
  $('purge-typed').addEventListener('input', () => {
    $('purge-go').disabled = !state.dlq || $('purge-typed').value !== state.dlq.name;
  });
  $('purge-go').addEventListener('click', purge);
  $('purge-cancel').addEventListener('click', () => { $('purge-confirm').hidden = true; });
  window.addEventListener('hashchange', showPage);
  showPage();
  setInterval(refresh, REFRESH_MS);
}

start().catch(showError);
