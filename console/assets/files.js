// A file browser on the target's root: list, upload with progress,
// download, delete. Paths are the API's (relative to the agent's root).

import { h, replace, fmtBytes, fmtTime } from './dom.js';

function join(dir, name) {
  return dir === '' || dir === '.' ? name : dir.replace(/\/+$/, '') + '/' + name;
}

function parent(dir) {
  const i = dir.replace(/\/+$/, '').lastIndexOf('/');
  return i < 0 ? '' : dir.slice(0, i);
}

function baseName(p) {
  return p.replace(/\/+$/, '').split('/').pop();
}

export async function filesPage(view, heading, app) {
  const tp = app.api.targetPath(app.target);
  let dir = sessionStorage.getItem('outpost.console.dir') || '';
  const crumb = h('p', { class: 'breadcrumb' });
  const tbody = h('tbody');
  const err = h('p', { class: 'error', role: 'alert' });
  const note = h('p', { role: 'status', 'aria-live': 'polite' });
  const files = h('input', { type: 'file', name: 'upload', multiple: true });
  const progress = h('progress', { max: 1, value: 0, hidden: true, 'aria-label': 'Upload progress' });

  const go = (d) => { dir = d; sessionStorage.setItem('outpost.console.dir', d); list(); };

  const download = async (e) => {
    try {
      const res = await app.api.call('GET', tp + '/fs/file', { query: { path: e.path }, raw: true });
      const url = URL.createObjectURL(await res.blob());
      const a = h('a', { href: url, download: e.name || baseName(e.path) });
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      note.textContent = `Downloaded ${e.path}.`;
    } catch (x) {
      err.textContent = 'Download failed: ' + (x.text || x.message);
    }
  };

  const remove = (e, btn) => {
    if (btn.dataset.confirm !== 'yes') {
      btn.dataset.confirm = 'yes';
      btn.textContent = e.type === 'dir' ? 'Confirm: delete folder and contents' : 'Confirm delete';
      return;
    }
    app.api.del(tp + '/fs', { path: e.path, recursive: e.type === 'dir' ? 'true' : undefined })
      .then(() => { note.textContent = `Deleted ${e.path}.`; list(); })
      .catch((x) => { err.textContent = 'Delete failed: ' + (x.text || x.message); });
  };

  const row = (e) => {
    const del = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete ${e.path}` }, 'Delete');
    del.addEventListener('click', () => remove(e, del));
    del.addEventListener('blur', () => { del.dataset.confirm = ''; del.textContent = 'Delete'; });
    const name = e.type === 'dir'
      ? h('a', { href: '#/files', onclick: (ev) => { ev.preventDefault(); go(e.path); } }, e.name + '/')
      : h('span', {}, e.name);
    return h('tr', { dataset: { path: e.path } },
      h('td', {}, name), h('td', {}, e.type), h('td', {}, e.type === 'file' ? fmtBytes(e.size) : ''),
      h('td', { class: 'mono' }, e.mode || ''), h('td', {}, fmtTime(e.modTime)),
      h('td', {}, e.type === 'file' ? h('button', { type: 'button', 'aria-label': `Download ${e.path}`, onclick: () => download(e) }, 'Download') : null, ' ', del));
  };

  async function list() {
    err.textContent = '';
    const parts = dir ? dir.split('/') : [];
    replace(crumb, 'Path: ', h('a', { href: '#/files', onclick: (ev) => { ev.preventDefault(); go(''); } }, '(root)'),
      parts.map((p, i) => ['/', h('a', { href: '#/files', onclick: (ev) => { ev.preventDefault(); go(parts.slice(0, i + 1).join('/')); } }, p)]));
    try {
      const r = await app.api.get(tp + '/fs/list', { path: dir || '/' });
      const es = (r.entries || []).filter((e) => parent(e.path) === dir.replace(/\/+$/, '') || dir === '');
      replace(tbody,
        dir ? h('tr', {}, h('td', { colSpan: 6 }, h('a', { href: '#/files', onclick: (ev) => { ev.preventDefault(); go(parent(dir)); } }, '.. (up)'))) : null,
        es.length ? es.map(row) : h('tr', {}, h('td', { colSpan: 6 }, 'Empty folder.')));
    } catch (x) {
      if (x.status === 404 && dir) { go(parent(dir)); return; }
      replace(tbody);
      err.textContent = x.text || x.message;
    }
  }

  const upload = h('form', { class: 'inline', onsubmit: async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    const chosen = Array.from(files.files || []);
    if (!chosen.length) { err.textContent = 'Choose a file to upload.'; return; }
    const total = chosen.reduce((n, f) => n + f.size, 0) || 1;
    let done = 0;
    progress.hidden = false;
    progress.max = total;
    for (const f of chosen) {
      note.textContent = `Uploading ${f.name}…`;
      try {
        const r = await app.api.upload(app.target, join(dir, f.name), f, (loaded) => { progress.value = done + loaded; });
        done += f.size;
        note.textContent = `Uploaded ${r.path} (${fmtBytes(r.size)}).`;
      } catch (x) {
        err.textContent = `Upload of ${f.name} failed: ` + (x.text || x.message);
        break;
      }
    }
    progress.value = done;
    files.value = '';
    list();
  } }, h('label', {}, 'Upload to this folder', files), h('button', { type: 'submit', class: 'primary' }, 'Upload'), progress);

  replace(view, heading, crumb, upload, note, err,
    h('table', {}, h('thead', {}, h('tr', {}, ['Name', 'Type', 'Size', 'Mode', 'Modified', ''].map((x) => h('th', { scope: 'col' }, x)))), tbody));
  await list();
}
