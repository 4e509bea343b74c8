// The approval page's script (served by the daemon, same origin, no inline code).
// Every string the daemon sends is already escaped by Postern's terminal-text rules;
// this script only ever places it with textContent, never as markup. The device's key is
// half a cookie (HttpOnly) and half this origin's storage, sent as a header: a cookie for
// 127.0.0.1 also goes to every other port of 127.0.0.1, this storage does not.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const KEY = 'postern.device-key';
  let csrf = null;
  let offset = 0;
  let stream = null;
  let busy = false;
  let again = false;

  function el(tag, props, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k.startsWith('data-')) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children || []) e.appendChild(c);
    return e;
  }

  function say(text, code) {
    const s = $('status');
    s.textContent = text;
    s.className = code ? 'error' : '';
    s.setAttribute('data-code', code || '');
  }

  function left(expiresAt) {
    const ms = Date.parse(expiresAt) - (Date.now() + offset);
    if (ms <= 0) return null;
    const s = Math.ceil(ms / 1000);
    return s < 60 ? `${s}s left` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s left`;
  }

  function tick() {
    for (const c of document.querySelectorAll('[data-expires]')) {
      const l = left(c.getAttribute('data-expires'));
      c.textContent = l === null ? 'expired' : l;
      c.className = l === null ? 'countdown badge expired' : 'countdown';
    }
  }

  async function decide(card, verdict, scope, reason) {
    say(`sending ${verdict} for ${card.tool}…`, '');
    const body = { card_id: card.id, digest: card.digest, nonce: card.nonce, verdict };
    if (verdict === 'approve') body.scope = scope;
    else body.reason = reason === '' ? null : reason;
    const r = await fetch('/api/decide', { method: 'POST', credentials: 'same-origin', headers: { ...deviceHeader(), 'Content-Type': 'application/json', 'X-Postern-Page': csrf }, body: JSON.stringify(body) });
    const j = await r.json().catch(() => ({}));
    if (r.ok) {
      const d = j.decision;
      say(d.kind === 'approved' ? `approved ${card.tool} ${d.scope === 'session' ? 'for the session' : 'once'}` : `denied ${card.tool}`, '');
    } else {
      say(`${j.error ? `${j.error.code}: ${j.error.message}` : `refused (${r.status})`}`, j.error ? j.error.code : 'ERROR');
    }
    await refresh();
  }

  function renderCard(card) {
    const head = el('div', { class: 'card-head' }, [
      el('span', { class: 'tool', text: card.tool }),
      el('span', { class: 'revision', text: card.revision }),
      el('span', { class: 'countdown', 'data-expires': card.expires_at }),
    ]);
    if (card.widens) head.appendChild(el('span', { class: 'badge widens', text: 'WIDENS AUTHORITY' }));
    if (card.stale !== null) {
      head.appendChild(el('span', { class: 'badge stale', text: 'STALE' }));
      head.appendChild(el('span', { class: 'stale-why', text: card.stale }));
    }
    const rows = el('table', { class: 'rows' }, [el('tbody', {}, card.rows.map((r) => el('tr', { class: r.tone, 'data-label': r.label }, [el('td', { class: 'label', text: r.label }), el('td', { class: 'value', text: r.value })])))]);
    const reason = el('input', { class: 'reason', placeholder: 'reason (optional)', maxLength: 500 });
    const once = el('button', { class: 'approve', 'data-action': 'approve-once', text: 'Approve once', disabled: !card.approve.once });
    const session = el('button', { class: 'approve', 'data-action': 'approve-session', text: 'Approve for session', disabled: !card.approve.session });
    const deny = el('button', { class: 'deny', 'data-action': 'deny', text: 'Deny' });
    once.addEventListener('click', () => void decide(card, 'approve', 'once'));
    session.addEventListener('click', () => void decide(card, 'approve', 'session'));
    deny.addEventListener('click', () => void decide(card, 'deny', undefined, reason.value));
    const actions = el('div', { class: 'actions' }, [once, session, deny, reason]);
    if (card.approve.why !== null) actions.appendChild(el('span', { class: 'why', text: card.approve.why }));
    return el('div', { class: `card${card.stale !== null ? ' stale' : ''}${card.widens ? ' widens' : ''}`, 'data-card-id': card.id, 'data-stale': card.stale !== null ? 'yes' : 'no' }, [head, rows, actions]);
  }

  function render(s) {
    csrf = s.csrf;
    offset = Date.parse(s.now) - Date.now();
    $('who').textContent = `device ${s.device.name} (${s.device.id})`;
    $('pending-count').textContent = `(${s.cards.length})`;
    $('cards').replaceChildren(...(s.cards.length === 0 ? [el('p', { class: 'empty', text: 'nothing waits for approval' })] : s.cards.map(renderCard)));
    $('activity').tBodies[0].replaceChildren(...s.activity.map((a) => el('tr', {}, [a.at, a.tool, a.status, a.decision, a.error_code].map((t) => el('td', { text: t })))));
    $('app').setAttribute('data-ready', 'yes');
    tick();
  }

  function deviceHeader() {
    return { 'X-Postern-Device': localStorage.getItem(KEY) || '' };
  }

  function showPairing(message) {
    $('app').hidden = true;
    $('pair').hidden = false;
    if (stream !== null) {
      stream.abort();
      stream = null;
    }
    if (message) say(message, 'DEVICE_UNPAIRED');
  }

  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const r = await fetch('/api/state', { credentials: 'same-origin', headers: deviceHeader() });
      if (r.status === 401) {
        const j = await r.json().catch(() => ({}));
        showPairing(j.error ? `${j.error.code}: ${j.error.message}` : '');
        return;
      }
      if (!r.ok) throw new Error(String(r.status));
      $('pair').hidden = true;
      $('app').hidden = false;
      render(await r.json());
      listen();
    } catch (e) {
      $('conn').textContent = `not connected (${e.message}); trying again`;
      setTimeout(() => void refresh(), 2000);
    } finally {
      busy = false;
      if (again) {
        again = false;
        void refresh();
      }
    }
  }

  // The daemon's "changed" pings, read from a streamed response (an EventSource cannot send the key header).
  function listen() {
    if (stream !== null) return;
    const mine = new AbortController();
    stream = mine;
    void (async () => {
      try {
        const r = await fetch('/api/events', { credentials: 'same-origin', headers: deviceHeader(), signal: mine.signal });
        if (!r.ok || r.body === null) throw new Error(String(r.status));
        $('conn').textContent = 'live';
        const reader = r.body.getReader();
        for (;;) {
          const { done } = await reader.read();
          if (done) break;
          void refresh();
        }
      } catch {
        if (mine.signal.aborted) return;
      }
      if (stream !== mine) return;
      stream = null;
      $('conn').textContent = 'reconnecting…';
      setTimeout(() => void refresh(), 1000);
    })();
  }

  $('pair-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void (async () => {
      const r = await fetch('/api/pair', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code: $('pair-code').value }) });
      const j = await r.json().catch(() => ({}));
      if (!r.ok) {
        say(j.error ? `${j.error.code}: ${j.error.message}` : `refused (${r.status})`, j.error ? j.error.code : 'ERROR');
        return;
      }
      localStorage.setItem(KEY, j.key);
      history.replaceState(null, '', '/');
      say(`paired as ${j.device.name}`, '');
      await refresh();
    })();
  });

  // A pairing link carries its code in the fragment (never sent to the daemon in a URL).
  function codeFromLink() {
    const m = /^#pair=([A-Za-z0-9-]{1,32})$/.exec(location.hash);
    if (m) $('pair-code').value = m[1];
  }
  window.addEventListener('hashchange', codeFromLink);
  codeFromLink();
  setInterval(tick, 1000);
  void refresh();
})();
