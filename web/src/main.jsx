// muster's web portal: one page, hash routes, every view live from the
// event stream. Values from the API are rendered as text only (JSX text
// nodes and attributes; never innerHTML).
import { render } from 'preact';
import { useEffect, useMemo, useRef, useState, useCallback } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { api, qs, getToken, setToken, EventStream, ApiError } from './api.js';

// ---- the event bus ---------------------------------------------------------

const listeners = new Set();
let stream = null;
function onEvents(fn) { listeners.add(fn); return () => listeners.delete(fn); }

// Calls fn at most once per `ms` after matching events (and once at start).
function useLive(fn, deps, match, ms = 700) {
  const timer = useRef(null);
  useEffect(() => {
    fn();
    const off = onEvents((kind, ev) => {
      if (match && !match(kind, ev)) return;
      if (timer.current) return;
      timer.current = setTimeout(() => { timer.current = null; fn(); }, ms);
    });
    return () => { off(); clearTimeout(timer.current); timer.current = null; };
  }, deps);
}

// ---- routing ------------------------------------------------------------------

function parseHash() {
  const h = location.hash.replace(/^#\/?/, '');
  const [path, query] = h.split('?');
  const parts = path.split('/').filter(Boolean);
  return { view: parts[0] || 'queue', arg: parts[1], query: new URLSearchParams(query || '') };
}
function go(path) { location.hash = '#/' + path; }

function useRoute() {
  const [r, setR] = useState(parseHash());
  useEffect(() => {
    const f = () => setR(parseHash());
    addEventListener('hashchange', f);
    return () => removeEventListener('hashchange', f);
  }, []);
  return r;
}

// ---- small pieces ----------------------------------------------------------------

function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? String(s) : d.toLocaleString(undefined, { hour12: false });
}
function Err({ e }) {
  if (!e) return null;
  return <div class="error" role="alert">{e.status ? e.status + ': ' : ''}{e.message}</div>;
}
function State({ s }) { return <span class={'state st-' + String(s || '').toLowerCase()}>{s}</span>; }

// ---- login -------------------------------------------------------------------------

function Login({ onLogin }) {
  const [tok, setTok] = useState('');
  const [err, setErr] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    try {
      const who = await api('GET', '/v1/whoami', undefined, tok.trim());
      setToken(tok.trim());
      onLogin(who);
    } catch (x) {
      setErr(x.status === 401 ? new ApiError(401, { detail: 'that token is not valid (unknown, revoked or expired)' }) : x);
    }
  };
  return (
    <form class="login card" onSubmit={submit}>
      <h1>muster</h1>
      <p>Paste an API token. It stays in this tab only (sessionStorage).</p>
      <label>API token <input id="token" type="password" autocomplete="off" value={tok}
        onInput={e => setTok(e.target.value)} placeholder="mst_..." /></label>
      <button id="login" type="submit" disabled={!tok.trim()}>Sign in</button>
      <Err e={err} />
    </form>
  );
}

// ---- Queue ---------------------------------------------------------------------------

