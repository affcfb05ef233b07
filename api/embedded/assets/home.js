// The user's money page (balance, withdraw, deposit, recent activity): takes the used session id
// out of the address, sends each form once, and keeps the recent list's states live by polling
// /app/activity while any item is still under way. Served by page-assets.ts.
(function () {
  'use strict';

  // A reload or a later navigation must ask for /app (the web session's cookie), never for the
  // used session id again (that would be 410).
  if (location.search) history.replaceState(null, '', location.pathname);

  // One submit per form: a double tap sends one request (the form key makes a repeat harmless
  // anyway). The button is disabled after this submit has gone, not before (a disabled button
  // would stop it).
  document.querySelectorAll('form').forEach((form) => {
    form.addEventListener('submit', () => {
      const button = form.querySelector('button');
      if (button)
        setTimeout(() => {
          button.disabled = true;
        }, 0);
    });
  });

  // The same words as landing-pages.ts statusInWords.
  function words(status) {
    if (status === 'APPROVED' || status === 'SUCCEEDED') return ['Done', 'done'];
    if (status === 'DECLINED') return ['Declined', 'refused'];
    if (status === 'REJECTED' || status === 'FAILED') return ['Not done', 'refused'];
    if (status === 'NEEDS_REVIEW') return ['Being checked', 'working'];
    return ['In progress', 'working'];
  }

  const list = document.getElementById('activity-list');
  const available = document.getElementById('available');
  if (!list) return;
  const underWay = () => list.querySelector('li[data-final="false"]') !== null;
  let polls = 0;

  function tick() {
    fetch('/app/activity', { credentials: 'same-origin', cache: 'no-store' })
      .then((response) => {
        if (!response.ok) throw new Error('status ' + response.status);
        return response.json();
      })
      .then((activity) => {
        if (available) available.textContent = 'PHP ' + activity.available;
        activity.items.forEach((item) => {
          const row = list.querySelector('li[data-id="' + item.id + '"]');
          if (!row) return;
          const state = row.querySelector('.state');
          const [text, tone] = words(item.status);
          state.textContent = text;
          state.className = 'state ' + tone;
          row.setAttribute('data-final', item.final ? 'true' : 'false');
        });
        if (underWay() && ++polls < 120) setTimeout(tick, 2000);
      })
      .catch(() => {
        if (++polls < 120) setTimeout(tick, 4000);
      });
  }

  if (underWay()) setTimeout(tick, 1500);
})();
