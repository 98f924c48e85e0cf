// The audit log the control plane keeps of what agents ran
// (GET /v1/workspaces/{ws}/audit?agent=&after=&limit=), a page at a time
// in the order the API gives, `next` the cursor of the following page.

import { h, replace, fmtTime, fmtBytes } from './dom.js';

const PAGE = 100;

export async function auditPage(view, heading, app) {
  const agent = h('select', { name: 'agent' }, h('option', { value: '' }, '(all agents)'),
    app.agents.map((a) => h('option', { value: a.id }, a.id)));
  const tbody = h('tbody');
  const err = h('p', { class: 'error', role: 'alert' });
  let next = '';
  const more = h('button', { type: 'button', hidden: true, onclick: () => load(false) }, 'More events');

  async function load(fresh) {
    err.textContent = '';
    if (fresh) { next = ''; replace(tbody); }
    try {
      const r = await app.api.get(app.api.wsPath('/audit'), { agent: agent.value, after: next, limit: PAGE });
      for (const e of r.events || []) {
        tbody.appendChild(h('tr', {},
          h('td', {}, fmtTime(e.time)), h('td', {}, e.agent || ''), h('td', {}, h('code', {}, e.op || '')),
          h('td', { class: 'mono' }, e.argv ? e.argv.join(' ') : (e.path || '') + (e.to ? ' → ' + e.to : '')),
          h('td', {}, e.result || ''), h('td', {}, e.session ? `${e.session}@${e.epoch ?? ''}` : ''),
          h('td', {}, e.bytes ? fmtBytes(e.bytes) : ''), h('td', {}, e.durationMs !== undefined ? `${e.durationMs} ms` : '')));
      }
      if (!tbody.children.length) tbody.appendChild(h('tr', {}, h('td', { colSpan: 8 }, 'No events.')));
      next = r.next || '';
      more.hidden = !next || !(r.events || []).length;
    } catch (x) {
      err.textContent = x.status === 404 || x.status === 501 ? 'This control plane does not serve the audit log.' : (x.text || x.message);
    }
  }
  replace(view, heading,
    h('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); load(true); } }, h('label', {}, 'Agent', agent), h('button', { type: 'submit' }, 'Show')),
    err,
    h('table', {}, h('thead', {}, h('tr', {}, ['Time', 'Agent', 'Operation', 'Command or path', 'Result', 'Session', 'Bytes', 'Duration'].map((x) => h('th', { scope: 'col' }, x)))), tbody),
    more);
  await load(true);
}
