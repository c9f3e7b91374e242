// The console's only script, served from the server itself (no inline script:
// the Content-Security-Policy forbids it). Every page works without it; it
// adds the New … buttons' toggling, key creation without a reload, Copy, the
// live view, and the Item outcomes' counts refreshed while the page is open.
'use strict';

function setUpOpeners() {
  for (const button of document.querySelectorAll('button.opener')) {
    const target = document.getElementById(button.getAttribute('aria-controls'));
    if (!target) continue;
    // A form sent back with an error beside a field stays open.
    const startOpen = button.hasAttribute('data-open');
    target.hidden = !startOpen;
    button.setAttribute('aria-expanded', String(startOpen));
    button.addEventListener('click', () => {
      const open = target.hidden;
      target.hidden = !open;
      button.setAttribute('aria-expanded', String(open));
      if (open) target.querySelector('input:not([type=hidden]), select')?.focus();
    });
  }
}

async function refreshKeys() {
  const res = await fetch(location.href, { credentials: 'same-origin' });
  if (!res.ok) return;
  const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
  const fresh = doc.getElementById('keys-list');
  const old = document.getElementById('keys-list');
  if (fresh && old) {
    old.replaceWith(fresh);
    setUpKeyForms(fresh);
  }
}

function showKey(key, note) {
  const box = document.getElementById('new-key-box');
  const field = document.getElementById('new-key');
  field.value = key;
  document.getElementById('new-key-note').textContent = note;
  box.hidden = false;
  field.focus();
  field.select();
}

function setUpKeyForms(root) {
  for (const form of root.querySelectorAll('form[data-key-form]')) {
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const res = await fetch(form.action, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { Accept: 'application/json', 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(new FormData(form)),
      });
      const body = await res.json().catch(() => ({ error: 'The server did not answer as expected; reload the page.' }));
      if (res.ok) {
        showKey(body.key, 'Store it now: it is not shown again.');
        await refreshKeys();
      } else {
        const box = document.getElementById('new-key-box');
        box.hidden = false;
        document.getElementById('new-key').value = '';
        document.getElementById('new-key-note').textContent = body.error;
      }
    });
  }
}

function setUpCopy() {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.addEventListener('click', async () => {
      const field = document.getElementById(button.dataset.copy);
      const note = document.getElementById('new-key-note');
      try {
        await navigator.clipboard.writeText(field.value);
      } catch {
        // Clipboard access needs https (or localhost); selecting lets the user copy by hand.
        field.select();
        note.textContent = 'Selected: press Ctrl+C (or ⌘C) to copy.';
        return;
      }
      note.textContent = 'Copied. It is not shown again.';
    });
  }
}

const LIVE_LINES_KEPT = 300;

function setUpLive() {
  const list = document.getElementById('live');
  if (!list || !window.EventSource) return;
  const status = document.getElementById('live-status');
  const url = list.dataset.live;
  const connect = () => {
    const source = new EventSource(url);
    source.addEventListener('open', () => {
      status.textContent = 'Listening: requests appear here as they are answered.';
    });
    source.addEventListener('error', () => {
      // Still CONNECTING: the browser retries by itself. CLOSED: the server refused the view; ask why.
      if (source.readyState !== EventSource.CLOSED) {
        status.textContent = 'Connection lost; reconnecting…';
        return;
      }
      void explainRefusal(connect);
    });
    source.addEventListener('request', (event) => {
      // The server renders and escapes the lines; they are inserted as sent.
      list.insertAdjacentHTML('afterbegin', JSON.parse(event.data));
      while (list.children.length > LIVE_LINES_KEPT) list.lastElementChild.remove();
    });
  };

  // A refused view (429: too many open) says so in a short text, and is tried again after Retry-After.
  async function explainRefusal(retry) {
    const controller = new AbortController();
    let res;
    try {
      res = await fetch(url, { credentials: 'same-origin', signal: controller.signal });
    } catch {
      status.textContent = 'Connection lost; reload the page to listen again.';
      return;
    }
    if (res.status === 429) {
      status.textContent = await res.text();
      setTimeout(retry, Number(res.headers.get('Retry-After') || 10) * 1000);
    } else if (res.redirected && new URL(res.url).pathname.endsWith('/login')) {
      status.textContent = 'Your session has ended: sign in again to listen.';
    } else if (res.ok) {
      // Room again: this answer is itself a stream, which the EventSource below replaces.
      controller.abort();
      retry();
    } else {
      status.textContent = 'Live view stopped; reload the page to listen again.';
    }
  }

  connect();
}

// Item outcomes' counts, asked for again every few seconds while the page is shown.
const OUTCOMES_EVERY_MS = 5000;

function setUpOutcomes() {
  const first = document.getElementById('outcomes');
  if (!first || !first.dataset.refresh) return;
  const url = first.dataset.refresh;
  const refresh = async () => {
    if (document.visibilityState !== 'visible') return true;
    let res;
    try {
      res = await fetch(url, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    } catch {
      return true;
    }
    // The session ended (the answer is the sign-in page): stop asking.
    if (res.redirected || !(res.headers.get('Content-Type') || '').startsWith('application/json')) return false;
    if (!res.ok) return true;
    const parts = await res.json();
    // Looked up each time: a refresh may have replaced the section.
    const section = document.getElementById('outcomes');
    // The server renders and escapes these parts; they are inserted as sent.
    document.getElementById('outcome-totals').outerHTML = parts.totals;
    document.getElementById('outcome-chart').innerHTML = parts.chart;
    const rows = new Map();
    for (const row of section.querySelectorAll('tr[data-code]')) rows.set(`${row.dataset.outcome}\n${row.dataset.code}`, row);
    let unseen = false;
    for (const c of parts.codes) {
      const row = rows.get(`${c.outcome}\n${c.code}`);
      if (row) row.querySelector('td[data-label="Items"]').textContent = c.count;
      else unseen = true;
    }
    // A code not shown yet comes with its kept item: the section is read again whole, this once.
    if (unseen) await replaceSection(section);
    return true;
  };
  const next = () => setTimeout(async () => {
    if (await refresh()) next();
  }, OUTCOMES_EVERY_MS);
  next();
}

async function replaceSection(section) {
  const res = await fetch(location.href, { credentials: 'same-origin' });
  if (!res.ok) return;
  const fresh = new DOMParser().parseFromString(await res.text(), 'text/html').getElementById('outcomes');
  const open = new Set([...section.querySelectorAll('tr[data-code]')].filter((r) => r.querySelector('details[open]')).map((r) => r.dataset.code));
  if (!fresh) return;
  for (const row of fresh.querySelectorAll('tr[data-code]')) if (open.has(row.dataset.code)) row.querySelector('details')?.setAttribute('open', '');
  section.replaceWith(document.adoptNode(fresh));
}

document.addEventListener('DOMContentLoaded', () => {
  setUpOpeners();
  setUpOutcomes();
  setUpKeyForms(document);
  setUpCopy();
  setUpLive();
});
