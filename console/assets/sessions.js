// Sessions: backends, the active one, the epoch, transitions, and a swap
// (optionally carrying the workspace's files to the new backend).

import { h, replace, fmtTime, fmtBytes, table } from './dom.js';

function backendText(b) {
  const what = b.kind === 'pool' ? `pool ${b.pool}${b.claimed ? ', claimed ' + b.claimed : ''}` : `agent ${b.agent}`;
  return b.status ? `${what} (${b.status})` : what;
}

function sessionCard(s, app, reload) {
  const others = Object.keys(s.backends || {}).filter((n) => n !== s.active);
  const to = h('select', { name: 'to' }, others.map((n) => h('option', { value: n }, n)));
  const carry = h('input', { type: 'checkbox', name: 'carry' });
  const out = h('p', { role: 'status', 'aria-live': 'polite' });
  const btn = h('button', { type: 'submit', class: 'primary', disabled: !others.length }, 'Swap');
  const swap = h('form', { class: 'inline', onsubmit: async (e) => {
    e.preventDefault();
    btn.disabled = true;
    out.className = '';
    out.textContent = `Swapping to ${to.value}…`;
    try {
      const body = { to: to.value, ifEpoch: s.epoch };
      if (carry.checked) body.carry = true; // only then: a server without carry refuses the field
      const r = await app.api.post(app.api.wsPath(`/sessions/${encodeURIComponent(s.id)}/swap`), body);
      out.textContent = `Swapped to ${r.active}, epoch ${r.epoch}.`;
      await reload(`Swapped ${s.id} to ${r.active}, epoch ${r.epoch}.`);
    } catch (x) {
      out.className = 'error';
      out.textContent = 'Swap failed: ' + (x.text || x.message);
      btn.disabled = false;
    }
  } },
  h('label', {}, 'Swap to', to), h('label', { class: 'check' }, carry, 'carry files'), btn);
  const lc = s.lastCarry;
  return h('section', { class: 'card', dataset: { session: s.id }, 'aria-label': `Session ${s.id}` },
    h('h2', {}, 'Session ', h('code', {}, s.id)),
    h('p', {}, 'Active: ', h('strong', { class: 'active' }, s.active), ' · epoch ', h('strong', { class: 'epoch' }, String(s.epoch)),
      s.snapshotEveryMs ? ` · snapshot every ${s.snapshotEveryMs / 1000} s` : ''),
    table('Backends', ['Name', 'Backend', ''], Object.entries(s.backends || {}).map(([n, b]) => [h('code', {}, n), backendText(b), n === s.active ? 'active' : ''])),
    lc ? h('p', { class: 'muted' }, `Last carry: snapshot ${lc.snapshot} from ${lc.from}, taken ${fmtTime(lc.takenAt)}, ${lc.files} files, ${fmtBytes(lc.transferredBytes)} moved`) : null,
    (s.transitions || []).length ? table('Transitions', ['From', 'To', 'Epoch', 'At'], s.transitions.slice(-5).reverse().map((t) => [t.from, t.to, String(t.epoch), fmtTime(t.at)])) : null,
    swap, out,
    h('p', {}, h('button', { type: 'button', onclick: () => { app.setTarget({ kind: 'session', id: s.id }); location.hash = '#/processes'; } }, `Use session ${s.id} as target`)));
}

export async function sessionsPage(view, heading, app) {
  const list = h('div');
  const note = h('p', { role: 'status', 'aria-live': 'polite', class: 'muted' });
  const reload = async (msg) => {
    const r = await app.api.get(app.api.wsPath('/sessions'));
    app.sessions = r.sessions || [];
    replace(list, app.sessions.length ? app.sessions.map((s) => sessionCard(s, app, reload)) : h('p', {}, 'No sessions. Create one with the API or `outpost session create`.'));
    if (msg) note.textContent = msg;
  };
  replace(view, heading, h('button', { type: 'button', onclick: () => reload('Refreshed.') }, 'Refresh'), note, list);
  await reload();
}
