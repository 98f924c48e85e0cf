// DOM building without innerHTML: every string lands in a text node or a
// property, never parsed as markup.

// h makes an element. attrs: "class", "on<event>" handlers, "dataset",
// boolean and string properties, or "aria-*"/"role"/"for" attributes.
// Children: nodes, strings (as text), arrays, null/false (skipped).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('aria-') || k === 'role' || k === 'for' || k === 'tabindex' || k === 'list') el.setAttribute(k, String(v));
    else el[k] = v;
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// replace empties el and appends children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// field is a labelled input: the label wraps it, so it is always named.
export function field(label, input) {
  return h('label', input.type === 'checkbox' ? { class: 'check' } : {}, input.type === 'checkbox' ? [input, label] : [label, input]);
}

// table with a header row; rows are arrays of cells (strings or nodes).
export function table(caption, headers, rows) {
  return h('table', {},
    caption ? h('caption', { class: 'muted' }, caption) : null,
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))));
}

export function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? String(s) : d.toLocaleString();
}

export function fmtBytes(n) {
  if (n === undefined || n === null) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let x = Number(n);
  while (x >= 1024 && i < u.length - 1) { x /= 1024; i++; }
  return (i === 0 ? String(x) : x.toFixed(1)) + ' ' + u[i];
}

// toast shows a short message in the live region.
export function toast(msg) {
  const box = document.getElementById('toast');
  const p = h('p', {}, msg);
  box.appendChild(p);
  setTimeout(() => p.remove(), 6000);
}
