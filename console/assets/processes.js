// Processes on the target: start (with a terminal), list, attach, kill.

import { h, replace, fmtTime } from './dom.js';
import { TermView } from './term.js';

function targetLabel(t) {
  return `${t.kind} ${t.id}`;
}

export async function processesPage(view, heading, app) {
  const base = app.api.targetPath(app.target) + '/processes';
  const tbody = h('tbody');
  const err = h('p', { class: 'error', role: 'alert' });
  const termSlot = h('div');
  let term = null;

  const cmd = h('input', { type: 'text', name: 'command', value: 'bash', required: true, spellcheck: false, autocomplete: 'off' });
  const tty = h('input', { type: 'checkbox', name: 'tty', checked: true });
  const detached = h('input', { type: 'checkbox', name: 'detached' });

  const attach = (id) => {
    if (term) term.dispose();
    term = new TermView(app.api, app.target, id, () => refresh());
    term.onDetach = () => { term.dispose(); term = null; replace(termSlot); };
    replace(termSlot, term.element());
    term.start();
  };

  const kill = async (id) => {
    try {
      const r = await app.api.del(`${base}/${encodeURIComponent(id)}`);
      err.textContent = '';
      note.textContent = r && r.wasRunning ? `Process ${id} terminated.` : `Process ${id} had already exited.`;
    } catch (e) {
      err.textContent = e.text || e.message;
    }
    refresh();
  };

  const note = h('p', { role: 'status', 'aria-live': 'polite', class: 'muted' });

  const start = h('form', { class: 'inline', onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = '';
    const body = { command: cmd.value, tty: tty.checked, stdin: true, detached: detached.checked };
    if (tty.checked) { body.cols = 80; body.rows = 24; } // the terminal resizes on attach
    try {
      const p = await app.api.post(base, body);
      note.textContent = `Started ${p.id} (pid ${p.pid}).`;
      await refresh();
      attach(p.id);
    } catch (x) {
      err.textContent = 'Start failed: ' + (x.text || x.message);
    }
  } },
  h('label', {}, 'Command (run by the agent\'s shell)', cmd),
  h('label', { class: 'check' }, tty, 'terminal (PTY)'),
  h('label', { class: 'check' }, detached, 'detached'),
  h('button', { type: 'submit', class: 'primary' }, 'Start'));

  async function refresh() {
    try {
      const r = await app.api.get(base);
      const ps = (r.processes || []).slice().sort((a, b) => String(b.startedAt).localeCompare(String(a.startedAt)));
      replace(tbody, ps.length ? ps.map((p) => h('tr', { dataset: { proc: p.id } },
        h('td', {}, h('code', {}, p.id)),
        h('td', {}, String(p.pid)),
        h('td', {}, h('code', {}, (p.argv || []).join(' '))),
        h('td', {}, p.tty ? 'yes' : 'no'),
        h('td', { class: 'pstate' }, p.running ? 'running' : `exited ${p.exitCode}`),
        h('td', {}, fmtTime(p.startedAt)),
        h('td', {},
          h('button', { type: 'button', 'aria-label': `Attach to ${p.id}`, onclick: () => attach(p.id) }, 'Attach'), ' ',
          p.running ? h('button', { type: 'button', class: 'danger', 'aria-label': `Kill ${p.id}`, onclick: () => kill(p.id) }, 'Kill') : null)))
        : h('tr', {}, h('td', { colSpan: 7 }, 'No processes.')));
    } catch (e) {
      err.textContent = e.text || e.message;
    }
  }

  replace(view, heading,
    h('p', { class: 'muted' }, 'On ', targetLabel(app.target), '.'),
    start, note, err,
    h('table', {}, h('thead', {}, h('tr', {}, ['Id', 'PID', 'Command', 'TTY', 'State', 'Started', ''].map((x) => h('th', { scope: 'col' }, x)))), tbody),
    h('p', {}, h('button', { type: 'button', onclick: refresh }, 'Refresh list')),
    termSlot);
  await refresh();
  return () => { if (term) term.dispose(); };
}
