// Device-login approval: the page at the verificationUri. The machine
// shows a user code; a signed-in user approves (naming the agent or
// pool it joins) or denies it.

import { h, replace, fmtTime } from './dom.js';

export async function devicePage(view, heading, app) {
  const q = new URLSearchParams(location.search);
  const code = h('input', { type: 'text', name: 'userCode', required: true, autocomplete: 'off', spellcheck: false,
    value: q.get('code') || q.get('user_code') || '', 'aria-describedby': 'device-help' });
  const agent = h('input', { type: 'text', name: 'agent', autocomplete: 'off', spellcheck: false, placeholder: 'optional' });
  const pool = h('input', { type: 'text', name: 'pool', autocomplete: 'off', spellcheck: false, placeholder: 'optional' });
  const out = h('p', { role: 'status', 'aria-live': 'polite' });
  const who = h('div', { 'aria-live': 'polite' });
  // lookup shows which machine asked, so a person can tell what they
  // approve (GET .../device-approvals/{code}).
  const lookup = async () => {
    const c = code.value.trim().toUpperCase();
    if (!c) { replace(who); return; }
    try {
      const r = await app.api.get(app.api.wsPath(`/device-approvals/${encodeURIComponent(c)}`));
      replace(who, h('table', { class: 'device' }, h('caption', { class: 'muted' }, 'The machine that asked'), h('tbody', {},
        [['State', r.state], ['Name', r.name], ['Host', r.hostname], ['OS', [r.os, r.arch].filter(Boolean).join('/')],
          ['Asked from', r.remoteAddr], ['Asked at', fmtTime(r.createdAt)], ['Expires', fmtTime(r.expiresAt)],
          ['CA fingerprint (must match the one it printed)', r.caSha256]]
          .filter(([, v]) => v).map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', { class: k.startsWith('CA') ? 'mono' : '' }, v))))));
    } catch (x) {
      replace(who, h('p', { class: x.status === 404 ? 'error' : 'muted' },
        x.status === 404 ? 'No pending login with that code (mistyped, used or expired?).' : `Cannot look the code up: ${x.text || x.message}`));
    }
  };
  code.addEventListener('change', lookup);
  const send = async (deny) => {
    out.className = '';
    if (!code.value.trim()) { out.className = 'error'; out.textContent = 'Enter the code the machine shows.'; code.focus(); return; }
    const body = { userCode: code.value.trim().toUpperCase() };
    if (agent.value.trim()) body.agent = agent.value.trim();
    if (pool.value.trim()) body.pool = pool.value.trim();
    if (deny) body.deny = true;
    try {
      const r = await app.api.post(app.api.wsPath('/device-approvals'), body);
      const what = r && (r.agent || r.hostname) ? ` (${[r.agent && 'agent ' + r.agent, r.hostname && 'host ' + r.hostname, r.os].filter(Boolean).join(', ')})` : '';
      out.textContent = deny ? `Denied ${body.userCode}.` : `Approved ${body.userCode}${what}. The machine finishes enrolling on its next poll.`;
      out.dataset.result = deny ? 'denied' : 'approved';
    } catch (x) {
      out.className = 'error';
      out.textContent = (deny ? 'Deny' : 'Approval') + ' failed: ' + (x.text || x.message);
    }
  };
  const form = h('form', { class: 'stack', onsubmit: (e) => { e.preventDefault(); send(false); } },
    h('p', { id: 'device-help' }, 'Approve a machine that ran ', h('code', {}, 'outpost agent login'), ': check that the code matches the one it prints, then approve. It joins workspace ', h('code', {}, app.api.ws), '.'),
    h('label', {}, 'Code shown on the machine', code),
    h('div', {}, h('button', { type: 'button', onclick: lookup }, 'Show the machine')),
    who,
    h('label', {}, 'Agent name', agent),
    h('label', {}, 'Pool', pool),
    h('div', {}, h('button', { type: 'submit', class: 'primary' }, 'Approve'), ' ', h('button', { type: 'button', class: 'danger', onclick: () => send(true) }, 'Deny')),
    out);
  replace(view, heading, form);
  code.focus();
  if (code.value) lookup();
}
