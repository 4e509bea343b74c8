// The approval page's script (served by the daemon, same origin, no inline code; an ES module).
// Every string the daemon sends is already escaped by Postern's terminal-text rules;
// this script only ever places it with textContent, never as markup. The device, the daemon's
// proof of itself and every request that uses the device are device.js's.
import { open, pair, Stopped, whenStopped } from './device.js';
import { assertPresence, createPasskey, supported } from './presence.js';

{
  const $ = (id) => document.getElementById(id);
  let device = null;
  let offset = 0;
  let busy = false;
  let again = false;
  // What the daemon says of passkeys at this address: {available, why, passkeys} (state.presence).
  let presence = { available: false, why: null, passkeys: [] };

  // Why a card that needs presence cannot be approved here now (null: it can, with the passkey).
  function presenceWhy(card) {
    if (card.presence !== 'required') return null;
    if (!presence.available) return `this tool needs presence (a passkey): ${presence.why || 'passkeys are not available here'}`;
    if (!supported()) return 'this tool needs presence (a passkey), and this browser has no WebAuthn: approve in the TUI';
    if (presence.passkeys.length === 0) return 'this tool needs presence: add a passkey for this device (Paired devices, below) or approve in the TUI';
    return null;
  }

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
    // Said only when it is so: a card the seen rule holds has had every part of it on screen.
    if (verdict === 'approve' && card.needs_seen && seenSet(card).size >= chunkCount(card)) body.seen = { presentation: card.presentation };
    else body.reason = reason === '' ? null : reason;
    if (verdict === 'approve' && card.presence === 'required') {
      try {
        body.presence = await assertPresence(card.presence_challenge, presence.passkeys);
      } catch (e) {
        say(`no passkey assertion (${e && e.name ? e.name : 'failed'}): nothing was approved`, 'PRESENCE_REQUIRED');
        return;
      }
    }
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

  // The seen rule (src/protocol/operator/presentation.ts), as the page keeps it: a card larger than one
  // view is cut into chunks; a chunk counts once it has been wholly inside the viewport above the
  // sticky decision bar; approval is offered once every chunk of every row has counted. Kept per
  // presentation digest, so a re-render never forgets what was seen, and another card starts afresh.
  const CHUNK = 240;
  const FOLD = 480;
  const seenChunks = new Map();
  const expanded = new Set();
  let observer = null;

  function chunksOf(value) {
    const cps = Array.from(value);
    const out = [];
    for (let i = 0; i < cps.length; i += CHUNK) out.push(cps.slice(i, i + CHUNK).join(''));
    return out.length === 0 ? [''] : out;
  }

  function seenSet(card) {
    let s = seenChunks.get(card.presentation);
    if (s === undefined) {
      s = new Set();
      seenChunks.set(card.presentation, s);
    }
    return s;
  }

  function renderRow(card, r, i) {
    const chunks = chunksOf(r.value);
    const folded = card.needs_seen && r.value.length > FOLD && !expanded.has(`${card.presentation}:${i}`);
    const seen = seenSet(card);
    const spans = chunks.map((t, j) => el('span', { class: `chunk${card.needs_seen && !seen.has(`${i}:${j}`) ? ' unseen' : ''}`, text: t, 'data-chunk': `${i}:${j}`, hidden: folded && j >= 2 }));
    const value = el('div', { class: 'value' }, spans);
    const cell = el('div', { class: 'cell' }, [value]);
    if (folded) {
      const rest = Array.from(r.value).length - 2 * CHUNK;
      const more = el('button', { class: 'more', 'data-action': 'show-row', text: `show all (${rest.toLocaleString('en-US')} more characters)` });
      more.addEventListener('click', () => {
        expanded.add(`${card.presentation}:${i}`);
        for (const sp of value.querySelectorAll('.chunk[hidden]')) sp.hidden = false;
        more.remove();
      });
      cell.appendChild(more);
    }
    return el('div', { class: `row ${r.tone}`, 'data-label': r.label }, [el('div', { class: 'label', text: r.label }), cell]);
  }

  function chunkCount(card) {
    return card.rows.reduce((n, r) => n + chunksOf(r.value).length, 0);
  }

  // Enables what the card offers once it has been seen whole, and says how much is left.
  function updateSeen(node, card) {
    if (!card.needs_seen) return;
    const total = chunkCount(card);
    const done = seenSet(card).size;
    const all = done >= total;
    const progress = node.querySelector('.seen-progress');
    progress.textContent = all ? 'every part of this card has been on screen' : `${total - done} of ${total} parts of this card not yet on screen`;
    progress.className = `seen-progress${all ? ' done' : ''}`;
    const ok = all && card.approve.when_seen !== null && presenceWhy(card) === null;
    node.querySelector('[data-action="approve-once"]').disabled = !(ok && card.approve.when_seen.once);
    node.querySelector('[data-action="approve-session"]').disabled = !(ok && card.approve.when_seen.session);
    node.setAttribute('data-seen', all ? 'yes' : 'no');
  }

  function renderCard(card) {
    const head = el('div', { class: 'card-head' }, [el('span', { class: 'tool', text: card.tool }), el('span', { class: 'revision', text: card.revision })]);
    if (card.widens) head.appendChild(el('span', { class: 'badge widens', text: 'WIDENS AUTHORITY' }));
    if (card.presence === 'required') head.appendChild(el('span', { class: 'badge presence', text: 'PASSKEY' }));
    const noPresence = presenceWhy(card);
    if (card.stale !== null) {
      head.appendChild(el('span', { class: 'badge stale', text: 'STALE' }));
      head.appendChild(el('span', { class: 'stale-why', text: card.stale }));
    }
    const rows = el('div', { class: 'rows' }, card.rows.map((r, i) => renderRow(card, r, i)));
    const body = el('div', { class: 'card-body' }, [el('p', { class: 'sentence', text: card.sentence }), head, rows]);
    if (card.needs_seen) body.appendChild(el('p', { class: 'seen-progress' }));
    const reason = el('input', { class: 'reason', placeholder: 'reason (optional)', maxLength: 500 });
    const once = el('button', { class: 'approve', 'data-action': 'approve-once', text: 'Approve once', disabled: !card.approve.once || noPresence !== null });
    const session = el('button', { class: 'approve', 'data-action': 'approve-session', text: 'Approve for session', disabled: !card.approve.session || noPresence !== null });
    const deny = el('button', { class: 'deny', 'data-action': 'deny', text: 'Deny' });
    once.addEventListener('click', () => void decide(card, 'approve', 'once'));
    session.addEventListener('click', () => void decide(card, 'approve', 'session'));
    deny.addEventListener('click', () => void decide(card, 'deny', undefined, reason.value));
    const actions = el('div', { class: 'actions' }, [el('span', { class: 'countdown', 'data-expires': card.expires_at }), once, session, deny]);
    if (card.needs_seen) {
      const all = el('button', { 'data-action': 'show-all', text: 'Show all' });
      all.addEventListener('click', () => {
        card.rows.forEach((_r, i) => expanded.add(`${card.presentation}:${i}`));
        for (const b of node.querySelectorAll('[data-action="show-row"]')) b.click();
      });
      actions.appendChild(all);
    }
    actions.appendChild(reason);
    if (card.approve.why !== null) body.appendChild(el('p', { class: 'why', text: card.approve.why }));
    if (noPresence !== null) body.appendChild(el('p', { class: 'why presence-why', text: noPresence }));
    const node = el('div', { class: `card${card.stale !== null ? ' stale' : ''}${card.widens ? ' widens' : ''}`, 'data-card-id': card.id, 'data-stale': card.stale !== null ? 'yes' : 'no' }, [body, actions]);
    updateSeen(node, card);
    return node;
  }

  // One observer over every chunk of the cards the seen rule holds; the viewport ends above the sticky bar.
  function observeChunks(cards, nodes) {
    if (observer !== null) observer.disconnect();
    observer = null;
    const held = cards.map((c, i) => [c, nodes[i]]).filter(([c]) => c.needs_seen);
    if (held.length === 0) return;
    const bar = Math.max(0, ...held.map(([, n]) => n.querySelector('.actions').getBoundingClientRect().height));
    observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting || e.intersectionRatio < 0.999) continue;
        const node = e.target.closest('[data-card-id]');
        const card = held.find(([c]) => c.id === node.getAttribute('data-card-id'));
        if (card === undefined) continue;
        seenSet(card[0]).add(e.target.getAttribute('data-chunk'));
        e.target.classList.remove('unseen');
        observer.unobserve(e.target);
        updateSeen(card[1], card[0]);
      }
    }, { rootMargin: `0px 0px -${Math.ceil(bar)}px 0px`, threshold: [0, 1] });
    for (const [card, node] of held) {
      const seen = seenSet(card);
      for (const sp of node.querySelectorAll('.chunk')) if (!seen.has(sp.getAttribute('data-chunk'))) observer.observe(sp);
    }
  }

  function renderActivity(list) {
    const head = el('div', { class: 'act-row head' }, ['at', 'tool', 'status', 'decision', 'error'].map((t) => el('span', { text: t })));
    $('activity').replaceChildren(head, ...list.map((a) => el('div', { class: 'act-row' }, [a.at, a.tool, a.status, a.decision, a.error_code].map((t, i) => el('span', { class: ['at', 'tool', 'status', 'decision', 'error'][i], text: t })))));
  }

  // The paired devices and the run fingerprint, when the daemon sends them.
  function renderDevices(s) {
    $('run').textContent = typeof s.run_fingerprint === 'string' ? `run ${s.run_fingerprint}` : '';
    const list = Array.isArray(s.devices) ? s.devices : null;
    $('devices-section').hidden = list === null;
    if (list === null) return;
    $('devices').replaceChildren(...list.map((d) => {
      const revoked = d.revoked_at !== null && d.revoked_at !== undefined;
      const item = el('li', { 'data-device-id': d.id }, [
        el('span', { class: `name${revoked ? ' revoked' : ''}${d.id === s.device.id ? ' this' : ''}`, text: `${d.name}${d.id === s.device.id ? ' (this device)' : ''}` }),
        el('span', { class: 'paired', text: `paired ${d.paired_at}` }),
        el('span', { class: 'passkeys', text: `${d.passkeys || 0} passkey${d.passkeys === 1 ? '' : 's'}` }),
      ]);
      if (d.id === s.device.id && !revoked) {
        if (presence.available && supported()) {
          const add = el('button', { 'data-action': 'add-passkey', text: 'Add a passkey' });
          add.addEventListener('click', () => void addPasskey());
          item.appendChild(add);
        } else item.appendChild(el('span', { class: 'why presence-why', text: presence.why || 'this browser has no WebAuthn' }));
      }
      if (!revoked) {
        const b = el('button', { class: 'deny', 'data-action': 'revoke-device', text: 'Revoke' });
        b.addEventListener('click', () => { if (window.confirm(`Revoke the device ${d.name}? It will have to be paired again.`)) void revoke(d); });
        item.appendChild(b);
      } else item.appendChild(el('span', { class: 'revoked', text: 'revoked' }));
      return item;
    }));
  }

  // Registers a passkey for this device: the daemon's options, the browser's authenticator, the daemon's check.
  async function addPasskey() {
    let r;
    try {
      r = await device.send('POST', '/api/passkey/options', {});
      if (r.status === 200) {
        const response = await createPasskey(r.json.options);
        r = await device.send('POST', '/api/passkey/register', { response });
      }
    } catch (e) {
      if (e instanceof Stopped) return; // stopped: the message is on the page
      say(`no passkey was made (${e && e.name ? e.name : 'failed'})`, 'PRESENCE_INVALID');
      return;
    }
    if (r.status === 200) say(`passkey added for this device`, '');
    else say(r.json.error ? `${r.json.error.code}: ${r.json.error.message}` : `refused (${r.status})`, r.json.error ? r.json.error.code : 'ERROR');
    await refresh();
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

  function render(s) {
    offset = Date.parse(s.now) - Date.now();
    if (s.presence) presence = s.presence;
    $('who').textContent = `device ${s.device.name} (${s.device.id})`;
    $('pending-count').textContent = `(${s.cards.length})`;
    const nodes = s.cards.map(renderCard);
    $('cards').replaceChildren(...(s.cards.length === 0 ? [el('p', { class: 'empty', text: 'nothing waits for approval' })] : nodes));
    renderActivity(s.activity);
    renderDevices(s);
    $('app').setAttribute('data-ready', 'yes');
    tick();
    observeChunks(s.cards, nodes);
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