const STATES = ['', 'PENDING', 'STARTING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'PREEMPTED'];

function Queue({ who }) {
  const [f, setF] = useState({ state: '', tenant: '', user: '', label: '' });
  const [applied, setApplied] = useState(f);
  const [cursors, setCursors] = useState(['']);
  const [page, setPage] = useState(null);
  const [err, setErr] = useState(null);
  const [sort, setSort] = useState({ key: 'id', dir: 1 });
  const cursor = cursors[cursors.length - 1];
  const load = useCallback(async () => {
    try {
      setPage(await api('GET', '/v1/jobs' + qs({ ...applied, limit: 50, cursor })));
      setErr(null);
    } catch (e) { setErr(e); }
  }, [applied, cursor]);
  useLive(load, [load], (k, ev) => ev.job_id);
  const items = useMemo(() => {
    const xs = [...((page && page.items) || [])];
    const k = sort.key;
    xs.sort((a, b) => (a[k] === b[k] ? a.id - b.id : (a[k] ?? '') < (b[k] ?? '') ? -1 : 1) * sort.dir);
    // array tasks (jobs with an array_job_id) collapse into their array's first row
    const seen = new Map(), out = [];
    for (const j of xs) {
      if (j.array_job_id) {
        const g = seen.get(j.array_job_id);
        if (g) { g.tasks++; continue; }
        const row = { ...j, tasks: 1 };
        seen.set(j.array_job_id, row);
        out.push(row);
      } else out.push(j);
    }
    return out;
  }, [page, sort]);
  const th = (key, label) => (
    <th class="sortable" onClick={() => setSort(s => ({ key, dir: s.key === key ? -s.dir : 1 }))}>
      {label}{sort.key === key ? (sort.dir > 0 ? ' ▲' : ' ▼') : ''}
    </th>
  );
  const apply = (e) => { e.preventDefault(); setCursors(['']); setApplied({ ...f }); };
  return (
    <section>
      <h2>Queue</h2>
      <form class="filters" onSubmit={apply}>
        <label>State <select id="f-state" value={f.state} onChange={e => setF({ ...f, state: e.target.value })}>
          {STATES.map(s => <option value={s}>{s || 'any'}</option>)}</select></label>
        <label>Tenant <input id="f-tenant" value={f.tenant} onInput={e => setF({ ...f, tenant: e.target.value })} /></label>
        <label>User <input id="f-user" value={f.user} onInput={e => setF({ ...f, user: e.target.value })} /></label>
        <label>Label <input id="f-label" placeholder="key=value" value={f.label} onInput={e => setF({ ...f, label: e.target.value })} /></label>
        <button type="submit">Filter</button>
      </form>
      <Err e={err} />
      <div class="scroll">
        <table id="queue">
          <thead><tr>{th('id', 'Job')}{th('name', 'Name')}{th('state', 'State')}{th('tenant', 'Tenant')}{th('user', 'User')}
            <th>GPUs</th>{th('pending_reason', 'Reason')}{th('planned_start', 'Planned start')}{th('created_at', 'Submitted')}</tr></thead>
          <tbody>
            {items.map(j => (
              <tr class="job-row" data-id={j.id} onClick={() => go('job/' + j.id)}>
                <td><a href={'#/job/' + j.id}>{j.id}</a>{j.tasks > 1 ? <span class="tasks"> +{j.tasks - 1} tasks</span> : null}</td>
                <td>{j.name}</td><td><State s={j.state} /></td><td>{j.tenant}</td><td>{j.user}</td>
                <td>{j.nodes}×{j.gpus_per_node}</td>
                <td title={j.pending_message || ''}>{j.pending_reason || ''}</td>
                <td>{fmtTime(j.planned_start)}</td><td>{fmtTime(j.created_at)}</td>
              </tr>
            ))}
            {page && !items.length ? <tr><td colspan="9" class="empty">No jobs.</td></tr> : null}
          </tbody>
        </table>
      </div>
      <div class="pager">
        <button disabled={cursors.length < 2} onClick={() => setCursors(c => c.slice(0, -1))}>← Newer</button>
        <span>page {cursors.length}</span>
        <button id="next-page" disabled={!page || !page.next_cursor} onClick={() => setCursors(c => [...c, page.next_cursor])}>Older →</button>
      </div>
    </section>
  );
}

// ---- Job -------------------------------------------------------------------------------

function Job({ id, who }) {
  const [job, setJob] = useState(null);
  const [ex, setEx] = useState(null);
  const [log, setLog] = useState(null);
  const [proc, setProc] = useState({ node_rank: 0, local_rank: 0, stream: 'stdout' });
  const [err, setErr] = useState(null);
  const load = useCallback(async () => {
    try {
      const j = await api('GET', '/v1/jobs/' + id);
      setJob(j);
      setErr(null);
      api('GET', '/v1/jobs/' + id + '/explain').then(setEx, () => setEx(null));
      if (j.runs && j.runs.length)
        api('GET', '/v1/jobs/' + id + '/logs' + qs({ ...proc, limit: 65536 })).then(t => setLog(String(t)), e => setLog('(' + e.message + ')'));
    } catch (e) { setErr(e); }
  }, [id, proc]);
  useLive(load, [load], (k, ev) => ev.job_id === Number(id), 300);
  const cancel = async () => {
    try { await api('POST', '/v1/jobs/' + id + '/cancel', {}); load(); } catch (e) { setErr(e); }
  };
  if (!job) return <section><h2>Job {id}</h2><Err e={err} /></section>;
  const live = !['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT'].includes(job.state);
  const spec = { ...job };
  delete spec.runs; delete spec.events;
  return (
    <section>
      <h2>Job {job.id} {job.name ? '· ' + job.name : ''} <State s={job.state} /></h2>
      <Err e={err} />
      {live && who.role !== 'reader' ? <button id="cancel" class="danger" onClick={cancel}>Cancel job</button> : null}
      <div class="grid2">
        <div class="card">
          <h3>Explain</h3>
          {ex ? <dl id="explain">
            <dt>State</dt><dd>{ex.state}</dd>
            <dt>Reason</dt><dd>{ex.pending_reason || '—'}</dd>
            <dt>Planned start</dt><dd id="planned-start">{ex.planned_start ? fmtTime(ex.planned_start) : '—'}</dd>
            <dt>Message</dt><dd>{ex.message || '—'}</dd>
            {(ex.blockers || []).map(b => <><dt>Blocker</dt><dd>{b.kind}: {b.message}</dd></>)}
          </dl> : <p>—</p>}
        </div>
        <div class="card">
          <h3>Spec</h3>
          <pre class="spec">{JSON.stringify(spec, null, 2)}</pre>
        </div>
      </div>
      <div class="card">
        <h3>Runs</h3>
        <div class="scroll"><table id="runs">
          <thead><tr><th>Run</th><th>Attempt</th><th>State</th><th>Nodes (GPUs)</th><th>Started</th><th>Ended</th><th>Exit</th><th>Stop reason</th></tr></thead>
          <tbody>{(job.runs || []).map(r => (
            <tr><td>{r.id}</td><td>{r.attempt}</td><td><State s={r.state} /></td>
              <td>{(r.nodes || []).map(n => n.node + ' [' + (n.gpus || []).join(',') + ']').join('  ')}</td>
              <td>{fmtTime(r.started_at)}</td><td>{fmtTime(r.ended_at)}</td><td>{r.exit_code ?? ''}</td><td>{r.stop_reason || ''}</td></tr>
          ))}</tbody>
        </table></div>
      </div>
      <div class="card">
        <h3>Log</h3>
        <div class="filters">
          <label>Node rank <input type="number" min="0" value={proc.node_rank} onChange={e => setProc({ ...proc, node_rank: Number(e.target.value) })} /></label>
          <label>Local rank <input type="number" min="0" value={proc.local_rank} onChange={e => setProc({ ...proc, local_rank: Number(e.target.value) })} /></label>
          <label>Stream <select value={proc.stream} onChange={e => setProc({ ...proc, stream: e.target.value })}>
            <option>stdout</option><option>stderr</option></select></label>
        </div>
        <pre id="log" class="log">{log === null ? '(no run yet)' : log || '(empty)'}</pre>
      </div>
      <div class="card">
        <h3>Events</h3>
        <ol id="events" class="timeline">{(job.events || []).map(e => (
          <li class="event"><time>{fmtTime(e.at)}</time> <b>{e.kind}</b> {e.reason}</li>
        ))}</ol>
      </div>
    </section>
  );
}

// ---- Submit ---------------------------------------------------------------------------------

function Submit({ who }) {
  const [f, setF] = useState({ name: '', tenant: who.tenant || '', user: who.user || '', nodes: 1, gpus_per_node: 1,
    time_limit: 3600, command: 'echo hello' });
  const [dry, setDry] = useState(null);
  const [err, setErr] = useState(null);
  const body = () => {
    const b = { nodes: Number(f.nodes), gpus_per_node: Number(f.gpus_per_node), time_limit: Number(f.time_limit),
      command: ['/bin/sh', '-c', f.command] };
    if (f.name) b.name = f.name;
    // a tenant token submits as itself: send only what it changed
    if (f.tenant && f.tenant !== who.tenant) b.tenant = f.tenant;
    if (f.user && f.user !== who.user) b.user = f.user;
    return b;
  };
  const dryRun = async () => {
    try { setDry(await api('POST', '/v1/jobs/dry-run', body())); setErr(null); } catch (e) { setErr(e); setDry(null); }
  };
  const submit = async (e) => {
    e.preventDefault();
    try { const j = await api('POST', '/v1/jobs', body()); go('job/' + j.id); } catch (x) { setErr(x); }
  };
  const field = (k, label, type = 'text') => (
    <label>{label} <input id={'s-' + k} type={type} value={f[k]} onInput={e => { setF({ ...f, [k]: e.target.value }); setDry(null); }} /></label>
  );
  return (
    <section>
      <h2>Submit a gang job</h2>
      <form class="card submit" onSubmit={submit}>
        {field('name', 'Name')}{field('tenant', 'Tenant')}{field('user', 'User')}
        {field('nodes', 'Nodes', 'number')}{field('gpus_per_node', 'GPUs per node', 'number')}
        {field('time_limit', 'Time limit (s)', 'number')}
        <label class="wide">Command (sh -c) <input id="s-command" value={f.command} onInput={e => { setF({ ...f, command: e.target.value }); setDry(null); }} /></label>
        <div class="buttons">
          <button id="dry-run" type="button" onClick={dryRun}>Dry run</button>
          <button id="submit" type="submit">Submit</button>
        </div>
        {dry ? <p id="dry-result" class="note">{dry.feasible
          ? 'Would start ' + (dry.planned_start ? 'at ' + fmtTime(dry.planned_start) : 'now') + (dry.message ? ' — ' + dry.message : '')
          : 'Cannot start: ' + (dry.message || dry.pending_reason)}</p> : null}
        <Err e={err} />
      </form>
    </section>
  );
}

// ---- Nodes ------------------------------------------------------------------------------------

function Nodes({ who }) {
  const [nodes, setNodes] = useState(null);
  const [err, setErr] = useState(null);
  const load = useCallback(async () => {
    try {
      let items = [], cursor = '';
      for (let i = 0; i < 20; i++) {
        const p = await api('GET', '/v1/nodes' + qs({ limit: 500, cursor }));
        items = items.concat(p.items || []);
        if (!p.next_cursor) break;
        cursor = p.next_cursor;
      }
      setNodes(items); setErr(null);
    } catch (e) { setErr(e); }
  }, []);
  useLive(load, [load], (k) => k.startsWith('node.') || k.startsWith('run.'), 1000);
  useEffect(() => { const t = setInterval(load, 10000); return () => clearInterval(t); }, [load]);
  const act = async (n, verb) => {
    try { await api('POST', '/v1/nodes/' + encodeURIComponent(n.name) + '/' + verb, verb === 'drain' ? { reason: 'portal' } : {}); load(); }
    catch (e) { setErr(e); }
  };
  return (
    <section>
      <h2>Nodes</h2>
      <Err e={err} />
      <div class="legend"><span class="gpu ok">free</span><span class="gpu busy">allocated</span><span class="gpu bad">unhealthy</span></div>
      <div class="nodes">{(nodes || []).map(n => (
        <div class={'card node node-' + String(n.state).toLowerCase()} data-node={n.name}>
          <div class="node-head"><b>{n.name}</b> <State s={n.state} /> <span class="muted">{n.gpu_model}</span></div>
          {n.drain_reason ? <div class="muted">drain: {n.drain_reason}</div> : null}
          <div class="gpus">{(n.gpus || []).map(g => (
            <span class={'gpu ' + (!g.healthy ? 'bad' : g.allocated ? 'busy' : 'ok')}
              title={'GPU ' + g.index + (g.health_reason ? ': ' + g.health_reason : '') + (g.utilization != null ? ' util ' + g.utilization + '%' : '')}>
              {g.index}{g.health_reason ? ' ' + g.health_reason : ''}</span>
          ))}</div>
          {who.role === 'admin' ? <div class="buttons">
            {n.state === 'DRAINING' || n.state === 'DRAINED'
              ? <button class="resume" onClick={() => act(n, 'resume')}>Resume</button>
              : <button class="drain" onClick={() => act(n, 'drain')}>Drain</button>}
          </div> : null}
        </div>
      ))}</div>
      {nodes && !nodes.length ? <p class="empty">No nodes.</p> : null}
    </section>
  );
}

// ---- Fair share ------------------------------------------------------------------------------

function Fairshare() {
  const [rep, setRep] = useState(null);
  const [err, setErr] = useState(null);
  const load = useCallback(async () => {
    try { setRep(await api('GET', '/v1/fairshare')); setErr(null); } catch (e) { setErr(e); }
  }, []);
  useLive(load, [load], (k) => k.startsWith('run.'), 3000);
  const num = (x, d = 3) => (x == null ? '' : Number(x).toFixed(d));
  return (
    <section>
      <h2>Fair share</h2>
      <Err e={err} />
      <div class="scroll"><table id="fairshare">
        <thead><tr><th>Tenant / user</th><th>Shares</th><th>Norm. shares</th><th>Raw usage</th><th>Norm. usage</th><th>Factor</th></tr></thead>
        <tbody>{((rep && rep.items) || []).slice().sort((a, b) => {
          // users right under their tenant, tenants in tree order
          const ka = (a.path || a.tenant) + (a.user ? '\u0001' + a.user : '');
          const kb = (b.path || b.tenant) + (b.user ? '\u0001' + b.user : '');
          return ka < kb ? -1 : ka > kb ? 1 : 0;
        }).map(r => (
          <tr><td class={'depth-' + Math.min(6, (r.path || '').split('/').length - (r.user ? 0 : 1))}>{r.user ? '· ' + r.user : r.tenant}</td>
            <td>{r.shares}</td><td>{num(r.norm_shares)}</td><td>{num(r.raw_usage, 0)}</td><td>{num(r.norm_usage)}</td><td>{num(r.fairshare)}</td></tr>
        ))}</tbody>
      </table></div>
    </section>
  );
}

// ---- Usage ---------------------------------------------------------------------------------------

function Chart({ series, labels }) {
  const el = useRef(null);
  useEffect(() => {
    if (!el.current || !series.length) return;
    const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
    const opts = {
      width: Math.max(280, el.current.clientWidth - 8), height: 260,
      series: [{}, ...labels.map((l, i) => ({ label: l, stroke: colors[i % colors.length], width: 2 }))],
      axes: [{}, { label: 'GPU-hours', size: 70,
        values: (u, vals) => vals.map(v => (v === 0 ? '0' : Math.abs(v) < 0.01 ? v.toExponential(1) : +v.toFixed(2))) }],
    };
    const u = new uPlot(opts, series, el.current);
    return () => u.destroy();
  }, [series, labels]);
  return <div class="chart" ref={el} />;
}

function Usage() {
  const [groupBy, setGroupBy] = useState('tenant');
  const [span, setSpan] = useState('hour');
  const [data, setData] = useState(null);
  const [err, setErr] = useState(null);
  const load = useCallback(async () => {
    try {
      const step = span === 'hour' ? 3600e3 : 86400e3, n = span === 'hour' ? 24 : 14;
      const end = Math.ceil(Date.now() / step) * step;
      const buckets = [];
      for (let i = n; i > 0; i--) buckets.push([end - i * step, end - (i - 1) * step]);
      const reps = await Promise.all(buckets.map(([a, b]) => api('GET', '/v1/usage' + qs({
        from: new Date(a).toISOString(), to: new Date(b).toISOString(), group_by: groupBy }))));
      const key = r => groupBy === 'user' ? r.tenant + '/' + (r.user || '') : r.tenant;
      const names = [...new Set(reps.flatMap(r => (r.items || []).map(key)))].sort();
      const xs = buckets.map(b => b[1] / 1000);
      const ys = names.map(nm => reps.map(r => { const it = (r.items || []).find(x => key(x) === nm); return it ? it.gpu_hours : 0; }));
      const total = await api('GET', '/v1/usage' + qs({ from: new Date(buckets[0][0]).toISOString(), to: new Date(end).toISOString(), group_by: groupBy }));
      setData({ xs, ys, names, total: total.items || [] });
      setErr(null);
    } catch (e) { setErr(e); }
  }, [groupBy, span]);
  useLive(load, [load], (k) => k === 'run.ended' || k.startsWith('run.'), 5000);
  const series = useMemo(() => (data ? [data.xs, ...data.ys] : []), [data]);
  return (
    <section>
      <h2>Usage</h2>
      <div class="filters">
        <label>By <select value={groupBy} onChange={e => setGroupBy(e.target.value)}><option>tenant</option><option>user</option></select></label>
        <label>Over <select value={span} onChange={e => setSpan(e.target.value)}><option value="hour">24 hours</option><option value="day">14 days</option></select></label>
      </div>
      <Err e={err} />
      {data && data.names.length ? <Chart series={series} labels={data.names} /> : <p class="empty">No usage in this period.</p>}
      <div class="scroll"><table id="usage">
        <thead><tr><th>Tenant</th>{groupBy === 'user' ? <th>User</th> : null}<th>GPU-hours</th><th>Runs</th></tr></thead>
        <tbody>{((data && data.total) || []).map(r => (
          <tr><td>{r.tenant}</td>{groupBy === 'user' ? <td>{r.user}</td> : null}<td>{Number(r.gpu_hours).toFixed(3)}</td><td>{r.runs ?? ''}</td></tr>
        ))}</tbody>
      </table></div>
    </section>
  );
}

// ---- Scheduler ------------------------------------------------------------------------------------

function Scheduler() {
  const [s, setS] = useState(null);
  const [err, setErr] = useState(null);
  const load = useCallback(async () => {
    try { setS(await api('GET', '/v1/scheduler')); setErr(null); } catch (e) { setErr(e); }
  }, []);
  useLive(load, [load], null, 2000);
  useEffect(() => { const t = setInterval(load, 5000); return () => clearInterval(t); }, [load]);
  const lc = (s && s.last_cycle) || {};
  return (
    <section>
      <h2>Scheduler</h2>
      <Err e={err} />
      {s ? <dl id="scheduler" class="card">
        <dt>Leader</dt><dd>{s.leader || '(none)'}</dd>
        <dt>Epoch</dt><dd>{s.epoch}</dd>
        <dt>Lease expires</dt><dd>{fmtTime(s.lease_expires_at)}</dd>
        <dt>Last cycle</dt><dd>{fmtTime(lc.at)}</dd>
        <dt>Cycle time</dt><dd>{lc.duration_ms != null ? Number(lc.duration_ms).toFixed(1) + ' ms' : ''}</dd>
        <dt>Pending</dt><dd>{lc.pending}</dd>
        <dt>Started</dt><dd>{lc.started}</dd>
        <dt>Preempted</dt><dd>{lc.preempted}</dd>
      </dl> : null}
    </section>
  );
}

// ---- the app ---------------------------------------------------------------------------------------

const VIEWS = [['queue', 'Queue'], ['submit', 'Submit'], ['nodes', 'Nodes'], ['fairshare', 'Fair share'],
  ['usage', 'Usage'], ['scheduler', 'Scheduler']];

function App() {
  const [who, setWho] = useState(null);
  const [checking, setChecking] = useState(!!getToken());
  const [live, setLive] = useState('connecting');
  const route = useRoute();
  useEffect(() => {
    if (!getToken()) return;
    api('GET', '/v1/whoami').then(setWho, () => setToken('')).finally(() => setChecking(false));
  }, []);
  useEffect(() => {
    if (!who) return;
    stream = new EventStream((k, ev) => listeners.forEach(f => f(k, ev)), (st) => setLive(st));
    stream.start();
    return () => stream.stop();
  }, [who]);
  if (checking) return <p>…</p>;
  if (!who) return <Login onLogin={setWho} />;
  const logout = () => { setToken(''); setWho(null); };
  let view;
  switch (route.view) {
    case 'job': view = <Job id={route.arg} who={who} key={route.arg} />; break;
    case 'submit': view = <Submit who={who} />; break;
    case 'nodes': view = <Nodes who={who} />; break;
    case 'fairshare': view = <Fairshare />; break;
    case 'usage': view = <Usage />; break;
    case 'scheduler': view = <Scheduler />; break;
    default: view = <Queue who={who} />;
  }
  return (
    <div>
      <header>
        <a class="brand" href="#/queue">muster</a>
        <nav>{VIEWS.map(([k, l]) => <a id={'nav-' + k} class={route.view === k ? 'active' : ''} href={'#/' + k}>{l}</a>)}</nav>
        <span class="who" id="who">{who.role}{who.tenant ? ' · ' + who.tenant : ''}{who.user ? ' · ' + who.user : ''}</span>
        <span id="live" class={'live ' + live} title="event stream">{live === 'live' ? '● live' : '○ ' + live}</span>
        <button class="link" id="logout" onClick={logout}>Sign out</button>
      </header>
      <main>{view}</main>
    </div>
  );
}

render(<App />, document.getElementById('app'));
