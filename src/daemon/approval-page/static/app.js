// The approval page's script (served by the daemon, same origin, no inline code; an ES module).
// Every string the daemon sends is already escaped by Postern's terminal-text rules;
// this script only ever places it with textContent, never as markup. The device, the daemon's
// proof of itself and every request that uses the device are device.js's.
import { open, pair, whenStopped } from './device.js';

{
  const $ = (id) => document.getElementById(id);
  let device = null;
  let offset = 0;
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
    let r;
    try {
      r = await device.send('POST', '/api/decide', body);
    } catch {
      return; // stopped: the message is on the page
    }
    const j = r.json;
    if (r.status === 200) {
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

  async function revoke(d) {
    let r;
    try {
      r = await device.send('POST', '/api/revoke', { id: d.id });
    } catch {
      return; // stopped: the message is on the page
    }
    if (r.status === 200) say(`revoked device ${d.name} (${d.id})`, '');
    else say(r.json.error ? `${r.json.error.code}: ${r.json.error.message}` : `refused (${r.status})`, r.json.error ? r.json.error.code : 'ERROR');
    await refresh();
  }

  function renderDevice(d) {
    const state = d.revoked_at === null ? (d.id === device.id ? 'this browser' : 'active') : `revoked ${d.revoked_at}`;
    const item = el('li', { 'data-device-id': d.id }, [el('span', { class: 'device', text: `${d.name} (${d.id}) paired ${d.paired_at} — ${state}` })]);
    if (d.revoked_at === null) {
      const b = el('button', { class: 'deny', 'data-action': 'revoke', text: 'Revoke' });
      b.addEventListener('click', () => void revoke(d));
      item.appendChild(b);
    }
    return item;
  }

  function render(s) {
    offset = Date.parse(s.now) - Date.now();
    $('who').textContent = `device ${s.device.name} (${s.device.id})`;
    $('run').textContent = `run ${s.run_fingerprint}`;
    $('pending-count').textContent = `(${s.cards.length})`;
    $('cards').replaceChildren(...(s.cards.length === 0 ? [el('p', { class: 'empty', text: 'nothing waits for approval' })] : s.cards.map(renderCard)));
    $('devices').replaceChildren(...s.devices.map(renderDevice));
    $('activity').tBodies[0].replaceChildren(...s.activity.map((a) => el('tr', {}, [a.at, a.tool, a.status, a.decision, a.error_code].map((t) => el('td', { text: t })))));
    $('app').setAttribute('data-ready', 'yes');
    tick();
  }

  function showPairing(message) {
    $('app').hidden = true;
    $('pair').hidden = false;
    if (message) say(message, 'DEVICE_UNPAIRED');
  }

  /** Fetches the state and shows it; true when it was shown. */
  async function refresh() {
    if (busy) {
      again = true;
      return false;
    }
    busy = true;
    try {
      const r = await device.send('GET', '/api/state');
      if (r.status === 401 && r.json.error && r.json.error.code === 'DEVICE_UNPAIRED') {
        showPairing(`${r.json.error.code}: ${r.json.error.message}`);
        return false;
      }
      if (r.status !== 200) {
        say(r.json.error ? `${r.json.error.code}: ${r.json.error.message}` : `refused (${r.status})`, r.json.error ? r.json.error.code : 'ERROR');
        return false;
      }
      $('pair').hidden = true;
      $('app').hidden = false;
      render(r.json);
      return true;
    } catch {
      return false; // device.js stopped the page and said why; nothing is retried.
    } finally {
      busy = false;
      if (again) {
        again = false;
        void refresh();
      }
    }
  }

  // The daemon's "changed" pings; when the stream ends, device.js stops the page (no retry).
  function listen() {
    device.listen(() => void refresh()).catch(() => undefined);
    $('conn').textContent = 'live';
  }

  async function start() {
    try {
      const o = await open();
      if (o.unpaired) {
        showPairing('this browser is not paired: pair it with `postern approvals pair`');
        return;
      }
      device = o.device;
      if (await refresh()) listen();
    } catch {
      // stopped: the message is on the page
    }
  }

  whenStopped((e) => {
    say(e.message, e.code);
    $('conn').textContent = 'stopped';
    $('app').hidden = true;
    $('pair').hidden = true;
    document.body.setAttribute('data-stopped', e.code);
  });

  $('pair-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void (async () => {
      let r;
      try {
        r = await pair($('pair-code').value, $('pair-code').getAttribute('data-key') || '');
      } catch {
        return; // stopped: the message is on the page
      }
      if (r.error) {
        say(`${r.error.code}: ${r.error.message}`, r.error.code);
        return;
      }
      device = r.device;
      history.replaceState(null, '', '/');
      say(`paired as ${device.name}`, '');
      if (await refresh()) listen();
    })();
  });

  // A pairing link carries its code in the fragment (never sent to the daemon in a URL).
  function codeFromLink() {
    const m = /^#pair=([A-Za-z0-9-]{1,32})(?:&key=([A-Z0-9]{4}-[A-Z0-9]{4}))?$/.exec(location.hash);
    if (m) {
      $('pair-code').value = m[1];
      $('pair-code').setAttribute('data-key', m[2] || '');
    }
  }
  window.addEventListener('hashchange', codeFromLink);
  codeFromLink();
  setInterval(tick, 1000);
  void start();
}
