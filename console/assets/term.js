// A terminal on a process: xterm.js over the attach WebSocket, opened with
// a single-use attach ticket (a browser cannot set the Authorization
// header on a WebSocket; the token never goes in a URL).
//
// Output is written only once its batch is confirmed by the server's
// {"type":"seq"} frame, and a reconnect resumes with after=<that seq>: a
// batch cut by a dropped connection is sent again whole, so every byte
// reaches the screen exactly once.

import { h, replace } from './dom.js';

let xtermModules = null;

// loadXterm imports xterm.js on first use (it is most of the console's
// bytes; pages without a terminal never load it).
async function loadXterm() {
  if (!xtermModules) {
    xtermModules = Promise.all([import('./vendor/xterm.mjs'), import('./vendor/addon-fit.mjs')]);
  }
  const [x, f] = await xtermModules;
  return { Terminal: x.Terminal, FitAddon: f.FitAddon };
}

const utf8 = new TextEncoder();

function b64bytes(s) {
  const bin = atob(s || '');
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export class TermView {
  // api: the API; target: {kind,id}; procId: the process; onEnd: called
  // when the process closed.
  constructor(api, target, procId, onEnd) {
    this.api = api;
    this.target = target;
    this.procId = procId;
    this.onEnd = onEnd || (() => {});
    this.seq = 0;
    this.pending = [];
    this.queue = [];
    this.ws = null;
    this.disposed = false;
    this.closed = false;
    this.backoff = 250;
    this.statusEl = h('span', { class: 'muted', role: 'status', 'aria-live': 'polite' }, 'connecting…');
    this.dimsEl = h('span', { class: 'muted dims', title: 'columns × rows' });
    this.box = h('div', { class: 'term', 'aria-label': `Terminal of process ${procId}`, role: 'region' });
  }

  // element is the panel: a bar with the status and buttons, the screen.
  element() {
    return h('section', { class: 'term-panel', 'aria-label': `Terminal ${this.procId}` },
      h('div', { class: 'term-bar' },
        h('h2', {}, 'Terminal: ', h('code', {}, this.procId)),
        this.statusEl, this.dimsEl,
        h('button', { type: 'button', onclick: () => this.signal('INT'), title: 'Send SIGINT to the process' }, 'Interrupt'),
        h('button', { type: 'button', onclick: () => this.dropConnection(), title: 'Reconnect; no output is lost' }, 'Reconnect'),
        h('button', { type: 'button', onclick: () => this.onDetach && this.onDetach() }, 'Detach')),
      this.box);
  }

  async start() {
    const { Terminal, FitAddon } = await loadXterm();
    if (this.disposed) return;
    this.term = new Terminal({ cursorBlink: true, scrollback: 5000, fontSize: 14, fontFamily: 'ui-monospace, Menlo, monospace' });
    this.fitAddon = new FitAddon();
    this.term.loadAddon(this.fitAddon);
    this.term.open(this.box);
    this.fit();
    this.term.onData((d) => this.sendInput(utf8.encode(d)));
    this.term.onBinary((d) => this.sendInput(Uint8Array.from(d, (c) => c.charCodeAt(0))));
    this.term.onResize(({ cols, rows }) => { this.showDims(); this.control({ type: 'resize', cols, rows }); });
    this.showDims();
    this.resizeObs = new ResizeObserver(() => this.fit());
    this.resizeObs.observe(this.box);
    this.term.focus();
    this.connect();
  }

  fit() {
    if (this.term && this.box.clientWidth > 0) this.fitAddon.fit();
  }

  showDims() {
    this.dimsEl.textContent = `${this.term.cols}×${this.term.rows}`;
  }

  setStatus(s) {
    this.statusEl.textContent = s;
    this.statusEl.dataset.state = s;
  }

  async connect() {
    if (this.disposed || this.closed) return;
    const base = this.api.targetPath(this.target) + '/processes/' + encodeURIComponent(this.procId);
    let ticket;
    try {
      ticket = (await this.api.post(base + '/attach-tickets')).ticket;
    } catch (e) {
      if (e.status === 404) { this.finish('process gone'); return; }
      this.setStatus('cannot attach: ' + (e.text || e.message) + '; retrying');
      this.retry();
      return;
    }
    if (this.disposed) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const q = new URLSearchParams({ ticket, after: String(this.seq) });
    const ws = new WebSocket(`${proto}//${location.host}${base}/attach?${q}`);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    ws.onopen = () => {
      this.backoff = 250;
      this.setStatus('connected');
      if (this.term) this.control({ type: 'resize', cols: this.term.cols, rows: this.term.rows });
      const q2 = this.queue;
      this.queue = [];
      for (const b of q2) ws.send(b);
    };
    ws.onmessage = (ev) => this.onFrame(ev.data);
    ws.onclose = (ev) => {
      if (this.ws === ws) this.ws = null;
      this.pending = []; // unconfirmed: sent again after `seq`
      if (ev.code === 1000 && ev.reason === 'closed') { this.finish('closed'); return; }
      if (this.disposed) return;
      this.setStatus('disconnected; reconnecting…');
      this.retry();
    };
  }

  retry() {
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, 5000);
    this.timer = setTimeout(() => this.connect(), wait);
  }

  onFrame(data) {
    if (typeof data !== 'string') {
      this.pending.push(new Uint8Array(data));
      return;
    }
    let m;
    try { m = JSON.parse(data); } catch { return; }
    switch (m.type) {
      case 'output':
        this.pending.push(b64bytes(m.data));
        break;
      case 'seq':
        for (const p of this.pending) this.term.write(p);
        this.pending = [];
        if (m.seq > this.seq) this.seq = m.seq;
        this.box.dataset.seq = String(this.seq);
        break;
      case 'exit':
        this.exitCode = m.exitCode;
        this.pendingExit = m;
        this.setStatus(`exited ${m.exitCode}${m.timedOut ? ' (timed out)' : ''}`);
        break;
      case 'dropped':
        this.pending.push(utf8.encode(`\r\n[${m.bytes} bytes of output were dropped]\r\n`));
        break;
      case 'error':
        this.setStatus('agent: ' + ((m.error && (m.error.reason || m.error.code)) || 'error') + (m.error && m.error.retryable ? ' (retrying)' : ''));
        break;
    }
  }

  sendInput(bytes) {
    if (this.closed) return;
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(bytes);
    else this.queue.push(bytes); // sent once reconnected
  }

  control(obj) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(obj));
  }

  signal(sig) {
    this.control({ type: 'signal', signal: sig });
  }

  // finish marks the end once xterm.js has drawn everything written so
  // far (it parses large writes over several frames).
  finish(why) {
    this.closed = true;
    const done = () => {
      const code = this.exitCode;
      this.setStatus(code === undefined ? why : `exited ${code}`);
      this.box.dataset.closed = 'true';
      this.onEnd(code);
    };
    if (this.term && !this.disposed) this.term.write('', done);
    else done();
  }

  dispose() {
    this.disposed = true;
    clearTimeout(this.timer);
    if (this.resizeObs) this.resizeObs.disconnect();
    if (this.ws) this.ws.close(1000, 'detached');
    if (this.term) this.term.dispose();
    replace(this.box);
  }

  // dropConnection closes the WebSocket as a network failure would (the
  // page's "reconnect" test hook and a user's manual reconnect).
  dropConnection() {
    if (this.ws) this.ws.close(4000, 'client reconnect');
  }
}
