// A withdrawal's or deposit's progress page: until the outcome is final, polls the page's status URL
// (data-status-url, JSON) and shows each answer's title, message and tone. Served by
// page-assets.ts; the page's <noscript> refresh covers browsers without script.
(function () {
  'use strict';

  const card = document.getElementById('progress');
  if (!card || card.getAttribute('data-state') === 'final') return;
  const statusUrl = card.getAttribute('data-status-url');
  const maxPolls = 300;
  let polls = 0;

  function show(status) {
    document.getElementById('title').textContent = status.title;
    document.getElementById('message').textContent = status.message;
    document.title = status.title;
    card.className = 'card ' + status.tone + (status.final ? ' final' : '');
    card.setAttribute('data-state', status.final ? 'final' : 'pending');
  }

  function tick() {
    fetch(statusUrl, { credentials: 'same-origin', cache: 'no-store' })
      .then((response) => {
        if (!response.ok) throw new Error('status ' + response.status);
        return response.json();
      })
      .then((status) => {
        show(status);
        // Every second for half a minute, then every three seconds.
        if (!status.final && ++polls < maxPolls) setTimeout(tick, polls < 30 ? 1000 : 3000);
      })
      .catch(() => {
        if (++polls < maxPolls) setTimeout(tick, 3000);
      });
  }

  setTimeout(tick, 600);
})();
