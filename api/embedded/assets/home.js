// The partner page (greeting, top up, pay): takes the used session id out of the address, and
// sends each form once. Served by page-assets.ts.
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
      if (button) setTimeout(() => { button.disabled = true; }, 0);
    });
  });
})();
