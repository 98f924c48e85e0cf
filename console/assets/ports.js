// Ports listening on the target's machine, and signed preview links to
// them (POST {target}/ports/{port}/links; Delete revokes one).

import { h, replace, fmtTime } from './dom.js';

export async function portsPage(view, heading, app) {
  const tp = app.api.targetPath(app.target);
  const tbody = h('tbody');
  const err = h('p', { class: 'error', role: 'alert' });
  const note = h('p', { role: 'status', 'aria-live': 'polite', class: 'muted' });
  const links = h('ul', { 'aria-label': 'Preview links' });
  const ttl = h('input', { type: 'number', name: 'ttl', min: 60, step: 60, value: 3600 });

  const link = async (port) => {
    err.textContent = '';
    try {
      const r = await app.api.post(`${tp}/ports/${encodeURIComponent(port)}/links`, { ttlSeconds: Number(ttl.value) || undefined });
      const li = h('li', { dataset: { port: String(port), link: r.id } },
        `Port ${port}: `, h('a', { href: r.url, target: '_blank', rel: 'noopener noreferrer' }, r.url), ` (until ${fmtTime(r.expiresAt)}) `);
      const del = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete the preview link for port ${port}`, onclick: async () => {
        err.textContent = '';
        try {
          await app.api.del(`${tp}/ports/${encodeURIComponent(port)}/links/${encodeURIComponent(r.id)}`);
          li.remove();
          note.textContent = `Deleted the preview link for port ${port}: it no longer opens.`;
        } catch (x) {
          err.textContent = `Deleting the link for ${port} failed: ` + (x.text || x.message);
        }
      } }, 'Delete');
      li.appendChild(del);
      links.appendChild(li);
      note.textContent = `Preview link for port ${port} made.`;
    } catch (x) {
      err.textContent = `Preview link for ${port} failed: ` + (x.text || x.message);
    }
  };

  const custom = h('input', { type: 'number', name: 'port', min: 1, max: 65535 });
  const refresh = async () => {
    try {
      const r = await app.api.get(tp + '/ports');
      const ps = r.ports || [];
      replace(tbody, ps.length ? ps.map((p) => h('tr', { dataset: { port: String(p.port) } },
        h('td', {}, String(p.port)), h('td', { class: 'mono' }, p.address || ''), h('td', {}, p.pid ? String(p.pid) : ''), h('td', {}, p.process || ''),
        h('td', {}, h('button', { type: 'button', 'aria-label': `Preview link for port ${p.port}`, onclick: () => link(p.port) }, 'Preview link'))))
        : h('tr', {}, h('td', { colSpan: 5 }, 'Nothing is listening.')));
      err.textContent = '';
    } catch (x) {
      replace(tbody);
      err.textContent = x.text || x.message;
    }
  };
  replace(view, heading,
    h('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); if (custom.value) link(Number(custom.value)); } },
      h('label', {}, 'Link lifetime (seconds)', ttl), h('label', {}, 'Port', custom), h('button', { type: 'submit' }, 'Preview link for port')),
    err, note,
    h('table', {}, h('thead', {}, h('tr', {}, ['Port', 'Address', 'PID', 'Process', ''].map((x) => h('th', { scope: 'col' }, x)))), tbody),
    h('p', {}, h('button', { type: 'button', onclick: refresh }, 'Refresh')),
    h('h2', {}, 'Links made here'), links,
    h('p', { class: 'muted' }, 'A preview link opens the port without a token, only that port and only until it expires. Anyone with the link can use it.'));
  await refresh();
}
