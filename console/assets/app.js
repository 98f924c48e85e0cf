// The Outpost console: a client of the public API only. The token lives in
// this tab's sessionStorage and goes in Authorization headers.

import { h, replace, toast } from './dom.js';
import { API } from './api.js';
import { agentsPage } from './agents.js';
import { sessionsPage } from './sessions.js';
import { processesPage } from './processes.js';
import { filesPage } from './files.js';
import { portsPage } from './ports.js';
import { auditPage } from './audit.js';
import { devicePage } from './device.js';

// xterm.js makes <style> elements; the page's CSP allows only those that
// carry this response's nonce, so give every new <style> the nonce.
const nonceMeta = document.querySelector('meta[name="outpost-style-nonce"]');
if (nonceMeta) {
  const nonce = nonceMeta.content;
  nonceMeta.remove();
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function (tag, opts) {
    const el = create.call(this, tag, opts);
    if (String(tag).toLowerCase() === 'style') el.nonce = nonce;
    return el;
  };
}

const STORE = 'outpost.console';

const routes = [
  { path: 'agents', title: 'Agents', page: agentsPage },
  { path: 'sessions', title: 'Sessions', page: sessionsPage },
  { path: 'processes', title: 'Processes', page: processesPage, target: true },
  { path: 'files', title: 'Files', page: filesPage, target: true },
  { path: 'ports', title: 'Ports', page: portsPage, target: true },
  { path: 'audit', title: 'Audit log', page: auditPage },
  { path: 'device', title: 'Device login', page: devicePage },
];

const app = {
  api: null,
  target: null, // {kind, id}
  agents: [],
  sessions: [],
  cleanup: null,
};

function saved() {
  try { return JSON.parse(sessionStorage.getItem(STORE) || 'null'); } catch { return null; }
}

function save() {
  sessionStorage.setItem(STORE, JSON.stringify({ ws: app.api.ws, token: app.api.token, target: app.target }));
}

// setTarget picks the agent or session the target pages act on.
app.setTarget = (t) => {
  app.target = t;
  save();
};

app.refreshTargets = async () => {
  const [a, s] = await Promise.allSettled([app.api.get(app.api.wsPath('/agents')), app.api.get(app.api.wsPath('/sessions'))]);
  if (a.status === 'fulfilled') app.agents = a.value.agents || [];
  if (s.status === 'fulfilled') app.sessions = s.value.sessions || [];
  if (!app.target && app.agents.length) app.setTarget({ kind: 'agent', id: app.agents[0].id });
  renderTargetSelect();
};

let targetSelect = null;

function renderTargetSelect() {
  if (!targetSelect) return;
  const cur = app.target ? `${app.target.kind}:${app.target.id}` : '';
  const opts = [h('option', { value: '' }, '(choose)')];
  const group = (label, kind, list) => list.length ? h('optgroup', { label }, list.map((x) => h('option', { value: `${kind}:${x.id}` }, `${kind}: ${x.id}`))) : null;
  replace(targetSelect, opts, group('Agents', 'agent', app.agents), group('Sessions', 'session', app.sessions));
  targetSelect.value = cur;
  if (cur && targetSelect.value !== cur) { // a target not listed (yet)
    targetSelect.appendChild(h('option', { value: cur }, cur.replace(':', ': ')));
    targetSelect.value = cur;
  }
}

function currentRoute() {
  if (location.pathname === '/device' && !location.hash) return routes.find((r) => r.path === 'device');
  const p = location.hash.replace(/^#\/?/, '').split('?')[0];
  return routes.find((r) => r.path === p) || routes[0];
}

function header(route) {
  const top = document.getElementById('top');
  if (!app.api) { replace(top, h('span', { class: 'brand' }, 'Outpost')); return; }
  targetSelect = h('select', { id: 'target', onchange: () => {
    const v = targetSelect.value;
    if (!v) return;
    const i = v.indexOf(':');
    app.setTarget({ kind: v.slice(0, i), id: v.slice(i + 1) });
    render();
  } });
  replace(top,
    h('span', { class: 'brand' }, 'Outpost'),
    h('nav', { 'aria-label': 'Main' }, h('ul', {}, routes.map((r) => h('li', {},
      h('a', { href: '#/' + r.path, 'aria-current': r === route ? 'page' : null }, r.title))))),
    h('span', { class: 'spacer' }),
    h('label', { class: 'check' }, 'Target ', targetSelect),
    h('span', { class: 'muted' }, 'workspace ', h('code', {}, app.api.ws)),
    h('button', { type: 'button', onclick: signOut }, 'Sign out'));
  renderTargetSelect();
}

function signOut() {
  sessionStorage.removeItem(STORE);
  app.api = null;
  app.target = null;
  render();
}

function signInPage(view) {
  const ws = h('input', { type: 'text', name: 'workspace', value: 'default', required: true, autocomplete: 'off', spellcheck: false });
  const tok = h('input', { type: 'password', name: 'token', required: true, autocomplete: 'off' });
  const err = h('p', { class: 'error', role: 'alert' });
  const form = h('form', { class: 'stack', onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = '';
    const api = new API(ws.value.trim(), tok.value.trim());
    try {
      await api.get(api.wsPath());
    } catch (x) {
      err.textContent = x.status === 401 ? 'The token was not accepted.'
        : x.status === 403 ? 'This token is not for that workspace.'
          : x.status === 404 ? `No workspace "${api.ws}".` : (x.text || x.message);
      return;
    }
    app.api = api;
    save();
    await app.refreshTargets();
    render();
  } },
  h('label', {}, 'Workspace', ws),
  h('label', {}, 'Token (admin token or workspace key)', tok),
  h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  err,
  h('p', { class: 'muted' }, 'The token stays in this tab (session storage) and is sent only in Authorization headers to this control plane.'));
  replace(view, h('h1', { tabindex: '-1' }, 'Sign in'), form);
  ws.focus();
}

let renderSeq = 0;

async function render() {
  const view = document.getElementById('view');
  if (app.cleanup) { app.cleanup(); app.cleanup = null; }
  const route = currentRoute();
  header(route);
  if (!app.api) { signInPage(view); return; }
  document.title = route.title + ' · Outpost console';
  const seq = ++renderSeq;
  const heading = h('h1', { tabindex: '-1' }, route.title);
  if (route.target && !app.target) {
    replace(view, heading, h('p', {}, 'Choose a target (an agent or a session) above.'));
    return;
  }
  replace(view, heading, h('p', { class: 'muted' }, 'Loading…'));
  const focusHeading = () => {
    if (document.activeElement === document.body || !view.contains(document.activeElement)) heading.focus();
  };
  focusHeading(); // a page opened from the menu: continue at its content
  try {
    const cleanup = await route.page(view, heading, app);
    if (seq !== renderSeq) { if (cleanup) cleanup(); return; }
    app.cleanup = cleanup || null;
  } catch (e) {
    if (seq !== renderSeq) return;
    replace(view, heading, h('p', { class: 'error', role: 'alert' }, e.text || e.message));
  }
  // Rendering moved the heading (which loses focus): put it back unless
  // the page focused a field of its own.
  if (seq === renderSeq) focusHeading();
}

window.addEventListener('hashchange', render);
window.addEventListener('unhandledrejection', (e) => toast(e.reason && (e.reason.text || e.reason.message) || 'error'));

const s = saved();
if (s && s.ws && s.token) {
  app.api = new API(s.ws, s.token);
  app.target = s.target || null;
  app.refreshTargets().finally(render);
} else {
  render();
}
