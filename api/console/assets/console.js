// The ops console's one script (api/console/console-layout.ts), loaded with the page's CSP nonce:
// copy buttons, pushed updates of live regions (Server-Sent Events: the server renders the HTML),
// a drop zone for the batch file, and a confirmation before an irreversible act. Every page works
// without it; it only adds.
/* global window */
(function () {
  'use strict';
  const status = document.getElementById('console-status');
  const say = (text) => {
    if (status) status.textContent = text;
  };

  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
    if (!button) return;
    event.preventDefault();
    const value = button.getAttribute('data-copy') || '';
    navigator.clipboard?.writeText(value).then(
      () => say('Copied'),
      () => say('Could not copy'),
    );
  });

  document.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    const question = form.getAttribute('data-confirm');
    if (question && !window.confirm(question)) event.preventDefault();
  });

  // Why a live region stopped, as the page says it (the server's `end` event, or a stream refused).
  const stopped = {
    'signed-out': 'Your session has ended: this page no longer updates.',
    replaced:
      'This page no longer updates: your session is following too many pages at once. Reload it to follow it again.',
    refused: 'This page no longer updates. Reload it to see the latest.',
  };
  const sayStopped = (why) => {
    const main = document.getElementById('main');
    if (!main || document.getElementById('live-stopped')) return;
    const box = document.createElement('div');
    box.id = 'live-stopped';
    box.className = 'notice error';
    box.setAttribute('role', 'alert');
    box.textContent = `${stopped[why]} `;
    if (why === 'signed-out') {
      const link = document.createElement('a');
      link.href = `/console/sign-in?return=${encodeURIComponent(window.location.pathname + window.location.search)}`;
      link.textContent = 'Sign in again';
      box.append(link);
    }
    const title = main.querySelector('h1');
    if (title) title.after(box);
    else main.prepend(box);
  };

  for (const region of document.querySelectorAll('[data-live]')) {
    const source = new EventSource(region.getAttribute('data-live'));
    source.addEventListener('message', (event) => {
      region.innerHTML = event.data;
      region.setAttribute('data-updated', String(Date.now()));
    });
    source.addEventListener('end', (event) => {
      source.close();
      if (Object.hasOwn(stopped, event.data)) sayStopped(event.data);
    });
    // A stream the server refused (its scope, too many at once) is not tried again by the browser.
    source.addEventListener('error', () => {
      if (source.readyState === EventSource.CLOSED) sayStopped('refused');
    });
  }

  for (const zone of document.querySelectorAll('.drop')) {
    const input = zone.querySelector('input[type=file]');
    if (!input) continue;
    zone.addEventListener('dragover', (event) => {
      event.preventDefault();
      zone.classList.add('over');
    });
    zone.addEventListener('dragleave', () => zone.classList.remove('over'));
    zone.addEventListener('drop', (event) => {
      event.preventDefault();
      zone.classList.remove('over');
      if (event.dataTransfer?.files?.length) {
        input.files = event.dataTransfer.files;
        say(`${event.dataTransfer.files[0].name} chosen`);
      }
    });
  }
})();
