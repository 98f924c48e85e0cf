// Agents with live status, polled every two seconds; rows are updated in
// place so focus and selection survive a refresh.

import { h, replace, fmtTime, fmtBytes } from './dom.js';

const POLL_MS = 2000;

// policySummary renders the machine owner's policy (Agent.policy, or an
// object under capabilities.policy): what is off or narrowed; "none" when
// the agent has no policy file.
export function policySummary(a) {
  const caps = a.capabilities || {};
  const p = a.policy && typeof a.policy === 'object' ? a.policy : caps.policy;
  if (p === undefined || p === null || p === false) return 'none';
  if (p === true) return 'restricted';
  if (typeof p !== 'object') return String(p);
  const out = [];
  for (const k of ['exec', 'processes', 'tty']) if (p[k] === false) out.push(`no ${k}`);
  for (const k of ['fs', 'git']) if (p[k] && p[k] !== 'read-write') out.push(`${k} ${p[k]}`);
  if (Array.isArray(p.commands)) out.push(`commands: ${p.commands.join(', ') || 'none'}`);
  if (typeof p.denyPaths === 'number' && p.denyPaths > 0) out.push(`${p.denyPaths} denied path${p.denyPaths === 1 ? '' : 's'}`);
  else if (Array.isArray(p.denyPaths) && p.denyPaths.length) out.push(`denied: ${p.denyPaths.join(', ')}`);
  if (Array.isArray(p.ports)) out.push(`ports: ${p.ports.join(', ') || 'none'}`);
  const l = p.limits || {};
  const lim = [l.memoryBytes ? `memory ${fmtBytes(l.memoryBytes)}` : '', l.cpuPercent ? `cpu ${l.cpuPercent}%` : '', l.processes ? `${l.processes} processes` : ''].filter(Boolean);
  if (lim.length) out.push(`limits: ${lim.join(', ')}${p.limitsBy ? ' (' + p.limitsBy + ')' : ''}`);
  const known = new Set(['exec', 'processes', 'tty', 'fs', 'git', 'commands', 'denyPaths', 'ports', 'limits', 'limitsBy']);
  for (const [k, v] of Object.entries(p)) if (!known.has(k) && v !== null && typeof v !== 'object') out.push(`${k}: ${v}`);
  return out.length ? out.join('; ') : 'allows everything';
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
    policySummary(a),
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
