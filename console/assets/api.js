// The public HTTP API, called with the bearer token in a header (never a
// cookie, never a URL).

export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || '';
    this.reason = e.reason || '';
    this.retryable = !!e.retryable;
  }
  // text is what the page shows: code/reason and the message.
  get text() {
    const tag = [this.code, this.reason].filter(Boolean).join('/');
    return (tag ? tag + ': ' : '') + this.message;
  }
}

const seg = encodeURIComponent;

export class API {
  constructor(ws, token) {
    this.ws = ws;
    this.token = token;
  }

  wsPath(rest = '') {
    return `/v1/workspaces/${seg(this.ws)}${rest}`;
  }

  // targetPath is the prefix of a target: {kind:"agent"|"session", id}.
  targetPath(t) {
    return this.wsPath(`/${t.kind === 'session' ? 'sessions' : 'agents'}/${seg(t.id)}`);
  }

  headers(extra) {
    return Object.assign({ Authorization: 'Bearer ' + this.token }, extra || {});
  }

  // call sends a request and returns the parsed JSON (null for 204), or
  // throws APIError. opts: json (a body), query (an object), raw (return
  // the Response), headers.
  async call(method, path, opts = {}) {
    let url = path;
    if (opts.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
      const s = q.toString();
      if (s) url += '?' + s;
    }
    const init = { method, headers: this.headers(opts.headers), credentials: 'omit', cache: 'no-store', redirect: 'error' };
    if (opts.json !== undefined) {
      init.body = JSON.stringify(opts.json);
      init.headers['Content-Type'] = 'application/json';
    }
    const res = await fetch(url, init);
    if (!res.ok) {
      let body = null;
      try { body = await res.json(); } catch { /* not JSON */ }
      throw new APIError(res.status, body);
    }
    if (opts.raw) return res;
    if (res.status === 204) return null;
    const text = await res.text();
    return text ? JSON.parse(text) : null;
  }

  get(path, query) { return this.call('GET', path, { query }); }
  post(path, json) { return this.call('POST', path, { json: json === undefined ? {} : json }); }
  del(path, query) { return this.call('DELETE', path, { query }); }

  // upload PUTs file to path with progress callbacks (loaded, total);
  // XMLHttpRequest because fetch has no upload progress.
  upload(target, path, file, onProgress) {
    const q = new URLSearchParams({ path, overwrite: 'true' });
    const url = this.targetPath(target) + '/fs/file?' + q;
    return new Promise((resolve, reject) => {
      const x = new XMLHttpRequest();
      x.open('PUT', url);
      x.withCredentials = false;
      x.setRequestHeader('Authorization', 'Bearer ' + this.token);
      x.setRequestHeader('Content-Type', 'application/octet-stream');
      x.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
      x.onload = () => {
        let body = null;
        try { body = JSON.parse(x.responseText); } catch { /* not JSON */ }
        if (x.status >= 200 && x.status < 300) resolve(body);
        else reject(new APIError(x.status, body));
      };
      x.onerror = () => reject(new APIError(0, { error: { message: 'network error during upload' } }));
      x.send(file);
    });
  }
}
