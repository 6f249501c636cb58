// The REST API and the event stream, with the token from sessionStorage.
// The token is sent as a bearer header (no cookies, so no CSRF); the event
// stream is read with fetch so that the header can be sent (EventSource
// cannot send one).
const KEY = 'muster.token';

export function getToken() { return sessionStorage.getItem(KEY) || ''; }
export function setToken(t) { if (t) sessionStorage.setItem(KEY, t); else sessionStorage.removeItem(KEY); }

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || ('HTTP ' + status));
    this.status = status;
    this.problem = problem;
  }
}

export async function api(method, path, body, token) {
  const h = { Authorization: 'Bearer ' + (token || getToken()) };
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let r;
  try {
    r = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, { detail: 'cannot reach muster-api: ' + e.message });
  }
  const ct = r.headers.get('content-type') || '';
  const data = ct.includes('json') ? await r.json().catch(() => null) : await r.text();
  if (!r.ok) throw new ApiError(r.status, typeof data === 'object' ? data : { detail: String(data) });
  return data;
}

export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.append(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
}

// One live stream of /v1/events for the whole page: resumes from the last id
// it saw (Last-Event-ID) after an error or an overflow.
export class EventStream {
  constructor(onEvent, onState) {
    this.onEvent = onEvent;
    this.onState = onState || (() => {});
    this.lastId = null;
    this.stopped = false;
    this.ctrl = null;
  }
  start() { this.stopped = false; this.loop(); }
  stop() { this.stopped = true; if (this.ctrl) this.ctrl.abort(); }
  async loop() {
    let delay = 1000;
    while (!this.stopped) {
      try {
        await this.once();
        delay = 1000;
      } catch (e) {
        if (this.stopped) return;
        this.onState('reconnecting', e.message);
      }
      if (this.stopped) return;
      await new Promise(r => setTimeout(r, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }
  async once() {
    this.ctrl = new AbortController();
    const h = { Authorization: 'Bearer ' + getToken(), Accept: 'text/event-stream' };
    if (this.lastId !== null) h['Last-Event-ID'] = String(this.lastId);
    const r = await fetch('/v1/events', { headers: h, signal: this.ctrl.signal, cache: 'no-store' });
    if (!r.ok) {
      const p = await r.json().catch(() => null);
      throw new ApiError(r.status, p);
    }
    this.onState('live');
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const ev = {};
        for (const line of block.split('\n')) {
          if (!line || line[0] === ':') continue;
          const c = line.indexOf(':');
          const k = c < 0 ? line : line.slice(0, c);
          let v = c < 0 ? '' : line.slice(c + 1);
          if (v[0] === ' ') v = v.slice(1);
          ev[k] = ev[k] === undefined ? v : ev[k] + '\n' + v;
        }
        if (ev.id !== undefined) this.lastId = Number(ev.id);
        if (ev.event === 'overflow') { this.onState('reconnecting', 'fell behind; resuming'); continue; }
        if (ev.data !== undefined) {
          try { this.onEvent(ev.event, JSON.parse(ev.data)); } catch (e) { /* a bad message is skipped */ }
        }
      }
    }
    this.onState('reconnecting', 'stream ended');
  }
}
