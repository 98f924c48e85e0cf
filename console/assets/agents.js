// Agents with live status, polled every two seconds; rows are updated in
// place so focus and selection survive a refresh.

import { h, replace, fmtTime } from './dom.js';

const POLL_MS = 2000;

// policySummary renders capabilities.policy, whatever its shape: a string,
// or an object of rules.
export function policySummary(caps) {
  const p = caps && caps.policy;
  if (p === undefined || p === null || p === false) return 'none';
  if (p === true) return 'restricted';
  if (typeof p !== 'object') return String(p);
  return Object.entries(p).map(([k, v]) => {
    if (Array.isArray(v)) return `${k}: ${v.join(', ')}`;
    if (v && typeof v === 'object') return `${k}: ${Object.entries(v).map(([a, b]) => `${a}=${b}`).join(' ')}`;
    return `${k}: ${v}`;
  }).join('; ');
}

export function statusText(a) {
  return a.paused ? `${a.status}, paused` : a.status;
}

function capsText(caps) {
  return Object.entries(caps || {}).filter(([k, v]) => k !== 'policy' && v === true).map(([k]) => k).join(', ');
}

export async function agentsPage(view, heading, app) {
  const tbody = h('tbody');
  const err = h('p', { class: 'error', role: 'alert' });
  const updated = h('p', { class: 'muted' });
  const rows = new Map();
  replace(view, heading,
    h('table', { 'aria-describedby': 'agents-updated' },
      h('thead', {}, h('tr', {}, ['Agent', 'Status', 'Last seen', 'OS', 'Version', 'Host', 'Pool', 'Capabilities', 'Policy', ''].map((x) => h('th', { scope: 'col' }, x)))),
      tbody),
    h('p', { class: 'muted', id: 'agents-updated' }, updated), err);

  const cells = (a) => [
    h('code', {}, a.id),
    h('span', { class: `status status-${a.paused ? 'paused' : a.status}`, dataset: { status: a.status } }, statusText(a)),
    fmtTime(a.lastSeen),
    [a.os, a.arch].filter(Boolean).join('/'),
    a.version || '',
    a.hostname || '',
    a.pool || '',
    capsText(a.capabilities),
    policySummary(a.capabilities),
  ];

  const upsert = (a) => {
    let r = rows.get(a.id);
    if (!r) {
      const use = h('button', { type: 'button', onclick: () => { app.setTarget({ kind: 'agent', id: a.id }); location.hash = '#/processes'; } }, 'Open');
      use.setAttribute('aria-label', `Open agent ${a.id}`);
      const tds = Array.from({ length: 9 }, () => h('td'));
      r = { tr: h('tr', { dataset: { agent: a.id } }, tds, h('td', {}, use)), tds, key: [] };
      rows.set(a.id, r);
    }
    cells(a).forEach((c, i) => {
      const k = typeof c === 'string' ? c : c.textContent + '|' + c.className;
      if (r.key[i] !== k) { r.key[i] = k; replace(r.tds[i], c); }
    });
    return r.tr;
  };

  let timer = null;
  let stopped = false;
  const poll = async () => {
    try {
      const list = (await app.api.get(app.api.wsPath('/agents'))).agents || [];
      app.agents = list;
      const want = list.map(upsert);
      for (const [id, r] of rows) if (!list.some((a) => a.id === id)) { r.tr.remove(); rows.delete(id); }
      want.forEach((tr, i) => { if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null); });
      if (!list.length) replace(tbody, h('tr', {}, h('td', { colSpan: 10 }, 'No agents enrolled yet.')));
      else if (tbody.firstChild && !tbody.firstChild.dataset.agent) tbody.firstChild.remove();
      err.textContent = '';
      updated.textContent = 'Updated ' + new Date().toLocaleTimeString();
    } catch (e) {
      err.textContent = e.text || e.message;
    }
    if (!stopped) timer = setTimeout(poll, POLL_MS);
  };
  await poll();
  return () => { stopped = true; clearTimeout(timer); };
}
