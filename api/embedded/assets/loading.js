// The loading page (onboarding still running): takes the used session id out of the address, then
// polls /app/status and reloads the page when onboarding has ended (the server then shows the
// partner page or the failure page). Served by page-assets.ts; the page's <noscript> refresh covers
// browsers without script.
(function () {
  'use strict';

  // A reload or a later navigation must ask for /app (the web session's cookie), never for the
  // used session id again (that would be 410).
  if (location.search) history.replaceState(null, '', location.pathname);

  const maxPolls = 120;
  let polls = 0;

  function tick() {
    fetch('/app/status', { credentials: 'same-origin', cache: 'no-store' })
      .then((response) => response.json())
      .then((status) => {
        if (status.state !== 'pending') {
          location.reload();
          return;
        }
        if (++polls < maxPolls) setTimeout(tick, 1000);
      })
      .catch(() => {
        if (++polls < maxPolls) setTimeout(tick, 2000);
      });
  }

  setTimeout(tick, 700);
})();
